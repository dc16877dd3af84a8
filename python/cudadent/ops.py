"""The torch custom ops cudadent::attn_fwd and cudadent::attn_bwd.

    cudadent::attn_fwd(q, k, v, softmax_scale, causal, window_left, window_right, deterministic,
                       softcap=0.0) -> (out, lse)
    cudadent::attn_bwd(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right,
                       deterministic, softcap=0.0) -> (dq, dk, dv)

q: [batch, seqlen_q, heads_q, head_dim]; k: [batch, seqlen_k, heads_kv, head_dim]; v: [batch,
seqlen_k, heads_kv, head_dim_v] (V's head dim may differ from Q and K's); out, dout: [batch,
seqlen_q, heads_q, head_dim_v]; fp16 or bf16 on one CUDA device. Head dims here go to the C
library as they are: it runs multiples of 8 up to 256 (cudadent.supported_head_dims says which in
this build); cudadent.attention and flash_attn_func pad other sizes. A head dim above 256 is
refused here (UnsupportedHeadDimError naming the supported set). softcap > 0: scores = softcap *
tanh(scores / softcap) (flash-attn's semantics, cudadent.h). Masking is cudadent.h's: windows
aligned to the bottom-right corner, causal is window_right = 0. Both ops have fake (meta)
implementations, so torch.compile traces them without graph breaks; attn_fwd has an autograd
formula that calls attn_bwd. The gradient of lse is not propagated (lse is an auxiliary output,
as in flash-attn).

Memory: out is allocated contiguous, lse as float32 [batch, heads_q, seqlen_q]; dq, dk, dv like
q, k, v (their strides when those are dense with a contiguous head_dim, else contiguous). Inputs
keep their batch/seq/head strides (no copy) when the head_dim is contiguous and the pointer and
strides are 16-byte aligned; otherwise a contiguous copy is passed. The workspace is a torch uint8
tensor from the caching allocator, sized by the C query. Calls run on torch.cuda.current_stream()
and allocate through torch only, so they can be captured in a CUDA graph.
"""
import collections
import ctypes
import math
import threading

import torch

from . import _abi, _library
from .errors import (BadHeadsError, DeviceMismatchError, ShapeError, UnsupportedDtypeError,
                     UnsupportedHeadDimError)

__all__ = ["attn_fwd", "attn_bwd", "attention_fwd", "fwd_impl", "bwd_impl", "DTYPES",
           "MAX_HEAD_DIM", "supported_head_dims_text"]

DTYPES = {torch.float16: _abi.DType.FP16, torch.bfloat16: _abi.DType.BF16}

# Tests set this to True: outputs are NaN-filled before the C call, so an element the kernel
# does not write fails the comparison (docs/DESIGN.md: poison outputs).
POISON_OUTPUTS = False

# The largest head dim (Q/K's and V's) any kernel of the C API takes (cudadent.h: multiples of 8
# up to 256; include/cudadent.h, issue 27).
MAX_HEAD_DIM = 256

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


def supported_head_dims_text(dtype=None):
    """The head dims the loaded library runs, for messages: the current device's list where there
    is one, else the union of the lists for compute capabilities 8.0 and 9.0 (no device needed),
    else what cudadent.h promises."""
    from . import _library
    name = "bf16" if dtype is None or dtype == torch.bfloat16 else "fp16"
    for queries in ((("fwd", 0),), (("fwd", 80), ("fwd", 90))):
        try:
            dims = sorted(set().union(*(_library.supported_head_dims(d, name, cc)
                                        for d, cc in queries)))
        except Exception:  # no library, no device: try the next answer
            continue
        if dims:
            where = "on this device" if queries[0][1] == 0 else "in this build"
            return f"{', '.join(map(str, dims))} ({where}: cudadent.supported_head_dims())"
    return ("multiples of 8 up to 256 where the library has kernels for them "
            "(cudadent.supported_head_dims())")


def _check_head_dim(name, dim, dtype):
    if dim > MAX_HEAD_DIM:
        raise UnsupportedHeadDimError(
            f"{name} = {dim} is above {MAX_HEAD_DIM}, the largest head dim cudadent runs "
            f"(supported: {supported_head_dims_text(dtype)})")


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
    if v.shape[:3] != k.shape[:3]:
        raise ShapeError(f"v has shape {_shape(v)}; expected k's (batch, seqlen, heads) "
                         f"{_shape(k)[:3]} (k: {_shape(k)}; v's head_dim may differ)")
    _check_head_dim("head_dim (q and k's last dimension)", D, q.dtype)
    _check_head_dim("head_dim_v (v's last dimension)", v.shape[3], q.dtype)
    if k.shape[2] == 0 or Hq % k.shape[2] != 0:
        raise BadHeadsError(f"q has {Hq} heads, which is not a multiple of the {k.shape[2]} heads "
                            f"of k and v (GQA/MQA need heads_q % heads_kv == 0)")


