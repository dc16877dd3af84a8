#!/usr/bin/env python3
"""pkg_overhead.py - host (CPU) time per call of the torch package against SDPA's cuDNN backend.

  CUDADENT_LIBRARY=build/libcudadent.so PYTHONPATH=python python3 dev/pkg_overhead.py [--profile]

For each backend (cuDNN; cudadent; cudadent with every call on the full path, without the
launch-parameter caches of ops.py and varlen.py) and mode (no_grad; grad recorded, as the package
bench's fwd_train): the host time per call of a loop of calls on a tiny shape (fewer calls than the
launch queue holds, so the figure is the host's cost), and on the FA3-suite shape d128 causal 512
(32 x 16 heads) the per-call CUDA event median (what the package bench reports) beside a
back-to-back loop (events around 50 calls, divided by 50); for the cudadent backends also the host
time per call of flash_attn_varlen_func on a tiny ragged batch (the varlen ops' launch cache,
varlen.py).
--profile: cProfile of the package's grad-mode call, by own time.
--breakdown: the host time of each piece of the eager call on the tiny shape, each timed alone
(the same loop as above), so that the pieces of the grad-mode call can be added up.
"""
import contextlib
import cProfile
import pstats
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import cudadent


def inputs(B, S, H, D, grad, backend):
    """q, k, v as the package bench makes them: (B, S, H, D) for cudadent, contiguous
    (B, H, S, D) for SDPA"""
    g = torch.Generator(device="cuda").manual_seed(0)
    shape = (B, S, H, D) if backend == "cudadent" else (B, H, S, D)
    return [torch.randn(*shape, device="cuda", dtype=torch.bfloat16, generator=g)
            .requires_grad_(grad) for _ in range(3)]


def calls(backend, q, k, v):
    if backend == "cudadent":
        return lambda: cudadent.attention(q, k, v, causal=True)
    return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)


def varlen_call():
    """flash_attn_varlen_func on a tiny ragged batch: sequences of 64 and 128 tokens, 1 head,
    head_dim 64, q/k/v leaves that require grad (grad mode decides)"""
    g = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(192, 1, 64, device="cuda", dtype=torch.bfloat16, generator=g)
               .requires_grad_(True) for _ in range(3))
    cu = torch.tensor([0, 64, 192], dtype=torch.int32, device="cuda")
    return lambda: cudadent.flash_attn_varlen_func(q, k, v, cu, cu, 128, 128, causal=True)


