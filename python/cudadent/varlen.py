"""Ragged batches (cudadent.h, "features of layout v2"): the torch custom ops
cudadent::attn_varlen_fwd / attn_varlen_bwd and flash-attn's flash_attn_varlen_func.

    cudadent::attn_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                              softmax_scale, causal, window_left, window_right, deterministic,
                              softcap, seqused_k=None) -> (out, lse)
    cudadent::attn_varlen_bwd(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                              max_seqlen_k, softmax_scale, causal, window_left, window_right,
                              deterministic, softcap, seqused_k=None) -> (dq, dk, dv)

q, out, dout: (total_q, heads_q, head_dim[_v]); k, v: (total_k, heads_kv, head_dim[_v]), the
sequences packed along the first dimension; cu_seqlens_q / cu_seqlens_k: int32 (batch + 1,) prefix
sums on q's device; max_seqlen_q / max_seqlen_k: Python ints, upper bounds of every sequence's
length (the kernels size their grids with them, so nothing here reads the arrays back: no host
synchronization, CUDA-graph capturable, and torch.compile(fullgraph=True) traces the ops as they
are). lse: float32 (heads_q, total_q), flash-attn's varlen layout. Masks and GQA apply within each
sequence, bottom-right aligned per sequence. Tokens in no sequence (only with invalid arrays) get
O = 0 and zero gradients (cudadent.h says how invalid arrays are clamped). The backward takes the
forward's arrays; the gradient of lse is not propagated. A call whose signature was seen before on
this thread reuses its prepared launch (ops.py's launch-parameter cache; the arrays' contents,
like the tensors' data, may change between calls).
"""
import math
from typing import Optional

import torch

from . import _abi, _library, ops
from .errors import BadSizeError, DeviceMismatchError, ShapeError, UnsupportedDtypeError

__all__ = ["attn_varlen_fwd", "attn_varlen_bwd", "varlen_attention", "flash_attn_varlen_func"]

# Tests set ops.POISON_OUTPUTS: outputs are NaN-filled before the call (here too).


def _check_3d(name, t, device):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"cudadent: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != 3:
        raise ShapeError(f"{name} has shape {tuple(t.shape)}; expected a 3-d tensor "
                         f"(total_tokens, heads, head_dim) of packed sequences")
    if t.device != device:
        raise DeviceMismatchError(f"{name} is on device '{t.device}' but q is on '{device}'; "
                                  f"expected one CUDA device")


def _check_seqlens(name, t, device, entries=None):
    if not isinstance(t, torch.Tensor) or t.dim() != 1:
        raise ShapeError(f"{name} must be a 1-d int32 tensor (batch + 1 prefix sums), got "
                         f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}")
    if t.dtype != torch.int32:
        raise UnsupportedDtypeError(f"{name} has dtype {t.dtype}; expected torch.int32")
    if t.device != device:
        raise DeviceMismatchError(f"{name} is on device '{t.device}' but q is on '{device}'")
    if entries is not None and t.shape[0] != entries:
        raise ShapeError(f"{name} has {t.shape[0]} entries; expected {entries}")


def check_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, seqused_k):
    """Python-side checks of a varlen call (the C library checks the rest, naming the field)."""
    if not isinstance(q, torch.Tensor) or q.device.type != "cuda":
        raise DeviceMismatchError("q must be a CUDA tensor (total_q, heads_q, head_dim)")
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_3d(name, t, q.device)
    if q.dtype not in ops.DTYPES:
        raise UnsupportedDtypeError(f"q has dtype {q.dtype}; expected torch.float16 or "
                                    f"torch.bfloat16")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise UnsupportedDtypeError(f"{name} has dtype {t.dtype}; expected q's dtype {q.dtype}")
    if k.shape[2] != q.shape[2]:
        raise ShapeError(f"k has head_dim {k.shape[2]} but q has {q.shape[2]}")
    if tuple(v.shape[:2]) != tuple(k.shape[:2]):
        raise ShapeError(f"v has shape {tuple(v.shape)}; expected k's (total_k, heads_kv) "
                         f"{tuple(k.shape[:2])}")
    ops._check_head_dim("head_dim (q and k's last dimension)", q.shape[2], q.dtype)
    ops._check_head_dim("head_dim_v (v's last dimension)", v.shape[2], q.dtype)
    _check_seqlens("cu_seqlens_q", cu_seqlens_q, q.device)
    _check_seqlens("cu_seqlens_k", cu_seqlens_k, q.device, cu_seqlens_q.shape[0])
    if cu_seqlens_q.shape[0] < 1:
        raise ShapeError("cu_seqlens_q is empty; expected batch + 1 >= 1 entries")
    if seqused_k is not None:
        _check_seqlens("seqused_k", seqused_k, q.device, cu_seqlens_q.shape[0] - 1)
    for name, m in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if isinstance(m, torch.Tensor) or not isinstance(m, int) or isinstance(m, bool):
            raise BadSizeError(f"{name} = {m!r}: expected a Python int (an upper bound of every "
                               f"sequence's length; a tensor would need a host synchronization)")


