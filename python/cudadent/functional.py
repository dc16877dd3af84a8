"""The user-facing functions: cudadent.attention and the flash-attn compatible flash_attn_func."""
import math

import torch

from . import ops
from .errors import BadWindowError

__all__ = ["attention", "flash_attn_func"]  # flash_attn_varlen_func: varlen.py


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


def _pad_last(t, n):
    """t with its last dimension padded by n zero columns (a copy), or t itself for n == 0."""
    return torch.nn.functional.pad(t, (0, n)) if n else t


def attention(q, k, v, causal=False, softmax_scale=None, window=(-1, -1), deterministic=False,
              return_lse=False, softcap=0.0, cu_seqlens_q=None, cu_seqlens_k=None,
              max_seqlen_q=None, max_seqlen_k=None, seqused_k=None):
    """Scaled dot-product attention on (batch, seqlen, heads, head_dim) tensors.

    q: [B, Sq, Hq, D]; k: [B, Sk, Hkv, D]; v: [B, Sk, Hkv, Dv] with Hq % Hkv == 0 (GQA/MQA);
    V's head dim Dv may differ from Q and K's D (e.g. 192 and 128). fp16 or bf16 on one CUDA
    device; any batch/seq/head strides.
    Head dims: D and Dv each up to 256 (above: UnsupportedHeadDimError naming the supported
    set, cudadent.supported_head_dims()). Multiples of 8 go to the kernels as they are; other
    sizes are padded with zeros to the next multiple of 8 through a copy of the tensors
    concerned (q and k for D, v for Dv), as flash-attn does, and the output is sliced back
    (a copy): zero columns add nothing to q.k, so results and gradients are those of the real
    dims. softmax_scale defaults to 1/sqrt(D), of the real D.
    window = (left, right), -1 unbounded: query row i sees key j when
    j >= i + Sk - Sq - left and j <= i + Sk - Sq + right (bottom-right aligned, as flash-attn);
    causal=True is right = 0. softcap > 0 caps the scaled scores, s = softcap * tanh(s /
    softcap), before the mask and softmax (flash-attn's and Gemma 2's logit soft-capping); 0:
    none. deterministic=True makes the backward bit-reproducible.
    Returns out [B, Sq, Hq, Dv] (contiguous), and with return_lse=True also lse [B, Hq, Sq] fp32
    (natural log of the softmax denominator; -inf for rows that see no key). Differentiable
    with respect to q, k, v. Where no gradient will be taken and return_lse is False (inference),
    the forward computes no LSE; on Hopper that kernel sums the softmax rows on the tensor core,
    a few percent faster with the same output accuracy.
    Ragged batches (packed sequences, document masking): cu_seqlens_q and cu_seqlens_k, int32
    (batch + 1,) prefix sums on the device, with max_seqlen_q and max_seqlen_k (Python ints,
    bounds of every sequence's length); q: [total_q, Hq, D], k: [total_k, Hkv, D], v: [total_k,
    Hkv, Dv]; optional seqused_k (batch,) int32. Masks and windows apply within each sequence
    (bottom-right aligned per sequence); out is [total_q, Hq, Dv] and lse [Hq, total_q]
    (cudadent.varlen).
    """
    if cu_seqlens_q is not None or cu_seqlens_k is not None:
        if cu_seqlens_q is None or cu_seqlens_k is None or max_seqlen_q is None or \
                max_seqlen_k is None:
            raise ValueError("cudadent.attention: a ragged batch needs cu_seqlens_q, cu_seqlens_k, "
                             "max_seqlen_q and max_seqlen_k together")
        from .varlen import varlen_attention
        out, lse = varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                    max_seqlen_k, causal=causal, softmax_scale=softmax_scale,
                                    window=window, deterministic=deterministic, softcap=softcap,
                                    seqused_k=seqused_k)
        return (out, lse) if return_lse else out
    if seqused_k is not None or max_seqlen_q is not None or max_seqlen_k is not None:
        raise ValueError("cudadent.attention: seqused_k / max_seqlen_* are for ragged batches "
                         "(give cu_seqlens_q and cu_seqlens_k)")
    q, k, v = _autocast(q, k, v)
    D, Dv = q.shape[-1], v.shape[-1]
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(D)
    left, right = _window(window, "window")
    softcap = 0.0 if softcap is None else float(softcap)
    pad, pad_v = -D % 8, -Dv % 8
    if pad or pad_v:
        # checked at the real sizes (messages name them; above 256 is refused before padding)
        ops.check_qkv(q, k, v)
        q, k, v = _pad_last(q, pad), _pad_last(k, pad), _pad_last(v, pad_v)
    out, lse = ops.attention_fwd(q, k, v, float(softmax_scale), bool(causal), left, right,
                                 bool(deterministic), softcap, need_lse=bool(return_lse))
    if pad_v:
        out = out[..., :Dv].contiguous()
    return (out, lse) if return_lse else out


def _unsupported_in(function, argument, value, why):
    raise NotImplementedError(f"cudadent.{function}: {argument}={value!r} is not supported "
                              f"({why})")


def _unsupported(argument, value, why):
    _unsupported_in("flash_attn_func", argument, value, why)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False):
    """flash_attn.flash_attn_func with flash-attn 2's signature and semantics.

    q: (batch, seqlen_q, nheads, headdim); k, v: (batch, seqlen_k, nheads_k, headdim).
    Returns out, or (out, softmax_lse, None) when return_attn_probs=True (softmax_lse:
    (batch, nheads, seqlen_q) float32; cudadent never materializes the attention probabilities).
    v may have a head dim other than q and k's (cudadent.attention: up to 256 each; sizes that
    are not a multiple of 8 are padded to the next one with zeros through a copy, as flash-attn
    does, and the output sliced back). softcap > 0: flash-attn's logit soft-capping.
    Arguments cudadent does not implement raise NotImplementedError naming the argument:
    dropout_p != 0, alibi_slopes. A library without a kernel for a head dim, head_dim_v or
    softcap refuses the call (UnsupportedHeadDimError, HeadDimVNotImplementedError,
    UnsupportedFeatureError). Ragged batches: cudadent.flash_attn_varlen_func.
    """
    if dropout_p is None or float(dropout_p) != 0.0:
        _unsupported("dropout_p", dropout_p, "cudadent has no attention dropout; pass 0.0")
    if alibi_slopes is not None:
        _unsupported("alibi_slopes", "<tensor>" if isinstance(alibi_slopes, torch.Tensor)
                     else alibi_slopes, "no ALiBi kernel; pass None")
    if window_size is None:
        window_size = (-1, -1)
    left, right = _window(window_size, "window_size")
    if return_attn_probs:
        out, lse = attention(q, k, v, causal=causal, softmax_scale=softmax_scale,
                             window=(left, right), deterministic=deterministic, return_lse=True,
                             softcap=softcap)
        return out, lse, None
    return attention(q, k, v, causal=causal, softmax_scale=softmax_scale, window=(left, right),
                     deterministic=deterministic, softcap=softcap)