def check_bwd_extra(dout, out, lse, q, v):
    """Checks of the backward-only tensors against q and v."""
    want = tuple(q.shape[:3]) + (v.shape[3],)
    for name, t in (("dout", dout), ("out", out)):
        _check_tensor(name, t, 4)
        if t.device != q.device:
            raise DeviceMismatchError(
                f"{name} is on device '{t.device}' but q is on '{q.device}'; expected one device")
        if tuple(t.shape) != want:
            raise ShapeError(f"{name} has shape {_shape(t)}; expected (batch, seqlen_q, heads_q, "
                             f"head_dim_v) = {want} from q {_shape(q)} and v {_shape(v)}")
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
    st = t.stride()
    if st[3] == 1 and t.data_ptr() % 16 == 0:
        eb = t.element_size()
        shape = t.shape
        for i in range(3):
            if shape[i] > 1 and (st[i] == 0 or (st[i] * eb) % 16 != 0):
                break
        else:
            return t
    return t.clone(memory_format=torch.contiguous_format)


def _grad_like(t):
    """dq/dk/dv buffer: t's layout when dense with a contiguous head_dim, else contiguous."""
    if t.stride(3) == 1:
        return torch.empty_like(t)  # preserve_format: t's strides if t is dense, else contiguous
    return torch.empty(t.shape, dtype=t.dtype, device=t.device)


def _desc(t):
    s = t.stride()
    return _abi.Tensor(t.data_ptr(), s[0], s[1], s[2], s[3])


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def _stream(device):
    """cudaStream_t (as an int) of torch's current stream on device."""
    if _raw_stream is not None:
        return _raw_stream(device.index)
    return torch.cuda.current_stream(device).cuda_stream


class _NoGuard:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NO_GUARD = _NoGuard()


_get_device = getattr(torch._C, "_cuda_getDevice", None) or torch.cuda.current_device


def _device_guard(device):
    if _get_device() == device.index:
        return _NO_GUARD
    return torch.cuda.device(device)


def _launch(lib_query, lib_launch, params, device, function):
    """Workspace query, workspace from torch's allocator, launch on the current stream: the full
    path of a call. Returns the workspace size."""
    with _device_guard(device):
        n = ctypes.c_size_t(0)
        _library.check(lib_query(ctypes.byref(params), ctypes.byref(n)),
                       function + "_workspace_size")
        nbytes = n.value
        ws, ws_ptr = _workspace(nbytes, device)
        status = lib_launch(ctypes.byref(params), ws_ptr, nbytes, _stream(device))
    _library.check(status, function)
    # ws goes back to the caching allocator, which orders its reuse after this stream's work
    return nbytes


def _workspace(nbytes, device):
    """(tensor, pointer) of a workspace of nbytes from torch's caching allocator; (None, None)
    for none. The allocator's blocks are 512-byte aligned (the API asks for 256)."""
    if not nbytes:
        return None, None
    ws = torch.empty(nbytes, dtype=torch.uint8, device=device)
    return ws, ws.data_ptr()


# ---- launch-parameter cache ---------------------------------------------------------------------
# What a call's Python checks decide, its parameter struct (but for the data pointers) and its
# workspace size depend only on its signature: each tensor's shape, strides, dtype, device and
# pointer alignment, and the scalar arguments. The first call of a signature takes the full path
# (checks, workspace query) and keeps a _Prepared launch: its own params struct, views of the
# struct's data-pointer fields, the workspace size. A later call of the signature writes its data
# pointers through the views and launches the same struct: about half the host time per call
# (dev/pkg_overhead.py, bench/RESULTS.md), which is what a call costs when its GPU work is short.
# The caches are per thread, so that two threads never write one struct (ctypes releases the
# GIL during the C call). Signatures that needed an input copied are not kept. The C API still
# validates every call. The varlen ops (varlen.py) use the same machinery with caches of their
# own and more pointer fields (the sequence arrays). A launch captured in a CUDA graph keeps the
# kernel arguments of its call, so rewriting the struct afterwards does not change the graph.
_CACHE_MAX = 512
_tls = threading.local()


