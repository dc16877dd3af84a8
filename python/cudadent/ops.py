"""The torch custom ops cudadent::attn_fwd and cudadent::attn_bwd.

    cudadent::attn_fwd(q, k, v, softmax_scale, causal, window_left, window_right, deterministic)
        -> (out, lse)
    cudadent::attn_bwd(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right,
                       deterministic) -> (dq, dk, dv)

q: [batch, seqlen_q, heads_q, head_dim]; k, v: [batch, seqlen_k, heads_kv, head_dim]; fp16 or bf16
on one CUDA device. Masking is cudadent.h's: windows aligned to the bottom-right corner, causal is
window_right = 0. Both ops have fake (meta) implementations, so torch.compile traces them without
graph breaks; attn_fwd has an autograd formula that calls attn_bwd. The gradient of lse is not
propagated (lse is an auxiliary output, as in flash-attn).

Memory: out is allocated contiguous, lse as float32 [batch, heads_q, seqlen_q]; dq, dk, dv like
q, k, v (their strides when those are dense with a contiguous head_dim, else contiguous). Inputs
keep their batch/seq/head strides (no copy) when the head_dim is contiguous and the pointer and
strides are 16-byte aligned; otherwise a contiguous copy is passed. The workspace is a torch uint8
tensor from the caching allocator, sized by the C query. Calls run on torch.cuda.current_stream()
and allocate through torch only, so they can be captured in a CUDA graph.
"""
import ctypes
import math

import torch

from . import _abi, _library
from .errors import BadHeadsError, DeviceMismatchError, ShapeError, UnsupportedDtypeError

__all__ = ["attn_fwd", "attn_bwd", "DTYPES"]

DTYPES = {torch.float16: _abi.DType.FP16, torch.bfloat16: _abi.DType.BF16}

# Tests set this to True: outputs are NaN-filled before the C call, so an element the kernel
# does not write fails the comparison (DESIGN.md: poison outputs).
POISON_OUTPUTS = False

_FWD_SIZE = ctypes.sizeof(_abi.AttnFwdParams)
_BWD_SIZE = ctypes.sizeof(_abi.AttnBwdParams)


def _shape(t):
    return tuple(int(s) if not isinstance(s, torch.SymInt) else s for s in t.shape)


def _check_tensor(name, t, ndim):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"cudadent: {name} must be a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        what = "(batch, seqlen, heads, head_dim)" if ndim == 4 else "(batch, heads, seqlen_q)"
        raise ShapeError(f"{name} has shape {_shape(t)}; expected a {ndim}-d tensor {what}")
    if t.device.type != "cuda":
        raise DeviceMismatchError(f"{name} is on device '{t.device}'; expected a CUDA tensor")


