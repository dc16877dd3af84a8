"""dev/flash_attn_tests (flash-attn's own tests run against cudadent): which exceptions count as
cudadent refusing a case and under which category, the stratified sample, and the pytest
plugin + summarizer end to end on a small synthetic test file. Needs neither torch nor a GPU
(one check uses torch where it is installed); about a second."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEV = os.path.join(REPO, "dev", "flash_attn_tests")
sys.path.insert(0, DEV)

import fa_refusals as R  # noqa: E402
import cudadent  # noqa: E402
from cudadent import Status, error_for_status  # noqa: E402

# the library's own refusal messages (src/api.c) -> category
LIBRARY_CASES = [
    (Status.UNSUPPORTED_HEAD_DIM, "no forward kernel runs head_dim = 40 with head_dim_v = 40 on "
     "this device (supported, for head_dim and head_dim_v each: 64, 128)", R.HEAD_DIM),
    (Status.UNSUPPORTED_HEAD_DIM, "no backward kernel runs head_dim = 192 with head_dim_v = 128 "
     "and softcap on this device (supported, for head_dim and head_dim_v each: 64)",
     R.HEAD_DIM_V + " + softcap (backward)"),
    (Status.UNSUPPORTED_HEAD_DIM, "head_dim_v = 128 != head_dim = 192 is not implemented yet: no "
     "forward kernel takes a V head dim other than Q and K's (set head_dim_v to 0)", R.HEAD_DIM_V),
    (Status.UNSUPPORTED_HEAD_DIM, "head_dim = 40 has no backward kernel (supported: 64)",
     R.HEAD_DIM + " (backward)"),
    (Status.UNSUPPORTED_FEATURE, "softcap = 50 is not implemented yet: no forward kernel "
     "soft-caps scores (leave softcap 0)", R.SOFTCAP),
    (Status.UNSUPPORTED_FEATURE, "varlen (cu_seqlens_q / cu_seqlens_k) is not implemented yet: "
     "no forward kernel of this build takes it", R.VARLEN_FEATURE),
    (Status.UNSUPPORTED_ARCH, "no kernel for compute capability 7.5", R.ARCH),
    (Status.MISALIGNED, "q's data pointer is not 16-byte aligned", "rejected: MisalignedError"),
    (Status.CUDA_ERROR, "an illegal memory access was encountered", None),
    (Status.INTERNAL_ERROR, "unexpected", None),
]


@pytest.mark.parametrize("status,message,category", LIBRARY_CASES)
def test_library_refusals(status, message, category):
    assert R.categorize(error_for_status(status, message, "cudadent_attn_fwd")) == category


def test_python_side_refusals():
    # ops._check_head_dim's messages, the package's NotImplementedError, the shim's own
    assert R.categorize(cudadent.UnsupportedHeadDimError(
        "head_dim_v (v's last dimension) = 512 is above 256, ...")) == R.HEAD_DIM_V
    assert R.categorize(cudadent.UnsupportedHeadDimError(
        "head_dim (q and k's last dimension) = 512 is above 256, ...")) == R.HEAD_DIM
    assert R.categorize(cudadent.UnsupportedDtypeError(
        "q has dtype torch.float8_e4m3fn; expected torch.float16 or torch.bfloat16")) == R.DTYPE_FP8
    assert R.categorize(NotImplementedError(
        "cudadent.flash_attn_func: dropout_p=0.17 is not supported (...)")) == R.DROPOUT
    assert R.categorize(NotImplementedError(
        "cudadent.flash_attn_func: alibi_slopes='<tensor>' is not supported (...)")) == R.ALIBI
    assert R.categorize(R.ShimRefusal(R.VARLEN_MISSING, "x")) == R.VARLEN_MISSING
    for exc in (AssertionError("x"), RuntimeError("CUDA error"), NotImplementedError("other"),
                cudadent.DeviceMismatchError("q is on device 'cpu'")):
        assert R.categorize(exc) is None
    # ShimRefusal escapes a test's own pytest.raises(RuntimeError / NotImplementedError)
    assert not isinstance(R.ShimRefusal("c", "m"), (RuntimeError, NotImplementedError, ValueError))


def test_package_messages_categorize():
    """The package's real dropout / ALiBi refusals (raised before any device check)."""
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if not hasattr(cudadent, "flash_attn_func") or cudadent.flash_attn_func.__name__ == "_needs_torch":
        pytest.skip("cudadent without torch")
    q = torch.zeros(1, 4, 1, 64, dtype=torch.float16)
    for kwargs, cat in (({"dropout_p": 0.1}, R.DROPOUT),
                        ({"alibi_slopes": torch.zeros(1, 1)}, R.ALIBI)):
        with pytest.raises(Exception) as e:
            cudadent.flash_attn_func(q, q, q, **kwargs)
        assert R.categorize(e.value) == cat