class _Prepared:
    """A signature's launch: params (the struct, reused), ref (byref of it), ptrs (c_void_p views
    of its data-pointer fields, in the order the impl writes them), nbytes (workspace size)."""
    __slots__ = ("params", "ref", "ptrs", "nbytes")

    def __init__(self, params, fields, nbytes):
        self.params = params
        self.ref = ctypes.byref(params)
        self.ptrs = tuple(ctypes.c_void_p.from_buffer(params, off) for off in fields)
        self.nbytes = nbytes


def _field_offset(struct, path):
    """Byte offset of a (possibly nested) field, e.g. ("q", "data")."""
    off, t = 0, struct
    for name in path:
        f = getattr(t, name)
        off += f.offset
        t = dict(t._fields_)[name]
    return off


# data-pointer fields, in the order fwd_impl / bwd_impl write them
_FWD_PTR_FIELDS = tuple(_field_offset(_abi.AttnFwdParams, f) for f in (
    ("q", "data"), ("k", "data"), ("v", "data"), ("o", "data"), ("lse",)))
_BWD_PTR_FIELDS = tuple(_field_offset(_abi.AttnBwdParams, f) for f in (
    ("q", "data"), ("k", "data"), ("v", "data"), ("o", "data"), ("dout", "data"),
    ("dq", "data"), ("dk", "data"), ("dv", "data"), ("lse",)))


_LaunchCaches = collections.namedtuple("_LaunchCaches", "fwd bwd varlen_fwd varlen_bwd")


def _caches():
    """This thread's launch caches, one per implementation: fwd_impl, bwd_impl (here) and
    varlen_fwd_impl, varlen_bwd_impl (varlen.py)."""
    c = getattr(_tls, "caches", None)
    if c is None:
        c = _tls.caches = _LaunchCaches({}, {}, {}, {})
    return c


def clear_launch_caches():
    """Forget this thread's prepared launches, dense and varlen (tests: the next call takes the
    full path)."""
    for cache in _caches():
        cache.clear()


def _tensor_key(t):
    return (t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15)


def _signature(tensors, scalars):
    """The cache key of a call, or None when an argument is not a plain torch.Tensor."""
    for t in tensors:
        if type(t) is not torch.Tensor:
            return None
    return tuple(_tensor_key(t) for t in tensors) + scalars


def _remember(cache, key, params, fields, nbytes):
    if key is None:
        return
    if len(cache) >= _CACHE_MAX:
        cache.clear()
    cache[key] = _Prepared(params, fields, nbytes)


def _launch_prepared(hit, lib_launch, device, function):
    """Launch a prepared struct (its data pointers already written) on the current stream."""
    if _get_device() != device.index:
        with torch.cuda.device(device):
            return _launch_prepared(hit, lib_launch, device, function)
    ws, ws_ptr = _workspace(hit.nbytes, device)
    status = lib_launch(hit.ref, ws_ptr, hit.nbytes, _stream(device))
    if status:
        _library.check(status, function)


def _head_dim_v(D, Dv):
    """params.head_dim_v: 0 (= head_dim, layout v1's call) where V's head dim is Q's."""
    return 0 if Dv == D else Dv


def fwd_impl(q, k, v, softmax_scale, causal, window_left, window_right, deterministic,
             softcap=0.0, need_lse=True):
    """The real forward (shared by the custom op and the eager fast path). need_lse=False
    passes lse = NULL (returns (out, None)): on Hopper the kernel then sums P's rows on the
    tensor core, a few percent faster with the same O (cudadent.h)."""
    key = _signature((q, k, v), (softmax_scale, causal, window_left, window_right,
                                 deterministic, softcap, need_lse))
    cache = _caches().fwd
    hit = cache.get(key) if key is not None else None
    if hit is None:
        check_qkv(q, k, v)
    B, Sq, Hq, D = q.shape
    Dv = v.shape[3]
    out = q.new_empty((B, Sq, Hq, Dv))
    lse = q.new_empty((B, Hq, Sq), dtype=torch.float32) if need_lse else None
    if POISON_OUTPUTS:
        out.fill_(math.nan)
        if lse is not None:
            lse.fill_(math.nan)
    lib = _library.load()
    if hit is not None:
        pq, pk, pv, po, plse = hit.ptrs
        pq.value, pk.value, pv.value = q.data_ptr(), k.data_ptr(), v.data_ptr()
        po.value = out.data_ptr()
        if lse is not None:
            plse.value = lse.data_ptr()
        _launch_prepared(hit, lib.cudadent_attn_fwd, q.device, "cudadent_attn_fwd")
        return out, lse
    Sk, Hkv = k.shape[1], k.shape[2]
    qi, ki, vi = _kernel_input(q), _kernel_input(k), _kernel_input(v)
    p = _abi.AttnFwdParams(_FWD_SIZE, DTYPES[q.dtype], B, Sq, Sk, Hq, Hkv, D,
                           _desc(qi), _desc(ki), _desc(vi), _desc(out),
                           lse.data_ptr() if lse is not None else None,
                           softmax_scale, causal, window_left, window_right, deterministic)
    p.head_dim_v = _head_dim_v(D, Dv)
    p.softcap = softcap
    nbytes = _launch(lib.cudadent_attn_fwd_workspace_size, lib.cudadent_attn_fwd, p, q.device,
                     "cudadent_attn_fwd")
    if qi is q and ki is k and vi is v:
        _remember(cache, key, p, _FWD_PTR_FIELDS, nbytes)
    return out, lse


def bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right,
             deterministic, softcap=0.0):
    """The real backward (shared by the custom op and the eager fast path)."""
    key = _signature((dout, q, k, v, out, lse), (softmax_scale, causal, window_left,
                                                 window_right, deterministic, softcap))
    cache = _caches().bwd
    hit = cache.get(key) if key is not None else None
    if hit is None:
        check_qkv(q, k, v)
        check_bwd_extra(dout, out, lse, q, v)
    dq, dk, dv = _grad_like(q), _grad_like(k), _grad_like(v)
    if POISON_OUTPUTS:
        for t in (dq, dk, dv):
            t.fill_(math.nan)
    lib = _library.load()
    if hit is not None:
        pq, pk, pv, po, pdo, pdq, pdk, pdv, plse = hit.ptrs
        pq.value, pk.value, pv.value = q.data_ptr(), k.data_ptr(), v.data_ptr()
        po.value, pdo.value = out.data_ptr(), dout.data_ptr()
        pdq.value, pdk.value, pdv.value = dq.data_ptr(), dk.data_ptr(), dv.data_ptr()
        plse.value = lse.data_ptr()
        _launch_prepared(hit, lib.cudadent_attn_bwd, q.device, "cudadent_attn_bwd")
        return dq, dk, dv
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    qi, ki, vi = _kernel_input(q), _kernel_input(k), _kernel_input(v)
    oi, doi = _kernel_input(out), _kernel_input(dout)
    lse_i = lse
    if not lse.is_contiguous() or lse.data_ptr() % 16 != 0:
        lse_i = lse.clone(memory_format=torch.contiguous_format)
    p = _abi.AttnBwdParams(_BWD_SIZE, DTYPES[q.dtype], B, Sq, Sk, Hq, Hkv, D,
                           _desc(qi), _desc(ki), _desc(vi), _desc(oi), _desc(doi),
                           _desc(dq), _desc(dk), _desc(dv), lse_i.data_ptr(),
                           softmax_scale, causal, window_left, window_right, deterministic)
    p.head_dim_v = _head_dim_v(D, v.shape[3])
    p.softcap = softcap
    nbytes = _launch(lib.cudadent_attn_bwd_workspace_size, lib.cudadent_attn_bwd, p, q.device,
                     "cudadent_attn_bwd")
    if qi is q and ki is k and vi is v and oi is out and doi is dout and lse_i is lse:
        _remember(cache, key, p, _BWD_PTR_FIELDS, nbytes)
    return dq, dk, dv


@torch.library.custom_op("cudadent::attn_fwd", mutates_args=())
def attn_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax_scale: float,
             causal: bool = False, window_left: int = -1, window_right: int = -1,
             deterministic: bool = False,
             softcap: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    return fwd_impl(q, k, v, softmax_scale, causal, window_left, window_right, deterministic,
                    softcap)


@attn_fwd.register_fake
def _attn_fwd_fake(q, k, v, softmax_scale, causal=False, window_left=-1, window_right=-1,
                   deterministic=False, softcap=0.0):
    check_qkv(q, k, v)
    B, Sq, Hq, _ = q.shape
    out = q.new_empty((B, Sq, Hq, v.shape[3]))
    lse = q.new_empty((B, Hq, Sq), dtype=torch.float32)
    return out, lse


