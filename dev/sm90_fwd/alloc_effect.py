#!/usr/bin/env python3
"""alloc_effect.py - why the package's forward with LSE times slower than the dev library's at
some shapes (fwd_modes.py: "dev lse" 432 vs "dev lse fresh" 376 TFLOP/s at d64 causal 4k, same
kernel and SASS): the dev library's LSE call timed with its outputs preallocated, rebuilt params,
fresh out and/or lse per call, or two alternating output pairs; per-call event median (as the
package bench) and events around a loop of calls, plus the host time per call.
  python3 dev/sm90_fwd/alloc_effect.py LIB"""
import math
import statistics
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from check_fwd import Lib  # noqa: E402

lib = Lib(sys.argv[1])
CONFIGS = [(4, 4096, 32, 64, 1), (4, 4096, 16, 128, 0), (1, 16384, 16, 128, 0)]


def per_call_and_loop(fn, iters=30):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    t0 = time.perf_counter()
    for s, e in ev:
        s.record()
        fn()
        e.record()
    host = (time.perf_counter() - t0) / iters * 1e6
    torch.cuda.synchronize()
    per = statistics.median(s.elapsed_time(e) for s, e in ev)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    e.synchronize()
    return per, s.elapsed_time(e) / iters, host


for B, S, H, D, causal in CONFIGS:
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q, k, v = (torch.randn((B, S, H, D), dtype=torch.bfloat16, device="cuda", generator=g)
               for _ in range(3))
    flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
    scale = 1 / math.sqrt(D)
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device="cuda")
    pairs = [(torch.empty_like(q), torch.empty(B, H, S, device="cuda")) for _ in range(2)]
    p_fixed = lib.params(q, k, v, o, lse, causal, -1, -1, scale)
    state = {"i": 0}

    def prealloc():
        lib.run(2, p_fixed)

    def rebuilt_params():
        lib.run(2, lib.params(q, k, v, o, lse, causal, -1, -1, scale))

    def fresh_both():
        o2, l2 = torch.empty_like(q), torch.empty(B, H, S, device="cuda")
        lib.run(2, lib.params(q, k, v, o2, l2, causal, -1, -1, scale))

    def fresh_lse():
        l2 = torch.empty(B, H, S, device="cuda")
        lib.run(2, lib.params(q, k, v, o, l2, causal, -1, -1, scale))

    def fresh_out():
        o2 = torch.empty_like(q)
        lib.run(2, lib.params(q, k, v, o2, lse, causal, -1, -1, scale))

    def alternating():
        state["i"] ^= 1
        o2, l2 = pairs[state["i"]]
        lib.run(2, lib.params(q, k, v, o2, l2, causal, -1, -1, scale))

    def nolse_fresh_out():
        o2 = torch.empty_like(q)
        lib.run(2, lib.params(q, k, v, o2, None, causal, -1, -1, scale))

    modes = dict(prealloc=prealloc, rebuilt_params=rebuilt_params, fresh_both=fresh_both,
                 fresh_lse=fresh_lse, fresh_out=fresh_out, alternating=alternating,
                 nolse_fresh_out=nolse_fresh_out)
    res = {m: [] for m in modes}
    for _ in range(3):  # rounds, round robin
        for m, fn in modes.items():
            res[m].append(per_call_and_loop(fn))
    print(f"{B},{S},{H},{D},{causal}: TFLOP/s per-call median / loop, host us per call")
    for m, rs in res.items():
        per = statistics.median(r[0] for r in rs)
        loop = statistics.median(r[1] for r in rs)
        host = statistics.median(r[2] for r in rs)
        print(f"  {m:16s} {flops / per / 1e9:7.1f} / {flops / loop / 1e9:7.1f}   host {host:6.1f}")
