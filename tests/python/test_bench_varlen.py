"""python -m cudadent.bench --suite varlen (issue 28): the document lengths, the FLOPs within
documents, the shapes and backends of the suite, its report (the goals as lines, the documents
listed), and runs.

The generator, FLOP, shape and report tests need neither torch nor a GPU; the document mask and
the plumbing of the rounds need torch (CPU: fake backends and a fake clock); the runs need a CUDA
GPU and skip without one (test_varlen_suite_flex_runs, which compiles FlexAttention, about a
minute, also needs CUDADENT_TEST_FLEX=1)."""
import glob
import json
import math
import os

import pytest

from conftest import HAVE_CUDA, HAVE_TORCH

from cudadent import bench, bench_suites
from cudadent.bench_suites import varlen_doc_lengths
from cudadent.bench_timing import flops, shape_flops, varlen_flops

requires_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU (torch.cuda.is_available() "
                                                         "is False, or no torch)")
requires_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed")
KERNEL_MISSING = ("UnsupportedArchError", "UnsupportedFeatureError", "UnsupportedHeadDimError")
ENV = {"date": "2026-11-27 10:00", "gpu": "NVIDIA H100 80GB HBM3", "torch": "2.11.0+cu130",
       "cudnn": 91900, "commit": "abc123"}


# ---- the document lengths -----------------------------------------------------------------------

def test_doc_lengths_fixed_seed_sum_and_range():
    docs = varlen_doc_lengths()
    assert docs == varlen_doc_lengths() == varlen_doc_lengths(16384, 64, 8192, 28)
    assert sum(docs) == 16384
    assert all(isinstance(n, int) and 1 <= n <= 8192 for n in docs)
    assert all(64 <= n <= 8192 for n in docs[:-1])  # only the last one is cut
    # The suite's list, written out: a change of the generator (or of Python's random) shows here.
    assert docs == (111, 121, 1161, 152, 122, 608, 485, 180, 428, 3811, 121, 159, 73, 205, 101,
                    7607, 294, 645)
    assert varlen_doc_lengths(seed=29) != docs


def test_doc_lengths_last_cut_and_small_totals():
    assert varlen_doc_lengths(total=1) == (1,)
    for total in (63, 64, 65, 1000, 8193, 20000):
        docs = varlen_doc_lengths(total=total, seed=5)
        assert sum(docs) == total and all(1 <= n <= 8192 for n in docs)


def test_doc_lengths_are_log_uniform():
    """Many draws: log-length uniform on [log 64, log 8192], so the geometric midpoint
    sqrt(64 * 8192) = 724 splits them in half and each octave of the 7 holds about 1/7."""
    docs = varlen_doc_lengths(total=10_000_000, seed=1)[:-1]
    n = len(docs)
    assert n > 4000
    below = sum(1 for d in docs if d < math.sqrt(64 * 8192)) / n
    assert abs(below - 0.5) < 0.03, below
    for octave in range(7):
        lo, hi = 64 * 2 ** octave, 64 * 2 ** (octave + 1)
        share = sum(1 for d in docs if lo <= d < hi) / n
        assert abs(share - 1 / 7) < 0.03, (lo, share)
    mean_log = sum(math.log(d) for d in docs) / n
    assert abs(mean_log - (math.log(64) + math.log(8192)) / 2) < 0.05


# ---- FLOPs ---------------------------------------------------------------------------------------

def test_varlen_flops_hand_computed():
    # documents of 3 and 5 tokens, 2 heads, head_dim 4, causal: per document 4 H L^2 D / 2
    # = 2 * 2 * 4 * L^2 = 16 L^2; 16 * (9 + 25) = 544 forward, 2.5x backward.
    assert varlen_flops((3, 5), 2, 4, True, "fwd_train") == 544.0
    assert varlen_flops((3, 5), 2, 4, True, "bwd") == 1360.0
    assert varlen_flops((3, 5), 2, 4, False, "fwd") == 1088.0
    # one document is the dense count of batch 1; never the count of the whole packed row
    assert varlen_flops((8,), 2, 4, True, "fwd") == flops(1, 2, 8, 4, True, "fwd")
    assert varlen_flops((3, 5), 2, 4, True, "fwd") < flops(1, 2, 8, 4, True, "fwd")
    row = dict(B=1, H=2, S=8, D=4, causal=True, docs=[3, 5])
    assert shape_flops(row, "bwd") == 1360.0
    assert shape_flops(dict(row, docs=None), "fwd") == flops(1, 2, 8, 4, True, "fwd")