@torch.library.custom_op("cudadent::attn_bwd", mutates_args=())
def attn_bwd(dout: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             out: torch.Tensor, lse: torch.Tensor, softmax_scale: float, causal: bool = False,
             window_left: int = -1, window_right: int = -1, deterministic: bool = False,
             softcap: float = 0.0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return bwd_impl(dout, q, k, v, out, lse, softmax_scale, causal, window_left, window_right,
                    deterministic, softcap)


@attn_bwd.register_fake
def _attn_bwd_fake(dout, q, k, v, out, lse, softmax_scale, causal=False, window_left=-1,
                   window_right=-1, deterministic=False, softcap=0.0):
    check_qkv(q, k, v)
    check_bwd_extra(dout, out, lse, q, v)
    return _grad_like(q), _grad_like(k), _grad_like(v)


# causal, window_left, window_right, deterministic, softcap
_FWD_DEFAULTS = (False, -1, -1, False, 0.0)


def _fwd_setup_context(ctx, inputs, output):
    q, k, v, softmax_scale = inputs[:4]
    rest = tuple(inputs[4:]) + _FWD_DEFAULTS[len(inputs) - 4:]
    out, lse = output
    ctx.save_for_backward(q, k, v, out, lse)
    ctx.attn_args = (softmax_scale,) + rest
    # lse's gradient is never used: without this autograd launches a kernel a call to fill a
    # zero dlse (session 23's ncu: 2 us a backward, the only kernel SDPA's cuDNN call lacks)
    ctx.set_materialize_grads(False)


def _fwd_backward(ctx, dout, dlse):
    # dlse is ignored: lse is auxiliary (as in flash-attn); its gradient is not propagated.
    q, k, v, out, lse = ctx.saved_tensors
    if dout is None:
        dout = torch.zeros_like(out)
    dq, dk, dv = attn_bwd(dout, q, k, v, out, lse, *ctx.attn_args)
    return dq, dk, dv, None, None, None, None, None, None


attn_fwd.register_autograd(_fwd_backward, setup_context=_fwd_setup_context)


# ---- eager fast path ----------------------------------------------------------------------------
# In plain eager mode, a custom op pays for the dispatcher and (with gradients) for a Python
# autograd kernel around it, tens of microseconds that matter for small shapes. attention() then
# calls the same implementations through this autograd.Function instead. Whenever anything may
# need the op itself (torch.compile / export tracing, a tensor subclass such as FakeTensor or
# DTensor, a dispatch or torch-function mode, functorch transforms), the op is used.
EAGER_FAST_PATH = True

_dispatch_depth = getattr(torch._C, "_len_torch_dispatch_stack", None)
_function_mode = getattr(torch._C, "_is_torch_function_mode_enabled", None)
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", None)
_FAST_PATH_POSSIBLE = None not in (_dispatch_depth, _function_mode, _functorch_active)


def use_fast_path(q, k, v):
    return (EAGER_FAST_PATH and _FAST_PATH_POSSIBLE and not torch.compiler.is_compiling()
            and type(q) is torch.Tensor and type(k) is torch.Tensor and type(v) is torch.Tensor
            and _dispatch_depth() == 0 and not _function_mode() and not _functorch_active())


class _EagerAttention(torch.autograd.Function):
    """attn_args: (softmax_scale, causal, window_left, window_right, deterministic, softcap) as
    one argument (apply's cost grows with the argument count)."""
    @staticmethod
    def forward(ctx, q, k, v, attn_args):
        out, lse = fwd_impl(q, k, v, *attn_args)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.attn_args = attn_args
        ctx.mark_non_differentiable(lse)
        ctx.set_materialize_grads(False)  # no zero-filled dlse (see _fwd_setup_context)
        return out, lse

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, dout, dlse):
        q, k, v, out, lse = ctx.saved_tensors
        if dout is None:
            dout = torch.zeros_like(out)
        dq, dk, dv = bwd_impl(dout, q, k, v, out, lse, *ctx.attn_args)
        return dq, dk, dv, None


def attention_fwd(q, k, v, softmax_scale, causal, window_left, window_right, deterministic,
                  softcap=0.0, need_lse=True):
    """(out, lse) through the eager fast path when possible, else through the custom op. On the
    eager path, where no gradient will be taken and need_lse is False, lse is None (the forward
    without LSE); the custom op always returns it."""
    if use_fast_path(q, k, v):
        if torch.is_grad_enabled() and (q.requires_grad or k.requires_grad or v.requires_grad):
            return _EagerAttention.apply(q, k, v, (softmax_scale, causal, window_left,
                                                   window_right, deterministic, softcap))
        return fwd_impl(q, k, v, softmax_scale, causal, window_left, window_right,
                        deterministic, softcap, need_lse=need_lse)
    return torch.ops.cudadent.attn_fwd(q, k, v, softmax_scale, causal, window_left,
                                       window_right, deterministic, softcap)