def host_us(fn, n=300, reps=5):
    """Host microseconds per call: n calls (fewer than the launch queue holds, so the host never
    waits for the GPU), best of reps."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, time.perf_counter() - t0)
        torch.cuda.synchronize()
    return best / n * 1e6


def event_us(fn, iters=30):
    for _ in range(50):  # also brings the clocks up
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for s, e in ev:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    per_call = statistics.median(s.elapsed_time(e) for s, e in ev) * 1e3
    loop = []
    for _ in range(5):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(50):
            fn()
        e.record()
        e.synchronize()
        loop.append(s.elapsed_time(e) / 50 * 1e3)
    return per_call, statistics.median(loop)


def main():
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, cudadent "
          f"{cudadent.__file__}")
    from cudadent import ops
    cached_signature = ops._signature
    for backend in ("cudnn", "cudadent", "cudadent-nocache"):
        # cudadent-nocache: every call takes the full path (no launch-parameter cache, ops.py)
        ops._signature = (lambda *a: None) if backend == "cudadent-nocache" else cached_signature
        for grad in (False, True):
            ctx = sdpa_kernel([SDPBackend.CUDNN_ATTENTION]) if backend == "cudnn" else \
                contextlib.nullcontext()
            which = "cudnn" if backend == "cudnn" else "cudadent"
            with ctx:
                # leaves that require grad, as in the package bench; grad mode decides
                with torch.set_grad_enabled(grad):
                    tiny = calls(which, *inputs(1, 128, 1, 64, True, which))
                    big = calls(which, *inputs(32, 512, 16, 128, True, which))
                    h = host_us(tiny)
                    per_call, loop = event_us(big)
            mode = "grad" if grad else "no_grad"
            print(f"{backend:16s} {mode:8s} host per call (tiny, 1x128x1x64): {h:6.1f} us | "
                  f"d128 causal 512 32x16: event per call {per_call:6.1f} us, "
                  f"loop of 50 {loop:6.1f} us/call", flush=True)
            if backend != "cudnn":
                with torch.set_grad_enabled(grad):
                    h = host_us(varlen_call())
                print(f"{backend:16s} {mode:8s} host per call (varlen, 64 + 128 tokens, 1 head, "
                      f"d64): {h:6.1f} us", flush=True)
    ops._signature = cached_signature
    if "--breakdown" in sys.argv:
        breakdown()
    if "--profile" in sys.argv:
        q, k, v = inputs(1, 128, 1, 64, True, "cudadent")
        fn = calls("cudadent", q, k, v)
        host_us(fn, 200)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(2000):
            fn()
        pr.disable()
        torch.cuda.synchronize()
        pstats.Stats(pr).sort_stats("tottime").print_stats(25)


def breakdown():
    """Host microseconds of the pieces of cudadent.attention(q, k, v, causal=True) on the tiny
    shape, each in a loop of its own (best of 5 loops of 300)."""
    from cudadent import ops
    q, k, v = inputs(1, 128, 1, 64, True, "cudadent")
    qs, ks, vs = inputs(1, 128, 1, 64, True, "cudnn")
    args = (0.125, True, -1, -1, False)

    class Empty2(torch.autograd.Function):  # the package's Function without its kernel
        @staticmethod
        def forward(ctx, q, k, v, a):
            out, lse = torch.empty_like(q), q.new_empty((1, 1, 128), dtype=torch.float32)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.attn_args = a
            ctx.mark_non_differentiable(lse)
            return out, lse

    class Empty1(torch.autograd.Function):  # one output; lse saved as an intermediate
        @staticmethod
        def forward(ctx, q, k, v, a):
            out, lse = torch.empty_like(q), q.new_empty((1, 1, 128), dtype=torch.float32)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.attn_args = a
            return out

    class Bare(torch.autograd.Function):  # apply itself: no saving
        @staticmethod
        def forward(ctx, q, k, v, a):
            return torch.empty_like(q)

    shape = (1, 128, 1, 64)
    pieces = [
        ("attention(), grad", lambda: cudadent.attention(q, k, v, causal=True), True),
        ("attention(), no_grad", lambda: cudadent.attention(q, k, v, causal=True), False),
        ("sdpa cudnn, grad", lambda: F.scaled_dot_product_attention(qs, ks, vs, is_causal=True),
         True),
        ("ops.attention_fwd (grad)", lambda: ops.attention_fwd(q, k, v, *args), True),
        ("_EagerAttention.apply", lambda: ops._EagerAttention.apply(q, k, v, args), True),
        ("fwd_impl (cached, with lse)", lambda: ops.fwd_impl(q, k, v, *args), False),
        ("Function.apply, 2 outputs, no kernel", lambda: Empty2.apply(q, k, v, args), True),
        ("Function.apply, 1 output, no kernel", lambda: Empty1.apply(q, k, v, args), True),
        ("Function.apply, bare", lambda: Bare.apply(q, k, v, args), True),
        ("use_fast_path", lambda: ops.use_fast_path(q, k, v), True),
        ("_signature", lambda: ops._signature((q, k, v), args + (True,)), True),
        ("torch.empty(shape, dtype, device) x2", lambda: (
            torch.empty(shape, dtype=q.dtype, device=q.device),
            torch.empty((1, 1, 128), dtype=torch.float32, device=q.device)), True),
        ("q.new_empty x2", lambda: (q.new_empty(shape),
                                    q.new_empty((1, 1, 128), dtype=torch.float32)), True),
        ("torch.cuda.current_device()", torch.cuda.current_device, True),
        ("torch._C._cuda_getDevice()", torch._C._cuda_getDevice, True),
        ("stream pointer", lambda: ops._stream(q.device), True),
        ("event record()", torch.cuda.Event(enable_timing=True).record, True),
        ("event record(stream)", lambda ev=torch.cuda.Event(enable_timing=True),
         st=torch.cuda.current_stream(): ev.record(st), True),
    ]
    for name, fn, grad in pieces:
        with torch.set_grad_enabled(grad):
            print(f"  {name:40s} {host_us(fn):6.2f} us", flush=True)
    # the C call alone on a prepared struct whose buffers (keep) stay alive while it is timed
    lib, stream = ops._library.load(), ops._stream(q.device)
    print(f"  {'C cudadent_get_version (ctypes call)':40s} {host_us(lib.cudadent_get_version):6.2f} us")
    if hasattr(ops, "_caches"):
        keep = ops.fwd_impl(q, k, v, *args)
        # the key fwd_impl gave it: (scale, causal, windows, deterministic, softcap, need_lse)
        prepared = ops._caches()[0][ops._signature((q, k, v), args + (0.0, True))]
        fn = lambda: lib.cudadent_attn_fwd(prepared.ref, None, 0, stream)  # noqa: E731
        print(f"  {'C cudadent_attn_fwd (prepared struct)':40s} {host_us(fn):6.2f} us")
        del keep


if __name__ == "__main__":
    main()
