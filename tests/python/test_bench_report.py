"""The kernel bench's report files: stable names per GPU (a run replaces the GPU's last result),
a compact JSON (one line per row) that renders again. No GPU, no torch needed."""
import json
import os

from cudadent import bench

ENV = {"date": "2026-11-25 10:00", "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130",
       "cudnn": 91900, "commit": "abc123"}
ROWS = [dict(suite="fa3", B=32, H=32, S=512, D=64, causal=c, dtype="bf16", backend=b,
             direction=d, ms=0.17, tflops=t)
        for c in (False, True) for b, t in (("cudadent", 401.0), ("cudnn", 397.8))
        for d in ("fwd", "fwd_train", "bwd")]


def test_report_stem():
    assert bench.report_stem("NVIDIA H200", bench.parse_args([])) == "nvidia-h200"
    assert bench.report_stem(ENV["gpu"], bench.parse_args([])) == "nvidia-h100-80gb-hbm3"
    assert bench.report_stem("NVIDIA H200", bench.parse_args(["--quick"])) == "nvidia-h200-quick"
    for part in (["--suite", "small"], ["--seqlens", "512"], ["--head-dims", "64"],
                 ["--causal", "yes"], ["--backends", "cudadent,cudnn"], ["--no-flex"]):
        assert bench.report_stem("NVIDIA H200", bench.parse_args(part)) == \
            "nvidia-h200-partial", part
    # the head-dim suite has its own file, so that it never replaces the FA3 suite's
    dims = lambda *a: bench.report_stem("NVIDIA H200", bench.parse_args(["--suite", "dims", *a]))  # noqa: E731
    assert dims() == "nvidia-h200-dims"
    assert dims("--no-flex") == dims("--seqlens", "2048") == "nvidia-h200-dims-partial"
    assert dims("--backends", "cudadent,cudnn") == dims("--causal", "yes") == "nvidia-h200-dims-partial"


def test_write_report_replaces_and_renders(tmp_path):
    args = bench.parse_args(["--no-plot", "--out", str(tmp_path)])
    md, png, text = bench.write_report(ENV, ROWS, args)
    assert md == os.path.join(str(tmp_path), "nvidia-h100-80gb-hbm3.md") and png is None
    bench.write_report(dict(ENV, date="2026-11-26 09:00"), ROWS, args)  # the next run
    assert sorted(os.listdir(str(tmp_path))) == ["nvidia-h100-80gb-hbm3.json",
                                                 "nvidia-h100-80gb-hbm3.md"]
    raw = open(md[:-3] + ".json").read()
    saved = json.loads(raw)
    assert saved["results"] == ROWS and saved["env"]["date"] == "2026-11-26 09:00"
    lines = raw.splitlines()
    assert len(lines) == 3 + len(ROWS) + 1  # env, args, '"results": [', a line a row, ']}'
    assert sum(1 for line in lines if line.startswith('{"suite": ')) == len(ROWS)
    md2, _, text2 = bench.render(md[:-3] + ".json", str(tmp_path / "again"))
    assert os.path.basename(md2) == "nvidia-h100-80gb-hbm3.md"
    assert text2 == open(md).read()


def test_dims_suite_shapes_flops_and_table(tmp_path):
    """--suite dims: issue 27's widths as the FA3 suite (heads = 2048 // head_dim, 16k tokens),
    V's head dim in the FLOPs, its own table with 192/128 written out; not part of "all"."""
    args = bench.parse_args(["--suite", "dims", "--no-plot", "--out", str(tmp_path)])
    cfgs = bench.shapes(args)
    assert {(c["D"], c["Dv"]) for c in cfgs} == {(96, 96), (256, 256), (192, 128)}
    assert len(cfgs) == 3 * 2 * 6
    assert all(c["suite"] == "dims" and c["H"] == 2048 // c["D"] and c["B"] * c["S"] == 16384
               for c in cfgs)
    assert not any(c["suite"] == "dims" for c in bench.shapes(bench.parse_args([])))
    from cudadent.bench_timing import flops
    assert flops(2, 3, 512, 128, False, "fwd") == 4.0 * 2 * 3 * 512 * 512 * 128
    assert flops(2, 3, 512, 192, True, "bwd", 128) == 2.0 * 2 * 3 * 512 * 512 * 320 / 2 * 2.5
    rows = [dict(suite="dims", B=8, H=10, S=2048, D=192, Dv=128, causal=False, dtype="bf16",
                 backend=b, direction=d, ms=1.0, tflops=t)
            for b, t in (("cudadent", 300.0), ("cudnn", 250.0)) for d in ("fwd", "fwd_train", "bwd")]
    md, _, text = bench.write_report(ENV, rows, bench.parse_args(
        ["--suite", "dims", "--no-plot", "--out", str(tmp_path), "--backends", "cudadent,cudnn"]))
    assert os.path.basename(md) == "nvidia-h100-80gb-hbm3-dims-partial.md"
    assert "### Head-dim suite" in text
    assert "| 192/128 | no | 2048 | 8 x 10 | bwd | 300.0 | 250.0 | 1.20 |" in text
