"""Shared test helpers: the float64 reference, the error criterion, and the requirements marks."""
import math

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from conftest import FIGURES, HAVE_CUDA, skip_if_kernel_missing  # noqa: E402

requires_cuda = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU (torch.cuda.is_available() "
                                                         "is False)")


def visible(Sq, Sk, causal, window_left, window_right, device):
    """[Sq, Sk] bool: query i sees key j (cudadent.h: bottom-right aligned; causal = right 0)."""
    if causal:
        window_right = 0
    i = torch.arange(Sq, device=device)[:, None]
    j = torch.arange(Sk, device=device)[None, :]
    off = Sk - Sq
    ok = torch.ones(Sq, Sk, dtype=torch.bool, device=device)
    if window_left >= 0:
        ok &= j >= i + off - window_left
    if window_right >= 0:
        ok &= j <= i + off + window_right
    return ok


def attention_ref(q, k, v, scale, causal=False, window=(-1, -1), dtype=torch.float64,
                  softcap=0.0):
    """out [B,Sq,Hq,Dv] and lse [B,Hq,Sq] by plain torch ops in `dtype`, differentiable.

    v's head dim Dv may differ from q and k's. softcap > 0: scores = softcap * tanh(scores /
    softcap) before the mask (cudadent.h, flash-attn). dtype=float64: the ground truth.
    dtype=q.dtype: the low-precision reference of the criterion (scores, probabilities P and
    output rounded to the input dtype). Rows that see no key: out 0, lse -inf, zero gradients
    (no NaN anywhere)."""
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    qd = q.to(dtype)
    kd = k.to(dtype).repeat_interleave(g, dim=2)
    vd = v.to(dtype).repeat_interleave(g, dim=2)
    s = torch.einsum("bqhd,bkhd->bhqk", qd * scale, kd)
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    ok = visible(Sq, Sk, causal, window[0], window[1], q.device)
    row_any = ok.any(-1)[:, None].expand(Sq, Sk)
    s_masked = s.masked_fill(~ok, -math.inf)
    lse = torch.logsumexp(s_masked.detach().double(), dim=-1)
    s_safe = torch.where(row_any, s_masked, torch.zeros_like(s))
    p = torch.softmax(s_safe, dim=-1) * row_any.to(s.dtype)
    out = torch.einsum("bhqk,bkhd->bqhd", p.to(dtype), vd)
    return out, lse


def max_err(x, ref):
    return float((x.double() - ref.double()).abs().max()) if x.numel() else 0.0


def check_criterion(name, case, qty, x, ref, lowp, slack=1e-5):
    """docs/DESIGN.md: max|x - ref| <= 2 * max|lowp - ref| + 1e-5. Records the figures."""
    err, err_lowp = max_err(x, ref), max_err(lowp, ref)
    bound = 2 * err_lowp + slack
    FIGURES.append((name, case, qty, err, err_lowp, bound))
    assert not torch.isnan(x).any(), f"{case}: {qty} has NaN (an element not written?)"
    assert err <= bound, (f"{case}: max|{qty} - ref| = {err:.3e} > 2 * max|{qty}_lowp - ref| "
                          f"+ {slack:g} = {bound:.3e}")


def randn(shape, dtype, seed, device="cuda", outliers=False):
    g = torch.Generator(device=device).manual_seed(seed)
    t = torch.randn(shape, generator=g, device=device, dtype=torch.float32)
    if outliers:  # docs/DESIGN.md: a variant with rare large outliers
        mask = torch.rand(shape, generator=g, device=device) < 1e-3
        t = torch.where(mask, t * 20, t)
    return t.to(dtype)


__all__ = ["torch", "requires_cuda", "attention_ref", "check_criterion", "randn", "visible",
           "skip_if_kernel_missing", "HAVE_CUDA", "max_err"]
