"""The user-facing functions: cudadent.attention and the flash-attn compatible flash_attn_func."""
import math

import torch

from . import ops
from .errors import BadWindowError

__all__ = ["attention", "flash_attn_func"]


def _window(window, name):
    try:
        left, right = window
    except (TypeError, ValueError):
        raise BadWindowError(f"{name} = {window!r}; expected a pair (left, right) of ints, "
                             f"-1 for unbounded") from None
    left, right = int(left), int(right)
    if left < -1 or right < -1:
        raise BadWindowError(f"{name} = ({left}, {right}); each bound must be >= -1 "
                             f"(-1: unbounded)")
    return left, right


def _autocast(q, k, v):
    # Under torch.autocast, fp32 activations (e.g. from an fp32 layer norm) run in the autocast
    # dtype, as they would through scaled_dot_product_attention.
    if q.dtype == torch.float32 and q.device.type == "cuda" and torch.is_autocast_enabled("cuda"):
        dtype = torch.get_autocast_dtype("cuda")
        return q.to(dtype), k.to(dtype), v.to(dtype)
    return q, k, v


def attention(q, k, v, causal=False, softmax_scale=None, window=(-1, -1), deterministic=False,
              return_lse=False):
    """Scaled dot-product attention on (batch, seqlen, heads, head_dim) tensors.

    q: [B, Sq, Hq, D]; k, v: [B, Sk, Hkv, D] with Hq % Hkv == 0 (GQA/MQA); fp16 or bf16 on one
    CUDA device; any batch/seq/head strides. softmax_scale defaults to 1/sqrt(D). window =
    (left, right), -1 unbounded: query row i sees key j when
    j >= i + Sk - Sq - left and j <= i + Sk - Sq + right (bottom-right aligned, as flash-attn);
    causal=True is right = 0. deterministic=True makes the backward bit-reproducible.
    Returns out [B, Sq, Hq, D] (contiguous), and with return_lse=True also lse [B, Hq, Sq] fp32
    (natural log of the softmax denominator; -inf for rows that see no key). Differentiable
    with respect to q, k, v. Where no gradient will be taken and return_lse is False (inference),
    the forward computes no LSE; on Hopper that kernel sums the softmax rows on the tensor core,
    a few percent faster with the same output accuracy.
    """
    q, k, v = _autocast(q, k, v)
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(q.shape[-1])
    left, right = _window(window, "window")
    out, lse = ops.attention_fwd(q, k, v, float(softmax_scale), bool(causal), left, right,
                                 bool(deterministic), need_lse=bool(return_lse))
    return (out, lse) if return_lse else out


def _unsupported(argument, value, why):
    raise NotImplementedError(f"cudadent.flash_attn_func: {argument}={value!r} is not supported "
                              f"({why})")


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False):
    """flash_attn.flash_attn_func with flash-attn 2's signature and semantics.

    q: (batch, seqlen_q, nheads, headdim); k, v: (batch, seqlen_k, nheads_k, headdim).
    Returns out, or (out, softmax_lse, None) when return_attn_probs=True (softmax_lse:
    (batch, nheads, seqlen_q) float32; cudadent never materializes the attention probabilities).
    Arguments cudadent does not implement raise NotImplementedError naming the argument:
    dropout_p != 0, softcap != 0, alibi_slopes; and so does a v whose head dim differs from q's
    (HeadDimVNotImplementedError). Ragged batches (flash-attn's flash_attn_varlen_func) have no
    kernel yet, so the package has no such function: code that looks for it finds none.
    """
    if dropout_p is None or float(dropout_p) != 0.0:
        _unsupported("dropout_p", dropout_p, "cudadent has no attention dropout; pass 0.0")
    if softcap is not None and float(softcap) != 0.0:
        _unsupported("softcap", softcap, "logit soft-capping is in the C API (softcap, params "
                     "layout v2) but not implemented by any kernel yet; pass 0.0")
    if alibi_slopes is not None:
        _unsupported("alibi_slopes", "<tensor>" if isinstance(alibi_slopes, torch.Tensor)
                     else alibi_slopes, "no ALiBi kernel; pass None")
    if window_size is None:
        window_size = (-1, -1)
    left, right = _window(window_size, "window_size")
    if return_attn_probs:
        out, lse = attention(q, k, v, causal=causal, softmax_scale=softmax_scale,
                             window=(left, right), deterministic=deterministic, return_lse=True)
        return out, lse, None
    return attention(q, k, v, causal=causal, softmax_scale=softmax_scale, window=(left, right),
                     deterministic=deterministic)