def check_qkv(q, k, v):
    """Python-side checks of q, k, v: raise with a message naming the tensor at fault."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        _check_tensor(name, t, 4)
    for name, t in (("k", k), ("v", v)):
        if t.device != q.device:
            raise DeviceMismatchError(
                f"{name} is on device '{t.device}' but q is on '{q.device}'; expected one device")
    if q.dtype not in DTYPES:
        raise UnsupportedDtypeError(
            f"q has dtype {q.dtype}; expected torch.float16 or torch.bfloat16")
    for name, t in (("k", k), ("v", v)):
        if t.dtype != q.dtype:
            raise UnsupportedDtypeError(f"{name} has dtype {t.dtype}; expected q's dtype {q.dtype}")
    B, Sq, Hq, D = q.shape
    if k.shape[0] != B:
        raise ShapeError(f"k has batch {k.shape[0]} but q has batch {B} "
                         f"(q: {_shape(q)}, k: {_shape(k)}); expected the same batch")
    if k.shape[3] != D:
        raise ShapeError(f"k has head_dim {k.shape[3]} but q has head_dim {D} "
                         f"(q: {_shape(q)}, k: {_shape(k)}); expected the same head_dim")
    if v.shape != k.shape:
        raise ShapeError(f"v has shape {_shape(v)}; expected k's shape {_shape(k)}")
    if k.shape[2] == 0 or Hq % k.shape[2] != 0:
        raise BadHeadsError(f"q has {Hq} heads, which is not a multiple of the {k.shape[2]} heads "
                            f"of k and v (GQA/MQA need heads_q % heads_kv == 0)")


def check_bwd_extra(dout, out, lse, q):
    """Checks of the backward-only tensors against q."""
    for name, t in (("dout", dout), ("out", out)):
        _check_tensor(name, t, 4)
        if t.device != q.device:
            raise DeviceMismatchError(
                f"{name} is on device '{t.device}' but q is on '{q.device}'; expected one device")
        if t.shape != q.shape:
            raise ShapeError(f"{name} has shape {_shape(t)}; expected q's shape {_shape(q)}")
        if t.dtype != q.dtype:
            raise UnsupportedDtypeError(f"{name} has dtype {t.dtype}; expected q's dtype {q.dtype}")
    _check_tensor("lse", lse, 3)
    B, Sq, Hq, _ = q.shape
    if lse.shape != (B, Hq, Sq):
        raise ShapeError(f"lse has shape {_shape(lse)}; expected (batch, heads_q, seqlen_q) = "
                         f"{(B, Hq, Sq)} from q's shape {_shape(q)}")
    if lse.dtype != torch.float32:
        raise UnsupportedDtypeError(f"lse has dtype {lse.dtype}; expected torch.float32")
    if lse.device != q.device:
        raise DeviceMismatchError(
            f"lse is on device '{lse.device}' but q is on '{q.device}'; expected one device")


def _kernel_input(t):
    """t itself when the C API takes its layout as it is, else a contiguous copy."""
    ok = t.stride(3) == 1 and t.data_ptr() % 16 == 0
    if ok:
        for i in range(3):
            if t.shape[i] > 1:
                s = t.stride(i)
                if s == 0 or (s * t.element_size()) % 16 != 0:
                    ok = False
                    break
    return t if ok else t.clone(memory_format=torch.contiguous_format)


def _grad_like(t):
    """dq/dk/dv buffer: t's layout when dense with a contiguous head_dim, else contiguous."""
    if t.stride(3) == 1:
        return torch.empty_like(t)  # preserve_format: t's strides if t is dense, else contiguous
    return torch.empty(t.shape, dtype=t.dtype, device=t.device)


def _desc(t):
    s = t.stride()
    return _abi.Tensor(t.data_ptr(), s[0], s[1], s[2], s[3])


class _NoGuard:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_GUARD = _NoGuard()


def _device_guard(device):
    if torch.cuda.current_device() == device.index:
        return _NO_GUARD
    return torch.cuda.device(device)


def _workspace(query, params, device, function):
    nbytes = ctypes.c_size_t(0)
    _library.check(query(ctypes.byref(params), ctypes.byref(nbytes)), function + "_workspace_size")
    if nbytes.value == 0:
        return None, 0, None
    ws = torch.empty(nbytes.value, dtype=torch.uint8, device=device)  # caching allocator: 512-B aligned
    return ws, nbytes.value, ws.data_ptr()


@torch.library.custom_op("cudadent::attn_fwd", mutates_args=())
def attn_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax_scale: float,
             causal: bool = False, window_left: int = -1, window_right: int = -1,
             deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    check_qkv(q, k, v)
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    out = torch.empty((B, Sq, Hq, D), dtype=q.dtype, device=q.device)
    lse = torch.empty((B, Hq, Sq), dtype=torch.float32, device=q.device)
    if POISON_OUTPUTS:
        out.fill_(math.nan)
        lse.fill_(math.nan)
    qi, ki, vi = _kernel_input(q), _kernel_input(k), _kernel_input(v)
    p = _abi.AttnFwdParams(_FWD_SIZE, DTYPES[q.dtype], B, Sq, Sk, Hq, Hkv, D,
                           _desc(qi), _desc(ki), _desc(vi), _desc(out), lse.data_ptr(),
                           float(softmax_scale), int(causal), int(window_left), int(window_right),
                           int(deterministic))
    lib = _library.load()
    with _device_guard(q.device):
        ws, nbytes, ws_ptr = _workspace(lib.cudadent_attn_fwd_workspace_size, p, q.device,
                                        "cudadent_attn_fwd")
        stream = torch.cuda.current_stream(q.device).cuda_stream
        status = lib.cudadent_attn_fwd(ctypes.byref(p), ws_ptr, nbytes, stream)
    _library.check(status, "cudadent_attn_fwd")
    del ws  # freed to the caching allocator, which orders reuse after this stream's work
    return out, lse


