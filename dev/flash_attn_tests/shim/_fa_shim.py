"""What the flash_attn (FA2) and flash_attn_interface (FA3, hopper/) shims share: the refusal
exception, a counter of calls cudadent completed in the current test (the plugin resets it and
records it, so a case refused after some sub-runs passed says so), and the look-up of functions
the package may or may not have yet (flash_attn_varlen_func)."""
import cudadent

from fa_refusals import ShimRefusal  # noqa: F401  (re-exported)
import fa_refusals as R

stats = {"ok_calls": 0}


def reset():
    stats["ok_calls"] = 0


def counted(fn):
    """fn with each successful return counted in stats['ok_calls']."""
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        stats["ok_calls"] += 1
        return out
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    wrapper.__wrapped__ = fn
    return wrapper


def refuse(category, message):
    raise ShimRefusal(category, message)


def not_provided(name, category):
    """A function of flash-attn's API that cudadent does not provide: calling it refuses."""
    def missing(*args, **kwargs):
        refuse(category, f"cudadent provides no {name}")
    missing.__name__ = name
    return missing


def varlen_impl(name):
    """cudadent.flash_attn_varlen_func, or a refusal while the package has none."""
    fn = getattr(cudadent, "flash_attn_varlen_func", None)
    if fn is None:
        refuse(R.VARLEN_MISSING, f"{name}: cudadent has no flash_attn_varlen_func")
    return fn


def is_fp8(t):
    return t is not None and "float8" in str(getattr(t, "dtype", ""))