def _check_bwd_extra(dout, out, lse, q, v):
    """Checks of the backward-only tensors against q and v."""
    want = (q.shape[0], q.shape[1], v.shape[2])
    for name, t in (("dout", dout), ("out", out)):
        _check_3d(name, t, q.device)
        if tuple(t.shape) != want or t.dtype != q.dtype:
            raise ShapeError(f"{name} has shape {tuple(t.shape)} and dtype {t.dtype}; expected "
                             f"{want} and {q.dtype}")
    if tuple(lse.shape) != (q.shape[1], q.shape[0]) or lse.dtype != torch.float32:
        raise ShapeError(f"lse has shape {tuple(lse.shape)} and dtype {lse.dtype}; expected "
                         f"(heads_q, total_q) = {(q.shape[1], q.shape[0])} float32")


def _desc3(t):
    """A (total, heads, dim) tensor as cudadent_tensor_t: batch dropped (stride_batch 0)."""
    s = t.stride()
    return _abi.Tensor(t.data_ptr(), 0, s[0], s[1], s[2])


def _input3(t):
    """t when the C API takes its layout (contiguous head_dim, 16-byte aligned), else a copy."""
    s = t.stride()
    ok = s[2] == 1 and t.data_ptr() % 16 == 0 and all(
        t.shape[i] <= 1 or (s[i] != 0 and (s[i] * t.element_size()) % 16 == 0) for i in range(2))
    return t if ok else t.contiguous()


def _grad3(t):
    return torch.empty_like(t) if t.stride(2) == 1 else torch.empty(t.shape, dtype=t.dtype,
                                                                   device=t.device)


def _ptr(t):
    return t.data_ptr() if t is not None else None


def _fill_common(p, q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, wl, wr, det, softcap,
                 used):
    p.dtype = ops.DTYPES[q.dtype]
    p.batch = cu_q.shape[0] - 1
    p.seqlen_q, p.seqlen_k = max_q, max_k
    p.heads_q, p.heads_kv, p.head_dim = q.shape[1], k.shape[1], q.shape[2]
    p.softmax_scale, p.causal = scale, int(causal)
    p.window_left, p.window_right, p.deterministic = wl, wr, int(det)
    p.cu_seqlens_q, p.cu_seqlens_k, p.seqused_k = cu_q.data_ptr(), cu_k.data_ptr(), _ptr(used)
    p.total_q, p.total_k = q.shape[0], k.shape[0]
    p.head_dim_v = ops._head_dim_v(q.shape[2], v.shape[2])
    p.softcap = softcap


# ---- launch-parameter cache (ops.py's, with caches of its own) ---------------------------------
# A call's struct but for its pointers is decided by its signature: what ops._signature keys a
# dense call on (each tensor's shape, strides, dtype, device and pointer alignment; the scalar
# arguments), with the sequence arrays among the tensors (cu_seqlens_q's length is the batch),
# whether seqused_k is given, and max_seqlen_q / max_seqlen_k (params.seqlen_q / seqlen_k).
# total_q / total_k, heads and head dims are q, k, v's shapes. Every pointer the struct holds is
# rewritten on each call: the data pointers of the dense calls, then the three arrays'.
_SEQLENS_FIELDS = (("cu_seqlens_q",), ("cu_seqlens_k",), ("seqused_k",))
_FWD_PTR_FIELDS = ops._FWD_PTR_FIELDS + tuple(
    ops._field_offset(_abi.AttnFwdParams, f) for f in _SEQLENS_FIELDS)