# ---- shapes and backends -------------------------------------------------------------------------

def test_varlen_suite_shapes_and_backends():
    args = bench.parse_args(["--suite", "varlen"])
    assert args.backends == ["cudadent", "cudnn", "flash", "efficient", "flex", "flash_attn"]
    packed, dense = bench.shapes(args)
    assert packed == dict(suite="varlen", B=1, H=16, S=16384, D=128, causal=True, dtype="bf16",
                          docs=varlen_doc_lengths())
    assert dense == dict(suite="varlen", B=8, H=16, S=2048, D=128, causal=True, dtype="bf16")
    assert bench_suites.DIRECTIONS["varlen"] == ("fwd_train", "bwd")
    # packed: no SDPA (no varlen form); dense: no flex, no flash_attn
    assert bench.backends_for(packed, args) == ["cudadent", "flex", "flash_attn"]
    assert bench.backends_for(dense, args) == ["cudadent", "cudnn", "flash", "efficient"]
    lead = bench.parse_args(["--suite", "varlen", "--backends", "cudadent,flex", "--rounds", "3"])
    assert bench.backends_for(packed, lead) == ["cudadent", "flex"]
    assert bench.backends_for(dense, lead) == ["cudadent"]
    no_flex = bench.parse_args(["--suite", "varlen", "--no-flex"])
    assert "flex" not in bench.backends_for(packed, no_flex)
    # not in the other suites, and flash_attn is only a varlen backend
    assert not any(c["suite"] == "varlen" for c in bench.shapes(bench.parse_args([])))
    assert bench.parse_args([]).backends == list(bench_suites.BACKENDS)
    fa3 = bench.parse_args(["--suite", "fa3", "--backends", "cudadent,flash_attn"])
    assert all(bench.backends_for(c, fa3) == ["cudadent"] for c in bench.shapes(fa3))
    with pytest.raises(SystemExit):
        bench.parse_args(["--suite", "varlen", "--backends", "cudadent,sdpa"])


def test_varlen_report_stem():
    stem = lambda argv: bench.report_stem("NVIDIA H200", bench.parse_args(argv))  # noqa: E731
    assert stem(["--suite", "varlen"]) == "nvidia-h200-varlen"
    assert stem(["--suite", "varlen", "--backends", "cudadent,flex"]) == "nvidia-h200-varlen"
    assert stem(["--suite", "varlen", "--backends", "cudadent"]) == "nvidia-h200-varlen-partial"
    assert stem(["--suite", "varlen", "--no-flex"]) == "nvidia-h200-varlen-partial"
    assert stem(["--suite", "varlen", "--quick"]) == "nvidia-h200-varlen-quick"


# ---- the report ------------------------------------------------------------------------------------

def _row(docs, B, S, backend, direction, ms, **extra):
    r = dict(suite="varlen", B=B, H=16, S=S, D=128, causal=True, dtype="bf16")
    if docs:
        r["docs"] = list(docs)
    r.update(backend=backend, direction=direction, **extra)
    if ms is not None:
        r["ms"] = ms
        r["tflops"] = shape_flops(r, direction) / (ms * 1e-3) / 1e12
    return r


def _fake_rows(flex_ms=(2.0, 5.0)):
    docs = varlen_doc_lengths()
    rows = [_row(docs, 1, 16384, "flex", "fwd_train", flex_ms[0]),
            _row(docs, 1, 16384, "flex", "bwd", flex_ms[1]),
            _row(docs, 1, 16384, "flash_attn", "fwd_train", None,
                 error="ModuleNotFoundError: No module named 'flash_attn'"),
            _row(docs, 1, 16384, "flash_attn", "bwd", None,
                 error="ModuleNotFoundError: No module named 'flash_attn'"),
            _row(docs, 1, 16384, "cudadent", "fwd_train", 1.0),
            _row(docs, 1, 16384, "cudadent", "bwd", 2.0, max_abs_diff_vs_sdpa=3.9e-3,
                 diff_vs="flex"),
            _row(None, 8, 2048, "cudadent", "fwd_train", 0.5),
            _row(None, 8, 2048, "cudadent", "bwd", 1.2)]
    return docs, rows


