"""Shim of FlashAttention-3's flash_attn_interface (flash-attention's hopper/), mapped onto
cudadent, for running hopper/test_flash_attn.py (dev/flash_attn_tests).

flash_attn_func -> cudadent.flash_attn_func. FA3's scheduling knobs (num_splits, pack_gqa,
sm_margin) change how FA3 splits the work, not the result: ignored. What cudadent does not do
refuses (ShimRefusal, in this order): fp8 inputs or descales ("dtype fp8"), qv, attention_chunk
!= 0. Returns out, or (out, softmax_lse) with return_attn_probs (FA3's convention).
flash_attn_varlen_func -> cudadent.flash_attn_varlen_func where the package has one (seqused_k
passed on; seqused_q only where it equals the cu_seqlens_q lengths, else refused), else "varlen
not provided"; kvcache, get_scheduler_metadata and combine refuse."""
import cudadent
import fa_refusals as R
from _fa_shim import counted, is_fp8, not_provided, refuse, varlen_impl


def _check(name, q, qv, descales, attention_chunk):
    if is_fp8(q):
        refuse(R.DTYPE_FP8, f"{name}: q has dtype {q.dtype}")
    if any(d is not None for d in descales):
        refuse(R.DTYPE_FP8, f"{name}: q/k/v_descale given (FP8 scaling)")
    if qv is not None:
        refuse(R.QV, f"{name}(qv=...): no extra Qv.V term (MLA-style) in cudadent")
    if attention_chunk:
        refuse(R.ATTENTION_CHUNK, f"{name}(attention_chunk={attention_chunk}): no chunked "
                                  f"attention in cudadent")


@counted
def flash_attn_func(q, k, v, softmax_scale=None, causal=False, qv=None, q_descale=None,
                    k_descale=None, v_descale=None, window_size=(-1, -1), attention_chunk=0,
                    softcap=0.0, num_splits=1, pack_gqa=None, deterministic=False, sm_margin=0,
                    return_attn_probs=False):
    _check("flash_attn_func", q, qv, (q_descale, k_descale, v_descale), attention_chunk)
    res = cudadent.flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=softmax_scale,
                                   causal=causal, window_size=window_size, softcap=softcap,
                                   deterministic=deterministic,
                                   return_attn_probs=return_attn_probs)
    return tuple(res[:2]) if return_attn_probs else res


def flash_attn_qkvpacked_func(qkv, softmax_scale=None, causal=False, q_descale=None,
                              k_descale=None, v_descale=None, window_size=(-1, -1),
                              attention_chunk=0, softcap=0.0, deterministic=False,
                              num_heads_q=None, sm_margin=0, return_attn_probs=False):
    if qkv.dim() == 5:  # (batch, seqlen, 3, nheads, headdim)
        q, k, v = qkv.unbind(dim=-3)
    else:  # (batch, seqlen, nheads_q + 2 * nheads_k, headdim)
        hk = (qkv.shape[2] - num_heads_q) // 2
        q, k, v = qkv.split([num_heads_q, hk, hk], dim=-2)
    return flash_attn_func(q, k, v, softmax_scale, causal, None, q_descale, k_descale,
                           v_descale, window_size, attention_chunk, softcap, 1, None,
                           deterministic, sm_margin, return_attn_probs)


@counted
def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           seqused_q=None, seqused_k=None, softmax_scale=None, causal=False,
                           qv=None, q_descale=None, k_descale=None, v_descale=None,
                           window_size=(-1, -1), attention_chunk=0, softcap=0.0, num_splits=1,
                           pack_gqa=None, deterministic=False, sm_margin=0,
                           return_attn_probs=False):
    fn = varlen_impl("flash_attn_varlen_func")
    _check("flash_attn_varlen_func", q, qv, (q_descale, k_descale, v_descale), attention_chunk)
    if seqused_q is not None:
        # FA3's unpad_input always returns the used lengths; equal to the cu_seqlens_q lengths
        # they change nothing (cudadent has no seqused_q: otherwise refused). A host read: this is
        # a test shim, not the package.
        if not bool((seqused_q == cu_seqlens_q[1:] - cu_seqlens_q[:-1]).all()):
            refuse(R.VARLEN_FEATURE, "flash_attn_varlen_func(seqused_q=...) shorter than a "
                                     "sequence: cudadent has no seqused_q")
    res = fn(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
             softmax_scale=softmax_scale, causal=causal, window_size=window_size,
             softcap=softcap, deterministic=deterministic, return_attn_probs=return_attn_probs,
             seqused_k=seqused_k)
    return tuple(res[:2]) if return_attn_probs else res


flash_attn_with_kvcache = not_provided("flash_attn_with_kvcache", R.KVCACHE)
get_scheduler_metadata = not_provided("get_scheduler_metadata", R.KVCACHE)
flash_attn_combine = not_provided("flash_attn_combine", R.COMBINE)
