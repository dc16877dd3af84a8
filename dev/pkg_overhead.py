#!/usr/bin/env python3
"""pkg_overhead.py - host (CPU) time per call of the torch package against SDPA's cuDNN backend.

  CUDADENT_LIBRARY=build/libcudadent.so PYTHONPATH=python python3 dev/pkg_overhead.py [--profile]

For each backend (cuDNN; cudadent; cudadent with every call on the full path, without the
launch-parameter cache of ops.py) and mode (no_grad; grad recorded, as the package bench's
fwd_train): the host time per call of a loop of calls on a tiny shape (fewer calls than the
launch queue holds, so the figure is the host's cost), and on the FA3-suite shape d128 causal 512 (32 x 16 heads) the per-call CUDA
event median (what the package bench reports) beside a back-to-back loop (events around 50
calls, divided by 50). --profile: cProfile of the package's grad-mode call, by own time.
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
    ops._signature = cached_signature
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


if __name__ == "__main__":
    main()