def test_varlen_report_goals_and_documents(tmp_path):
    docs, rows = _fake_rows()
    args = bench.parse_args(["--suite", "varlen", "--no-plot", "--out", str(tmp_path)])
    md, png, text = bench.write_report(dict(ENV, varlen_seed=28), rows, args)
    assert os.path.basename(md) == "nvidia-h100-80gb-hbm3-varlen.md" and png is None
    assert "### Varlen suite (issue 28)" in text
    f = varlen_flops(docs, 16, 128, True, "fwd") * 3.5  # forward + 2.5x backward
    tf_c, tf_flex = f / 3e-3 / 1e12, f / 7e-3 / 1e12
    fd = flops(8, 16, 2048, 128, True, "fwd") * 3.5
    tf_dense = fd / 1.7e-3 / 1e12
    assert f"| packed 16384 tokens, {len(docs)} docs | fwd+bwd | {tf_c:.1f} (3.000) |" in text
    assert f"| {tf_flex:.1f} (7.000) | n/a |" in text  # flex, then flash_attn n/a
    assert f"| dense 8 x 2048 | fwd+bwd | {tf_dense:.1f} (1.700) |" in text
    assert "3.90e-03 vs flex" in text
    ratio_flex, ratio_dense = tf_c / tf_flex, tf_c / tf_dense
    assert ratio_flex == pytest.approx(7 / 3)
    assert (f"cudadent packed / FlexAttention packed (document block mask): {tf_c:.1f} / "
            f"{tf_flex:.1f} = **{ratio_flex:.2f}** (goal >= 1.5): **met**") in text
    assert (f"cudadent packed / cudadent dense causal 8 x 2048: {tf_c:.1f} / {tf_dense:.1f} = "
            f"**{ratio_dense:.2f}** (goal >= 0.85): "
            f"**{'met' if ratio_dense >= 0.85 else 'not met'}**") in text
    assert ("Documents of the packed batch (18, seed 28: lengths drawn log-uniformly from 64 to "
            "8192, the last cut so that they sum to 16384; bench_suites.varlen_doc_lengths): "
            + ", ".join(map(str, docs)) + ".") in text
    assert "- **flash_attn** (2 runs: varlen packed B1 H16 S16384 D128 causal fwd_train;" in text
    assert "- One process, one GPU. The packed batch: (1, total, heads, head_dim)" in text
    assert "6 rounds of 5 calls" in text and "FA3 and GQA suites" not in text  # its own method
    assert "ran (--time-limit" not in text
    # the .json renders again to the same text
    md2, _, text2 = bench.render(md[:-3] + ".json", str(tmp_path / "again"))
    assert text2 == text and os.path.basename(md2) == os.path.basename(md)
    assert json.load(open(md[:-3] + ".json"))["results"] == rows


def test_varlen_report_goal_not_met_and_not_measured(tmp_path):
    _, rows = _fake_rows(flex_ms=(1.5, 3.0))  # flex 4.5 ms against cudadent's 3.0: 1.5x is met
    args = bench.parse_args(["--suite", "varlen", "--no-plot", "--out", str(tmp_path)])
    text = bench.write_report(ENV, rows, args)[2]
    assert "= **1.50** (goal >= 1.5): **met**" in text
    _, rows = _fake_rows(flex_ms=(1.4, 3.0))
    text = bench.write_report(ENV, rows, args)[2]
    assert "= **1.47** (goal >= 1.5): **not met**" in text
    no_flex = [r for r in rows if r["backend"] != "flex"]
    no_flex[-1]["rounds"] = no_flex[-2]["rounds"] = 2
    text = bench.write_report(ENV, no_flex, args)[2]
    assert "Only 2 rounds ran (--time-limit reached) for: cudadent dense." in text
    assert ("- cudadent packed / FlexAttention packed (document block mask): not measured (a side "
            "is n/a or was not run); goal >= 1.5") in text


# ---- torch on the CPU: the document mask, and the rounds with fake backends and clock -------------

@requires_torch
def test_document_mask_mod_is_causal_within_documents():
    import torch
    from cudadent.bench_backends import cu_seqlens, document_ids, document_mask_mod
    docs = (3, 1, 4)
    assert cu_seqlens(docs, "cpu").tolist() == [0, 3, 4, 8]
    assert cu_seqlens(docs, "cpu").dtype == torch.int32
    doc_id = document_ids(docs, "cpu")
    assert doc_id.tolist() == [0, 0, 0, 1, 2, 2, 2, 2]
    qi, ki = torch.arange(8)[:, None], torch.arange(8)[None, :]
    want = torch.zeros(8, 8, dtype=torch.bool)
    for start, n in ((0, 3), (3, 1), (4, 4)):
        for i in range(n):
            want[start + i, start:start + i + 1] = True
    assert torch.equal(document_mask_mod(doc_id, True)(0, 0, qi, ki), want)
    full = document_mask_mod(doc_id, False)(0, 0, qi, ki)
    assert torch.equal(full, doc_id[:, None] == doc_id[None, :])