def test_sample_is_stratified_and_deterministic():
    import fa_plugin
    ids = {"big": [f"big[{i}]" for i in range(1000)], "mid": [f"mid[{i}]" for i in range(30)],
           "one": ["one"]}
    a = fa_plugin.sample_ids(ids, 100, seed=0)
    assert a == fa_plugin.sample_ids(ids, 100, seed=0) and len(a) == 100
    assert "one" in a and sum(x.startswith("mid") for x in a) == 30  # small ones whole
    assert sum(x.startswith("big") for x in a) == 69
    assert a != fa_plugin.sample_ids(ids, 100, seed=1)
    assert len(fa_plugin.sample_ids(ids, 5000, seed=0)) == 1031


SYNTHETIC = '''
import pytest
import _fa_shim
import fa_refusals as R
from cudadent import Status, error_for_status

def test_pass():
    pass

def test_fail():
    assert 1 == 2, "out differs"

def test_refused_after_a_call():
    _fa_shim.stats["ok_calls"] += 1
    raise R.ShimRefusal(R.VARLEN_MISSING, "cudadent has no flash_attn_varlen_func")

def test_refused_library():
    raise error_for_status(Status.UNSUPPORTED_FEATURE, "softcap = 50 is not implemented yet: "
                           "no backward kernel soft-caps scores", "cudadent_attn_bwd")

def test_refusal_not_swallowed_by_pytest_raises():
    with pytest.raises(RuntimeError):
        raise R.ShimRefusal(R.KVCACHE, "cudadent provides no flash_attn_with_kvcache")

def test_own_skip():
    pytest.skip("Has Qv requires hdim 64")

def test_cuda_error():
    raise error_for_status(Status.CUDA_ERROR, "an illegal memory access", "cudadent_attn_fwd")

@pytest.mark.parametrize("i", range(6))
def test_many(i):
    pass
'''


def test_plugin_and_summary_end_to_end(tmp_path):
    (tmp_path / "test_synthetic.py").write_text(SYNTHETIC)
    results = tmp_path / "r.jsonl"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.join(REPO, "python"), DEV,
                                         os.path.join(DEV, "shim"), env.get("PYTHONPATH", "")])
    base = [sys.executable, "-m", "pytest", "-p", "fa_plugin", "-p", "no:cacheprovider",
            "-c", os.devnull, "--rootdir", str(tmp_path), "-q", str(tmp_path),
            "--fa-results", str(results), "--fa-label", "syn"]
    p = subprocess.run(base + ["--fa-sample", "10"], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr  # two failures
    recs = [json.loads(x) for x in results.read_text().splitlines()]
    col, cases = recs[0], {r["id"]: r for r in recs[1:]}
    assert col["type"] == "collection" and sum(col["collected"].values()) == 13
    assert len(cases) == 10 and sum(col["selected"].values()) == 10
    assert sum(k.startswith("test_many") for k in cases) == 3  # 7 singles + 3 of 6
    o = {k: (r["outcome"], r["category"]) for k, r in cases.items()}
    assert o["test_pass"] == ("passed", None)
    assert o["test_fail"] == ("failed", None) and "out differs" in cases["test_fail"]["msg"]
    assert o["test_refused_after_a_call"] == ("refused", R.VARLEN_MISSING)
    assert cases["test_refused_after_a_call"]["ok_calls"] == 1
    assert o["test_refused_library"] == ("refused", "softcap (backward)")
    assert o["test_refusal_not_swallowed_by_pytest_raises"] == ("refused", R.KVCACHE)
    assert o["test_own_skip"] == ("skipped", "Has Qv requires hdim 64")
    assert o["test_cuda_error"][0] == "failed"

    # the same selection again with a spent budget: all "not run", merged without loss
    results2 = tmp_path / "r2.jsonl"
    base2 = [x if x != str(results) else str(results2) for x in base]
    subprocess.run(base2 + ["--fa-sample", "10", "--fa-budget", "1e-9"], env=env,
                   capture_output=True, text=True, timeout=120)
    assert all(json.loads(x)["outcome"] == "not run"
               for x in results2.read_text().splitlines()[1:])
    out = tmp_path / "sum"
    p = subprocess.run([sys.executable, os.path.join(DEV, "summarize.py"), "--out", str(out),
                        "--commit", "abc", str(results), str(results2)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    s = json.loads((out / "summary.json").read_text())["files"]["syn"]
    assert s["collected"] == 13 and s["run"]["cases"] == 10
    assert s["run"]["outcomes"] == {"failed": 2, "passed": 4, "refused": 3, "skipped": 1}
    assert s["run"]["refused_by_category"] == {R.VARLEN_MISSING: 1, "softcap (backward)": 1,
                                               R.KVCACHE: 1}
    # test_many: 3 of 6 ran, all passed -> 6 estimated
    assert s["estimate_whole_collection"]["outcomes"]["passed"] == 7
    assert s["run"]["refused_after_some_calls_passed"] == 1
    assert s["run"]["passed_without_a_cudadent_call"] == 4  # synthetic: no shim calls
    assert "syn: 13 collected" in (out / "summary.txt").read_text()
