"""What counts as cudadent refusing a flash-attn test case, and under which category.

A refusal is an exception saying "cudadent does not do this" (as opposed to a wrong answer or a
crash): the shim's ShimRefusal (a function or argument the package does not provide), the
package's NotImplementedError for dropout / ALiBi, and the library's UNSUPPORTED_* statuses
(head dim, head_dim_v, dtype, feature, arch). Python-side input rejections of input that
flash-attn accepts (ShapeError, MisalignedError, ...) are counted as refusals too, under
"rejected: <class>", so that they show as a compatibility gap rather than vanish.

Everything else (CudaError, InternalError, assertion errors, ...) is not a refusal: the test
fails. No torch import here: the summarizer and the unit test run anywhere.
"""
import re

# refusal categories: short, stable names (the summary's keys)
HEAD_DIM = "head dim"
HEAD_DIM_V = "head_dim_v"
SOFTCAP = "softcap"
DROPOUT = "dropout"
ALIBI = "alibi"
WINDOW = "window"
DETERMINISTIC = "deterministic"
VARLEN_MISSING = "varlen not provided"
INTERNAL = "flash-attn internals not provided"
VARLEN_FEATURE = "varlen (library)"
KVCACHE = "kvcache/paged not provided"
COMBINE = "combine not provided"
QV = "qv"
ATTENTION_CHUNK = "attention_chunk"
DTYPE_FP8 = "dtype fp8"
DTYPE_OTHER = "dtype"
ARCH = "arch"

# exception classes of cudadent.errors whose raising means "input rejected" (see module doc)
_REJECTED = ("ShapeError", "MisalignedError", "NotContiguousError", "BadWindowError",
             "BadHeadsError", "BadScaleError", "BadSizeError", "SizeOverflowError")


class ShimRefusal(Exception):
    """Raised by the flash_attn / flash_attn_interface shim for what cudadent does not provide.
    Deliberately not a RuntimeError / NotImplementedError / ValueError: a test's own
    `pytest.raises(RuntimeError)` must not swallow it."""

    def __init__(self, category, message):
        self.category = category
        super().__init__(f"[{category}] {message}")


def _mro_names(exc):
    return [c.__name__ for c in type(exc).__mro__]


_COMBO = re.compile(r"head_dim = (\d+) with head_dim_v = (\d+)( and softcap)?")


def categorize(exc):
    """The refusal category of exception exc, or None when exc is not a refusal. Library
    refusals made by the backward (the forward ran) get " (backward)" appended."""
    if isinstance(exc, ShimRefusal):
        return exc.category
    names = _mro_names(exc)
    if "CudadentError" not in names:
        # the package's flash_attn_func raises plain NotImplementedError naming the argument
        low = str(exc).lower()
        if "NotImplementedError" in names and "cudadent" in low:
            if "dropout" in low:
                return DROPOUT
            if "alibi" in low:
                return ALIBI
            return "not implemented: " + _first_arg(str(exc))
        return None
    msg = getattr(exc, "message", None) or str(exc)  # the library's own text, no prefix
    low = msg.lower()
    cat = _library_category(names, msg, low)
    if cat is not None and "backward" in low and cat not in (ARCH,) \
            and not cat.startswith("rejected"):
        cat += " (backward)"
    return cat


def _library_category(names, msg, low):
    if "HeadDimVNotImplementedError" in names:
        return HEAD_DIM_V
    if "UnsupportedHeadDimError" in names:
        m = _COMBO.search(msg)  # "no forward kernel runs head_dim = D with head_dim_v = Dv ..."
        if m:
            cat = HEAD_DIM if m.group(1) == m.group(2) else HEAD_DIM_V
            return cat + " + softcap" if m.group(3) else cat
        return HEAD_DIM_V if low.startswith("head_dim_v") else HEAD_DIM
    if "UnsupportedDtypeError" in names:
        return DTYPE_FP8 if "float8" in low or "fp8" in low else DTYPE_OTHER
    if "UnsupportedFeatureError" in names:
        for word, cat in (("softcap", SOFTCAP), ("varlen", VARLEN_FEATURE),
                          ("cu_seqlens", VARLEN_FEATURE), ("seqused", VARLEN_FEATURE),
                          ("window", WINDOW), ("determinis", DETERMINISTIC),
                          ("dropout", DROPOUT), ("alibi", ALIBI)):
            if word in low:
                return cat
        return "feature: " + _first_arg(msg)
    if "UnsupportedArchError" in names or "NoDeviceError" in names:
        return ARCH
    for name in _REJECTED:
        if name in names:
            return "rejected: " + name
    return None  # CudaError, InternalError, WorkspaceTooSmall, ...: a failure


def _first_arg(msg):
    """A short tag from a message: its first few words (for unforeseen categories)."""
    words = msg.replace(":", " ").split()
    return " ".join(words[:4])[:40]