_BWD_PTR_FIELDS = ops._BWD_PTR_FIELDS + tuple(
    ops._field_offset(_abi.AttnBwdParams, f) for f in _SEQLENS_FIELDS)


def _signature(tensors, cu_q, cu_k, used, max_q, max_k, scalars):
    """The cache key of a varlen call, or None (not cached) when an argument is not a plain
    torch.Tensor or a max_seqlen is not a plain int (check_varlen refuses it; 64.0 and True
    would otherwise find the key of 64 and 1)."""
    if type(max_q) is not int or type(max_k) is not int:
        return None
    arrays = (cu_q, cu_k) if used is None else (cu_q, cu_k, used)
    return ops._signature(tensors + arrays, (max_q, max_k, used is None) + scalars)


def _as_given(given, passed):
    """True when every tensor passed to the C library is the caller's own (no copy was made)."""
    return all(a is b for a, b in zip(given, passed))


def varlen_fwd_impl(q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, wl, wr, det, softcap,
                    used=None):
    key = _signature((q, k, v), cu_q, cu_k, used, max_q, max_k,
                     (scale, causal, wl, wr, det, softcap))
    cache = ops._caches().varlen_fwd
    hit = cache.get(key) if key is not None else None
    if hit is None:
        check_varlen(q, k, v, cu_q, cu_k, max_q, max_k, used)
    out = q.new_empty((q.shape[0], q.shape[1], v.shape[2]))
    lse = q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
    if ops.POISON_OUTPUTS:
        out.fill_(math.nan)
        lse.fill_(math.nan)
    lib = _library.load()
    if hit is not None:
        pq, pk, pv, po, plse, pcu_q, pcu_k, pused = hit.ptrs
        pq.value, pk.value, pv.value = q.data_ptr(), k.data_ptr(), v.data_ptr()
        po.value, plse.value = out.data_ptr(), lse.data_ptr()
        pcu_q.value, pcu_k.value, pused.value = cu_q.data_ptr(), cu_k.data_ptr(), _ptr(used)
        ops._launch_prepared(hit, lib.cudadent_attn_fwd, q.device, "cudadent_attn_fwd")
        return out, lse
    given = (q, k, v, cu_q, cu_k, used)
    qi, ki, vi = _input3(q), _input3(k), _input3(v)
    cu_q, cu_k = cu_q.contiguous(), cu_k.contiguous()
    used = used.contiguous() if used is not None else None
    p = _abi.AttnFwdParams()
    p.struct_size = ops._FWD_SIZE
    p.q, p.k, p.v, p.o = _desc3(qi), _desc3(ki), _desc3(vi), _desc3(out)
    p.lse = lse.data_ptr()
    _fill_common(p, q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, wl, wr, det, softcap, used)
    nbytes = ops._launch(lib.cudadent_attn_fwd_workspace_size, lib.cudadent_attn_fwd, p,
                         q.device, "cudadent_attn_fwd")
    if _as_given(given, (qi, ki, vi, cu_q, cu_k, used)):
        ops._remember(cache, key, p, _FWD_PTR_FIELDS, nbytes)
    return out, lse


