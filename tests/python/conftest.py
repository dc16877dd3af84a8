"""pytest set-up for cudadent's Python tests.

Import: an installed cudadent (pip install .) is used if there is one; otherwise the package of
this checkout (python/cudadent), which finds the library in the checkout's build folders
(build-py/, build/) or at $CUDADENT_LIBRARY.

Skips (each with its reason): tests needing torch skip without torch, tests needing a GPU skip
without a CUDA device, and GPU tests skip when the library reports that the kernel for that case
is not built (UNSUPPORTED_ARCH / UNSUPPORTED_FEATURE / UNSUPPORTED_HEAD_DIM), unless
CUDADENT_TEST_STRICT=1 turns those into failures.

The error figures of the correctness tests (docs/DESIGN.md: report the figures, not only
pass/fail) are printed in a table at the end of the run.
"""
import collections
import os
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import cudadent  # noqa: F401
except ImportError:
    sys.path.insert(0, os.path.join(REPO, "python"))

try:
    import torch
    HAVE_TORCH = True
    HAVE_CUDA = torch.cuda.is_available()
except ImportError:
    torch = None
    HAVE_TORCH = False
    HAVE_CUDA = False

STRICT = os.environ.get("CUDADENT_TEST_STRICT", "0") not in ("", "0")

FIGURES = []  # rows (test, case, quantity, err, err_lowp, bound) for the summary


def pytest_report_header(config):
    lines = []
    try:
        import cudadent
        lines.append(f"cudadent: {os.path.dirname(cudadent.__file__)}")
        try:
            lines.append(f"libcudadent: {cudadent.library_path()} "
                         f"(version {cudadent.library_version()})")
        except Exception as e:
            lines.append(f"libcudadent: not loaded ({e})")
    except ImportError as e:
        lines.append(f"cudadent: not importable ({e})")
    if HAVE_TORCH:
        dev = torch.cuda.get_device_name() if HAVE_CUDA else "no CUDA device"
        lines.append(f"torch {torch.__version__}, {dev}")
    else:
        lines.append("torch: not installed (torch tests skip)")
    return lines


def _write_counts(stats):
    """Append this run's counts and skip reasons to $CUDADENT_TEST_COUNTS (make test's summary,
    tests/run_tests.sh), counted as pytest's own summary line counts them."""
    path = os.environ.get("CUDADENT_TEST_COUNTS")
    if not path:
        return
    suite = "tests/python (pytest)"
    passed = len(stats.get("passed", [])) + len(stats.get("xfailed", [])) + \
        len(stats.get("xpassed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    reasons = collections.Counter()
    for report in stats.get("skipped", []):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reasons[reason[len("Skipped: "):] if reason.startswith("Skipped: ") else reason] += 1
    with open(path, "a") as f:
        f.write(f"suite\t{suite}\t{passed}\t{sum(reasons.values())}\t{failed}\n")
        for reason, count in reasons.items():
            f.write(f"skip\t{suite}\t{count}\t{' '.join(reason.split())}\n")


def pytest_terminal_summary(terminalreporter):
    _write_counts(terminalreporter.stats)
    if not FIGURES:
        return
    tr = terminalreporter
    tr.section("cudadent error figures: max|x - ref| vs bound 2*max|x_lowp - ref| + 1e-5")
    tr.write_line(f"{'test / case':<58} {'qty':>4} {'err':>10} {'err_lowp':>10} {'bound':>10}")
    for name, case, qty, err, lowp, bound in FIGURES:
        flag = "" if err <= bound else "  FAIL"
        tr.write_line(f"{(name + ' ' + case)[:58]:<58} {qty:>4} {err:10.3e} {lowp:10.3e} "
                      f"{bound:10.3e}{flag}")


@pytest.fixture
def poison_outputs():
    """NaN-fill outputs before each C call (an unwritten element then fails)."""
    from cudadent import ops
    old = ops.POISON_OUTPUTS
    ops.POISON_OUTPUTS = True
    yield
    ops.POISON_OUTPUTS = old


def portable_has_issue27(direction="fwd"):
    """What this build's portable (sm80) kernels of direction are, from the supported-head-dims
    query at compute capability 8.0 (no device needed): True when it lists every multiple of 8
    from 8 to 256, issue 27's kernels, which implement head_dim_v != head_dim and softcap too
    (the design brings the three together); False otherwise (the kernels from before: such calls
    are refused as not implemented yet); None when the library does not load."""
    try:
        from cudadent import _library
        dims = _library.supported_head_dims(direction, "bf16", 80)
    except Exception:
        return None
    return tuple(dims) == tuple(range(8, 257, 8))


def unlisted_head_dim(direction="fwd"):
    """The smallest multiple of 8 from 8 to 512 that the query lists for neither compute
    capability 8.0 nor 9.0: a head dim every call of the library refuses."""
    from cudadent import _library
    listed = set(_library.supported_head_dims(direction, "bf16", 80)) | \
        set(_library.supported_head_dims(direction, "bf16", 90))
    return next(d for d in range(8, 520, 8) if d not in listed)


def skip_if_kernel_missing(exc):
    """Call from an except clause: skip (or, strict, fail) for a kernel that is not built."""
    import cudadent
    if isinstance(exc, (cudadent.UnsupportedArchError, cudadent.UnsupportedFeatureError,
                        cudadent.UnsupportedHeadDimError)) and not STRICT:
        pytest.skip(f"kernel not built: {exc}")
    raise exc