@requires_torch
def test_document_block_mask_flex_matches_per_document_attention():
    """The flex backend's mask, on the CPU in eager mode: flex_attention with the document block
    mask equals causal attention run on each document alone."""
    import torch
    import torch.nn.functional as F
    try:
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    except ImportError:
        pytest.skip("no torch.nn.attention.flex_attention")
    from cudadent.bench_backends import document_ids, document_mask_mod
    docs = (100, 37, 119)  # 256 tokens: two blocks of 128, documents across a block boundary
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 256, 16, generator=g) for _ in range(3))
    mask = create_block_mask(document_mask_mod(document_ids(docs, "cpu"), True), None, None, 256,
                             256, device="cpu")
    try:
        out = flex_attention(q, k, v, block_mask=mask)
    except Exception as e:  # a torch whose eager flex does not run on the CPU
        pytest.skip(f"flex_attention on the CPU: {type(e).__name__}: {e}")
    start = 0
    for n in docs:
        sl = slice(start, start + n)
        ref = F.scaled_dot_product_attention(q[:, :, sl], k[:, :, sl], v[:, :, sl],
                                             is_causal=True)
        assert torch.allclose(out[:, :, sl], ref, atol=1e-5), n
        start += n


@requires_torch
def test_varlen_rounds_plumbing_with_fake_backends(monkeypatch):
    """measure_varlen without a GPU: fake backends (tiny CPU tensors), fake timings (each backend
    takes a fixed time a call). Every (shape, backend, direction) is timed in every round, flex
    is prepared last, TFLOP/s use the FLOPs within documents; past --time-limit flex is skipped
    and no further round starts."""
    import contextlib
    import torch
    ms_of = {"cudadent": 1.0, "flex": 3.0, "cudnn": 0.5}
    prepared = []

    def fake_forward(backend, q, k, v, *rest):
        prepared.append(backend)
        if backend == "flash_attn":
            raise ModuleNotFoundError("No module named 'flash_attn'")

        def fwd():
            return q * 2 + k + v
        return fwd, contextlib.nullcontext(), (q, k, v), (lambda o: o)

    current = []

    @contextlib.contextmanager
    def fake_ctx(backend):  # what _time_in_rounds times each call under: the backend timed
        current.append(backend)
        yield
        current.pop()

    def fake_samples(call, n):
        for _ in range(n):
            call()
        return [ms_of[current[-1]]] * n

    def fake_inputs(cfg):
        return tuple(torch.randn(1, 4, 2, 8, requires_grad=True) for _ in range(3))

    monkeypatch.setattr(bench, "make_varlen_forward", fake_forward)
    monkeypatch.setattr(bench, "make_forward", lambda b, q, k, v, c, layout: fake_forward(b, q,
                                                                                           k, v))
    monkeypatch.setattr(bench, "_shape_inputs", fake_inputs)
    monkeypatch.setattr(bench, "time_event_samples", fake_samples)
    monkeypatch.setattr(bench, "_backend_ctx", fake_ctx)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)

    args = bench.parse_args(["--suite", "varlen", "--backends", "cudadent,cudnn,flex,flash_attn",
                             "--rounds", "3", "--iters", "6", "--warmup", "1"])
    cfgs = bench.shapes(args)
    import time
    results = bench.measure_varlen(cfgs, args, None, time.time())
    assert prepared[-2:] == ["flex", "flex"]  # fwd_train, bwd: after everything else
    by = {(bool(r.get("docs")), r["backend"], r["direction"]): r for r in results}
    assert set(by) == {(True, b, d) for b in ("flex", "flash_attn", "cudadent")
                       for d in ("fwd_train", "bwd")} | \
        {(False, b, d) for b in ("cudadent", "cudnn") for d in ("fwd_train", "bwd")}
    assert by[(True, "flash_attn", "bwd")]["error"].startswith("ModuleNotFoundError")
    docs = varlen_doc_lengths()
    for (packed, b, d), r in by.items():
        if b == "flash_attn":
            continue
        assert "rounds" not in r and r["ms"] == ms_of[b], r
        want = (varlen_flops(docs, 16, 128, True, d) if packed
                else flops(8, 16, 2048, 128, True, d))
        assert r["tflops"] == pytest.approx(want / (ms_of[b] * 1e-3) / 1e12)
    assert by[(True, "cudadent", "bwd")]["diff_vs"] == "flex"
    assert "max_abs_diff_vs_sdpa" in by[(True, "cudadent", "bwd")]
    assert all("outs" not in c for c in cfgs)
    # --time-limit 25 on a clock that advances 10 s a forward prepared: cudadent (packed at 0 s,
    # dense at 20 s) is prepared, flex (at 40 s) is skipped, and one round of the three runs
    clock = [0.0]

    def slow_forward(*a):
        clock[0] += 10
        return fake_forward(*a)
    import types
    monkeypatch.setattr(bench, "make_varlen_forward", slow_forward)
    monkeypatch.setattr(bench, "make_forward", lambda b, q, k, v, c, layout: slow_forward(b, q,
                                                                                           k, v))
    monkeypatch.setattr(bench, "time", types.SimpleNamespace(time=lambda: clock[0]))
    prepared.clear()
    args = bench.parse_args(["--suite", "varlen", "--backends", "cudadent,flex", "--rounds", "3",
                             "--iters", "6", "--warmup", "1", "--time-limit", "25"])
    results = bench.measure_varlen(bench.shapes(args), args, None, 0.0)
    assert prepared == ["cudadent"] * 4
    flex = [r for r in results if r["backend"] == "flex"]
    assert len(flex) == 2 and all(r["error"] == "skipped: --time-limit 25 s reached"
                                  for r in flex)
    ours = [r for r in results if r["backend"] == "cudadent"]
    assert len(ours) == 4 and all(r["rounds"] == 1 and r["ms"] == 1.0 for r in ours)


