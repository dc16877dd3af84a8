"""python -m cudadent.bench --train (cudadent.train_bench) and the GQA suite of the kernel bench.

The argument tests need neither torch nor a GPU; the runs need a CUDA GPU, torch and (for
--train) transformers, and skip without them."""
import glob
import json
import math
import os

import pytest

from conftest import HAVE_CUDA

from cudadent import bench, train_bench

requires_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU (torch.cuda.is_available() "
                                                         "is False, or no torch)")
KERNEL_MISSING = ("UnsupportedArchError", "UnsupportedFeatureError", "UnsupportedHeadDimError")


def test_train_arguments():
    full = bench.parse_args(["--train"])
    assert full.train_configs == list(train_bench.FULL)
    assert (full.train_rounds, full.train_steps, full.train_loss_steps) == (8, 3, 100)
    assert full.train_attentions == ["cudadent", "sdpa", "sdpa_flash"]
    assert full.time_limit == train_bench.DEFAULT_TIME_LIMIT
    quick = bench.parse_args(["--train", "--quick"])
    assert quick.train_configs == ["d128-s4k"] and quick.train_rounds == 4
    only_loss = bench.parse_args(["--train", "--train-configs", "none", "--time-limit", "60"])
    assert only_loss.train_configs == [] and only_loss.time_limit == 60
    picked = bench.parse_args(["--train", "--train-configs", "d64-s2k,gqa4-s4k",
                               "--train-attentions", "cudadent,sdpa", "--train-rounds", "2"])
    assert picked.train_configs == ["d64-s2k", "gqa4-s4k"] and picked.train_rounds == 2
    for bad in (["--train-configs", "d512"], ["--train-attentions", "eager"],
                ["--train-rounds", "0"]):
        with pytest.raises(SystemExit):
            bench.parse_args(["--train"] + bad)
    assert bench.parse_args([]).time_limit is None  # the kernel bench keeps its own default


def test_configs_as_issue_25_asks():
    c = train_bench.CONFIGS
    assert c["d128-s4k"] == dict(layers=8, hidden=2048, heads=16, kv_heads=8, head_dim=128,
                                 intermediate=5632, vocab=32000, seqlen=4096, batch=4)
    assert c["d128-s16k"] == dict(c["d128-s4k"], seqlen=16384, batch=1)
    assert (c["d64-s2k"]["head_dim"], c["d64-s2k"]["heads"], c["d64-s2k"]["seqlen"]) == \
        (64, 32, 2048)
    assert c["gqa4-s4k"]["heads"] == 4 * c["gqa4-s4k"]["kv_heads"]
    for cfg in c.values():
        assert cfg["heads"] * cfg["head_dim"] == cfg["hidden"] and \
            cfg["heads"] % cfg["kv_heads"] == 0
    # FLOPs of a step: 6 x tokens x product weights, plus causal attention (sanity of the scale)
    assert 45e12 < train_bench.step_flops(c["d128-s4k"]) < 60e12


def test_gqa_suite_shapes():
    def gqa(argv):
        return [(s["B"], s["H"], s["Hkv"], s["S"], s["D"], s["causal"])
                for s in bench.shapes(bench.parse_args(argv)) if s["suite"] == "gqa"]
    assert gqa([]) == [(4, 32, 8, 4096, 128, True), (2, 32, 8, 8192, 128, True)]
    assert gqa(["--suite", "gqa"]) == gqa([])
    assert gqa(["--quick"]) == []
    assert gqa(["--suite", "gqa", "--seqlens", "8192"]) == [(2, 32, 8, 8192, 128, True)]
    assert all(s["suite"] == "gqa" for s in bench.shapes(bench.parse_args(["--suite", "gqa"])))


@requires_cuda
def test_train_bench_tiny_run(tmp_path):
    """A tiny --train run end to end: rows measured (or the failure reported), the loss curves
    recorded, the report written."""
    pytest.importorskip("transformers", reason="transformers is not installed")
    rc = bench.main(["--train", "--train-configs", "tiny", "--train-loss-config", "tiny",
                     "--train-rounds", "2", "--train-steps", "1", "--train-warmup", "1",
                     "--train-loss-steps", "6", "--out", str(tmp_path)])
    assert rc == 0
    md = glob.glob(os.path.join(str(tmp_path), "*-train-partial.md"))  # tiny: not the full set
    assert len(md) == 1 and os.path.isfile(md[0][:-3] + ".json")
    with open(md[0][:-3] + ".json") as f:
        saved = json.load(f)
    rows = {r["attention"]: r for r in saved["rows"]}
    assert set(rows) == {"cudadent", "sdpa", "sdpa_flash"}
    for name in ("sdpa", "sdpa_flash"):
        r = rows[name]
        assert "error" not in r, r.get("error")
        assert r["tokens_per_s"] > 0 and r["peak_gib"] > 0 and len(r["round_ms"]) == 2
        assert 0 < r["attn_share"] < 1, r
        assert r["attn_kernels"], "no attention kernel found in the profile"
    assert "flash" in rows["sdpa_flash"]["attn_kernels"]
    c = rows["cudadent"]
    if c.get("error_type") in KERNEL_MISSING:
        pytest.skip(f"kernel not built: {c['error']}")
    assert "error" not in c, c["error"]
    assert c["tokens_per_s"] > 0 and c["vs_sdpa"] > 0
    assert set(c["attn_kernels"]) == {"cudadent"}, c["attn_kernels"]
    curves = saved["curves"]
    assert set(curves) == {"cudadent", "sdpa", "sdpa_flash"}
    assert all(len(v) == 6 and all(math.isfinite(x) for x in v) for v in curves.values())
    assert saved["loss"]["agreement"]["passed"] in (True, False)
    assert set(saved["loss"]["kernels"]["cudadent"]) == {"cudadent"}


@requires_cuda
def test_gqa_suite_runs(tmp_path):
    rc = bench.main(["--suite", "gqa", "--seqlens", "4096", "--backends", "cudadent,flash",
                     "--iters", "2", "--rounds", "1", "--warmup", "1", "--no-plot",
                     "--out", str(tmp_path)])
    assert rc == 0
    with open(glob.glob(os.path.join(str(tmp_path), "*.json"))[0]) as f:
        results = json.load(f)["results"]
    assert {(r["H"], r["Hkv"]) for r in results} == {(32, 8)}
    flash = [r for r in results if r["backend"] == "flash"]
    assert flash and all("error" not in r and r["tflops"] > 0 for r in flash)
    ours = [r for r in results if r["backend"] == "cudadent"]
    if any(r.get("error", "").split(":")[0] in KERNEL_MISSING for r in ours):
        pytest.skip("kernel not built")
    assert all("error" not in r and r["tflops"] > 0 for r in ours), ours
    fwd = [r for r in ours if r["direction"] == "fwd"][0]
    assert fwd["max_abs_diff_vs_sdpa"] < 2e-2