def varlen_bwd_impl(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, scale, causal, wl, wr,
                    det, softcap, used=None):
    key = _signature((dout, q, k, v, out, lse), cu_q, cu_k, used, max_q, max_k,
                     (scale, causal, wl, wr, det, softcap))
    cache = ops._caches().varlen_bwd
    hit = cache.get(key) if key is not None else None
    if hit is None:
        check_varlen(q, k, v, cu_q, cu_k, max_q, max_k, used)
        _check_bwd_extra(dout, out, lse, q, v)
    dq, dk, dv = _grad3(q), _grad3(k), _grad3(v)
    if ops.POISON_OUTPUTS:
        for t in (dq, dk, dv):
            t.fill_(math.nan)
    lib = _library.load()
    if hit is not None:
        pq, pk, pv, po, pdo, pdq, pdk, pdv, plse, pcu_q, pcu_k, pused = hit.ptrs
        pq.value, pk.value, pv.value = q.data_ptr(), k.data_ptr(), v.data_ptr()
        po.value, pdo.value = out.data_ptr(), dout.data_ptr()
        pdq.value, pdk.value, pdv.value = dq.data_ptr(), dk.data_ptr(), dv.data_ptr()
        plse.value = lse.data_ptr()
        pcu_q.value, pcu_k.value, pused.value = cu_q.data_ptr(), cu_k.data_ptr(), _ptr(used)
        ops._launch_prepared(hit, lib.cudadent_attn_bwd, q.device, "cudadent_attn_bwd")
        return dq, dk, dv
    given = (q, k, v, out, dout, lse, cu_q, cu_k, used)
    qi, ki, vi, oi, doi = (_input3(t) for t in (q, k, v, out, dout))
    lse_i = lse.contiguous()
    cu_q, cu_k = cu_q.contiguous(), cu_k.contiguous()
    used = used.contiguous() if used is not None else None
    p = _abi.AttnBwdParams()
    p.struct_size = ops._BWD_SIZE
    p.q, p.k, p.v, p.o, p.dout = _desc3(qi), _desc3(ki), _desc3(vi), _desc3(oi), _desc3(doi)
    p.dq, p.dk, p.dv = _desc3(dq), _desc3(dk), _desc3(dv)
    p.lse = lse_i.data_ptr()
    _fill_common(p, q, k, v, cu_q, cu_k, max_q, max_k, scale, causal, wl, wr, det, softcap, used)
    nbytes = ops._launch(lib.cudadent_attn_bwd_workspace_size, lib.cudadent_attn_bwd, p,
                         q.device, "cudadent_attn_bwd")
    if _as_given(given, (qi, ki, vi, oi, doi, lse_i, cu_q, cu_k, used)):
        ops._remember(cache, key, p, _BWD_PTR_FIELDS, nbytes)
    return dq, dk, dv


@torch.library.custom_op("cudadent::attn_varlen_fwd", mutates_args=())
def attn_varlen_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    cu_seqlens_q: torch.Tensor, cu_seqlens_k: torch.Tensor, max_seqlen_q: int,
                    max_seqlen_k: int, softmax_scale: float, causal: bool = False,
                    window_left: int = -1, window_right: int = -1, deterministic: bool = False,
                    softcap: float = 0.0, seqused_k: Optional[torch.Tensor] = None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    return varlen_fwd_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           softmax_scale, causal, window_left, window_right, deterministic,
                           softcap, seqused_k)


@attn_varlen_fwd.register_fake
def _attn_varlen_fwd_fake(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                          softmax_scale, causal=False, window_left=-1, window_right=-1,
                          deterministic=False, softcap=0.0, seqused_k=None):
    out = q.new_empty((q.shape[0], q.shape[1], v.shape[2]))
    lse = q.new_empty((q.shape[1], q.shape[0]), dtype=torch.float32)
    return out, lse


@torch.library.custom_op("cudadent::attn_varlen_bwd", mutates_args=())
def attn_varlen_bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                    out: torch.Tensor, lse: torch.Tensor, cu_seqlens_q: torch.Tensor,
                    cu_seqlens_k: torch.Tensor, max_seqlen_q: int, max_seqlen_k: int,
                    softmax_scale: float, causal: bool = False, window_left: int = -1,
                    window_right: int = -1, deterministic: bool = False, softcap: float = 0.0,
                    seqused_k: Optional[torch.Tensor] = None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return varlen_bwd_impl(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                           max_seqlen_k, softmax_scale, causal, window_left, window_right,
                           deterministic, softcap, seqused_k)


@attn_varlen_bwd.register_fake
def _attn_varlen_bwd_fake(dout, q, k, v, out, lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                          max_seqlen_k, softmax_scale, causal=False, window_left=-1,
                          window_right=-1, deterministic=False, softcap=0.0, seqused_k=None):
    return _grad3(q), _grad3(k), _grad3(v)


# causal, window_left, window_right, deterministic, softcap, seqused_k
_VARLEN_DEFAULTS = (False, -1, -1, False, 0.0, None)
_N_REQUIRED = 8  # q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale


def _setup_context(ctx, inputs, output):
    q, k, v, cu_q, cu_k = inputs[:5]
    rest = tuple(inputs[5:]) + _VARLEN_DEFAULTS[len(inputs) - _N_REQUIRED:]
    max_q, max_k, scale, causal, wl, wr, det, softcap, used = rest
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse, cu_q, cu_k, used)
    ctx.attn_args = (max_q, max_k, scale, causal, wl, wr, det, softcap)