# ---- runs on a GPU -----------------------------------------------------------------------------------

def _run_suite(tmp_path, backends):
    rc = bench.main(["--suite", "varlen", "--backends", backends, "--iters", "2", "--rounds", "1",
                     "--warmup", "1", "--no-plot", "--out", str(tmp_path)])
    assert rc == 0
    path = glob.glob(os.path.join(str(tmp_path), "*-varlen*.json"))[0]
    with open(path) as f:
        saved = json.load(f)
    text = open(path[:-5] + ".md").read()
    return saved["results"], text


def _check_cudadent(results):
    ours = [r for r in results if r["backend"] == "cudadent"]
    assert {(bool(r.get("docs")), r["direction"]) for r in ours} == \
        {(p, d) for p in (True, False) for d in ("fwd_train", "bwd")}
    if any(r.get("error", "").split(":")[0] in KERNEL_MISSING for r in ours):
        pytest.skip("kernel not built")
    assert all("error" not in r and r["tflops"] > 0 for r in ours), ours
    return ours


@requires_cuda
def test_varlen_suite_runs(tmp_path):
    results, text = _run_suite(tmp_path, "cudadent")
    _check_cudadent(results)
    assert "cudadent packed / cudadent dense causal 8 x 2048: " in text
    assert "**met**" in text or "**not met**" in text
    assert "FlexAttention packed (document block mask): not measured" in text
    assert "Documents of the packed batch (18, seed 28" in text


@requires_cuda
@pytest.mark.skipif(os.environ.get("CUDADENT_TEST_FLEX", "0") in ("", "0"),
                    reason="compiles FlexAttention (about a minute): set CUDADENT_TEST_FLEX=1")
def test_varlen_suite_flex_runs(tmp_path):
    """With FlexAttention (compiles its forward and backward: about a minute; only with
    CUDADENT_TEST_FLEX=1): both goals are lines, and cudadent's output agrees with flex's on the
    packed batch."""
    results, text = _run_suite(tmp_path, "cudadent,flex")
    ours = _check_cudadent(results)
    flex = [r for r in results if r["backend"] == "flex"]
    assert len(flex) == 2 and all("error" not in r and r["tflops"] > 0 for r in flex), flex
    bwd = [r for r in ours if r.get("docs") and r["direction"] == "bwd"][0]
    assert bwd["diff_vs"] == "flex" and bwd["max_abs_diff_vs_sdpa"] < 2e-2, bwd
    assert "FlexAttention packed (document block mask): not measured" not in text
