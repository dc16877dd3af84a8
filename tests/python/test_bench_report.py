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