def _backward(ctx, dout, dlse):
    # dlse is ignored: lse is auxiliary (as in flash-attn)
    q, k, v, out, lse, cu_q, cu_k, used = ctx.saved_tensors
    if dout is None:
        dout = torch.zeros_like(out)
    max_q, max_k, scale, causal, wl, wr, det, softcap = ctx.attn_args
    dq, dk, dv = attn_varlen_bwd(dout, q, k, v, out, lse, cu_q, cu_k, max_q, max_k, scale,
                                 causal, wl, wr, det, softcap, used)
    return (dq, dk, dv) + (None,) * 11


attn_varlen_fwd.register_autograd(_backward, setup_context=_setup_context)


def varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                     causal=False, softmax_scale=None, window=(-1, -1), deterministic=False,
                     softcap=0.0, seqused_k=None):
    """(out, lse) of a ragged batch through the custom op (autograd with respect to q, k, v).
    Head dims that are not a multiple of 8 are padded with zeros (a copy), as attention() does."""
    from .functional import _autocast, _pad_last, _window
    for name, m in (("max_seqlen_q", max_seqlen_q), ("max_seqlen_k", max_seqlen_k)):
        if isinstance(m, torch.Tensor):
            raise BadSizeError(f"{name} is a tensor; pass a Python int (an upper bound of every "
                               f"sequence's length): reading a tensor would synchronize")
    q, k, v = _autocast(q, k, v)
    D, Dv = q.shape[-1], v.shape[-1]
    if softmax_scale is None:
        softmax_scale = 1.0 / math.sqrt(D)
    left, right = _window(window, "window")
    pad, pad_v = -D % 8, -Dv % 8
    q, k, v = _pad_last(q, pad), _pad_last(k, pad), _pad_last(v, pad_v)
    out, lse = torch.ops.cudadent.attn_varlen_fwd(
        q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q), int(max_seqlen_k),
        float(softmax_scale), bool(causal), left, right, bool(deterministic),
        0.0 if softcap is None else float(softcap), seqused_k)
    if pad_v:
        out = out[..., :Dv].contiguous()
    return out, lse


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                           softcap=0.0, alibi_slopes=None, deterministic=False,
                           return_attn_probs=False, block_table=None, seqused_k=None):
    """flash_attn.flash_attn_varlen_func with flash-attn 2's signature and semantics.

    q: (total_q, nheads, headdim); k, v: (total_k, nheads_k, headdim); cu_seqlens_q / _k:
    (batch + 1,) int32 prefix sums; max_seqlen_q / _k: ints (not tensors: no host sync).
    Returns out (total_q, nheads, headdim_v), or (out, softmax_lse, None) when
    return_attn_probs=True (softmax_lse: (nheads, total_q) float32; cudadent never materializes
    the probabilities). Causal masks and windows are bottom-right aligned within each sequence.
    seqused_k (FlashAttention-3's keyword, an addition to flash-attn 2's signature): an int32
    (batch,) device tensor; sequence b then attends to its first seqused_k[b] keys only.
    Arguments cudadent does not implement raise NotImplementedError naming the argument:
    dropout_p != 0, alibi_slopes, block_table (paged KV).
    """
    from .functional import _unsupported_in, _window
    fn = "flash_attn_varlen_func"
    if dropout_p is None or float(dropout_p) != 0.0:
        _unsupported_in(fn, "dropout_p", dropout_p, "cudadent has no attention dropout; pass 0.0")
    if alibi_slopes is not None:
        _unsupported_in(fn, "alibi_slopes", "<tensor>", "no ALiBi kernel; pass None")
    if block_table is not None:
        _unsupported_in(fn, "block_table", "<tensor>", "no paged KV cache; pass None")
    left, right = _window((-1, -1) if window_size is None else window_size, "window_size")
    out, lse = varlen_attention(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                causal=causal, softmax_scale=softmax_scale, window=(left, right),
                                deterministic=deterministic, softcap=softcap,
                                seqused_k=seqused_k)
    return (out, lse, None) if return_attn_probs else out
