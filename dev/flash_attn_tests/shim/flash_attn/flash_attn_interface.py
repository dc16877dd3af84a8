"""flash-attn 2's flash_attn.flash_attn_interface, mapped onto cudadent (see ../__init__.py).

Dense functions go to cudadent.flash_attn_func (same signature; return_attn_probs gives
(out, lse, None): cudadent has no S_dmask, which the tests read only when dropout_p > 0, and
dropout is refused). Packed variants unbind their packed dimension into q, k, v views (strided,
as cudadent takes them). Varlen goes to cudadent.flash_attn_varlen_func when the package has it,
else refuses ("varlen not provided"); kvcache / paged KV and flash-attn's internals refuse."""
import torch

import cudadent
import fa_refusals as R
from _fa_shim import counted, not_provided, refuse, varlen_impl

USE_TRITON_ROCM = False


# The tests import it to decode S_dmask, which they read only under dropout (refused before):
# not provided, so nothing of flash-attn's own block-size table is copied here.
_get_block_size_n = not_provided("_get_block_size_n", R.INTERNAL)


@counted
def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False):
    return cudadent.flash_attn_func(
        q, k, v, dropout_p=dropout_p, softmax_scale=softmax_scale, causal=causal,
        window_size=window_size, softcap=softcap, alibi_slopes=alibi_slopes,
        deterministic=deterministic, return_attn_probs=return_attn_probs)


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False,
                             window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                             deterministic=False, return_attn_probs=False):
    k, v = kv.unbind(dim=2)  # kv: (batch, seqlen_k, 2, nheads_k, headdim)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap,
                           alibi_slopes, deterministic, return_attn_probs)


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False,
                              window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                              deterministic=False, return_attn_probs=False):
    q, k, v = qkv.unbind(dim=2)  # qkv: (batch, seqlen, 3, nheads, headdim)
    return flash_attn_func(q, k, v, dropout_p, softmax_scale, causal, window_size, softcap,
                           alibi_slopes, deterministic, return_attn_probs)


@counted
def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                           softcap=0.0, alibi_slopes=None, deterministic=False,
                           return_attn_probs=False, block_table=None):
    fn = varlen_impl("flash_attn_varlen_func")
    if block_table is not None:
        refuse(R.KVCACHE, "flash_attn_varlen_func(block_table=...): paged KV")
    return fn(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
              dropout_p=dropout_p, softmax_scale=softmax_scale, causal=causal,
              window_size=window_size, softcap=softcap, alibi_slopes=alibi_slopes,
              deterministic=deterministic, return_attn_probs=return_attn_probs)


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                    max_seqlen_k, dropout_p=0.0, softmax_scale=None,
                                    causal=False, window_size=(-1, -1), softcap=0.0,
                                    alibi_slopes=None, deterministic=False,
                                    return_attn_probs=False):
    varlen_impl("flash_attn_varlen_kvpacked_func")
    k, v = kv.unbind(dim=1)  # kv: (total_k, 2, nheads_k, headdim)
    return flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                  max_seqlen_k, dropout_p, softmax_scale, causal, window_size,
                                  softcap, alibi_slopes, deterministic, return_attn_probs)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0,
                                     softmax_scale=None, causal=False, window_size=(-1, -1),
                                     softcap=0.0, alibi_slopes=None, deterministic=False,
                                     return_attn_probs=False):
    varlen_impl("flash_attn_varlen_qkvpacked_func")
    q, k, v = qkv.unbind(dim=1)  # qkv: (total, 3, nheads, headdim)
    return flash_attn_varlen_func(q, k, v, cu_seqlens, cu_seqlens, max_seqlen, max_seqlen,
                                  dropout_p, softmax_scale, causal, window_size, softcap,
                                  alibi_slopes, deterministic, return_attn_probs)


flash_attn_with_kvcache = not_provided("flash_attn_with_kvcache", R.KVCACHE)
_flash_attn_forward = not_provided("_flash_attn_forward", R.INTERNAL)
_flash_attn_backward = not_provided("_flash_attn_backward", R.INTERNAL)
_flash_attn_varlen_forward = not_provided("_flash_attn_varlen_forward", R.INTERNAL)
_flash_attn_varlen_backward = not_provided("_flash_attn_varlen_backward", R.INTERNAL)


class _RawExtension:
    """flash_attn.flash_attn_interface.flash_attn_gpu: flash-attn's raw C++ entry points
    (fwd, bwd, varlen_fwd, ...), which cudadent has no counterpart of: each refuses."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return not_provided(f"flash_attn_gpu.{name}", R.INTERNAL)


flash_attn_gpu = _RawExtension()