@attn_fwd.register_fake
def _attn_fwd_fake(q, k, v, softmax_scale, causal=False, window_left=-1, window_right=-1,
                   deterministic=False):
    check_qkv(q, k, v)
    B, Sq, Hq, D = q.shape
    out = q.new_empty((B, Sq, Hq, D))
    lse = q.new_empty((B, Hq, Sq), dtype=torch.float32)
    return out, lse


@torch.library.custom_op("cudadent::attn_bwd", mutates_args=())
def attn_bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             out: torch.Tensor, lse: torch.Tensor, softmax_scale: float, causal: bool = False,
             window_left: int = -1, window_right: int = -1,
             deterministic: bool = False) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    check_qkv(q, k, v)
    check_bwd_extra(dout, out, lse, q)
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    dq, dk, dv = _grad_like(q), _grad_like(k), _grad_like(v)
    if POISON_OUTPUTS:
        for t in (dq, dk, dv):
            t.fill_(math.nan)
    qi, ki, vi = _kernel_input(q), _kernel_input(k), _kernel_input(v)
    oi, doi = _kernel_input(out), _kernel_input(dout)
    if not lse.is_contiguous() or lse.data_ptr() % 16 != 0:
        lse = lse.clone(memory_format=torch.contiguous_format)
    p = _abi.AttnBwdParams(_BWD_SIZE, DTYPES[q.dtype], B, Sq, Sk, Hq, Hkv, D,
                           _desc(qi), _desc(ki), _desc(vi), _desc(oi), _desc(doi),
                           _desc(dq), _desc(dk), _desc(dv), lse.data_ptr(),
                           float(softmax_scale), int(causal), int(window_left), int(window_right),
                           int(deterministic))
    lib = _library.load()
    with _device_guard(q.device):
        ws, nbytes, ws_ptr = _workspace(lib.cudadent_attn_bwd_workspace_size, p, q.device,
                                        "cudadent_attn_bwd")
        stream = torch.cuda.current_stream(q.device).cuda_stream
        status = lib.cudadent_attn_bwd(ctypes.byref(p), ws_ptr, nbytes, stream)
    _library.check(status, "cudadent_attn_bwd")
    del ws
    return dq, dk, dv


@attn_bwd.register_fake
def _attn_bwd_fake(dout, q, k, v, out, lse, softmax_scale, causal=False, window_left=-1,
                   window_right=-1, deterministic=False):
    check_qkv(q, k, v)
    check_bwd_extra(dout, out, lse, q)
    return _grad_like(q), _grad_like(k), _grad_like(v)


_FWD_DEFAULTS = (False, -1, -1, False)  # causal, window_left, window_right, deterministic


def _fwd_setup_context(ctx, inputs, output):
    q, k, v, softmax_scale = inputs[:4]
    rest = tuple(inputs[4:]) + _FWD_DEFAULTS[len(inputs) - 4:]
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.attn_args = (softmax_scale,) + rest


def _fwd_backward(ctx, dout, dlse):
    # dlse is ignored: lse is auxiliary (as in flash-attn); its gradient is not propagated.
    q, k, v, out, lse = ctx.saved_tensors
    if dout is None:
        dout = torch.zeros_like(out)
    dq, dk, dv = attn_bwd(dout, q, k, v, out, lse, *ctx.attn_args)
    return dq, dk, dv, None, None, None, None, None


attn_fwd.register_autograd(_fwd_backward, setup_context=_fwd_setup_context)
