#!/usr/bin/env python3
"""fwd_modes.py - the torch package's forward in each mode, side by side with SDPA's cuDNN backend
in one process, timed as python -m cudadent.bench times it (cudadent.bench.time_events):
no_grad without LSE (inference), no_grad with return_lse=True (the LSE kernel, no autograd), and
with gradients recorded (training forward), for cudadent and cuDNN.
  PYTHONPATH=python CUDADENT_LIBRARY=build-gpu/libcudadent.so python3 dev/sm90_fwd/fwd_modes.py"""
import math
import os
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import cudadent
from cudadent.bench import time_events

# DEV_LIB=path: also the dev library (check_fwd.py's Lib) with and without LSE, same inputs
DEV = None
if os.environ.get("DEV_LIB"):
    sys.path.insert(0, os.path.dirname(__file__))
    from check_fwd import Lib
    DEV = Lib(os.environ["DEV_LIB"])

CONFIGS = [(4, 4096, 16, 128, False), (2, 8192, 16, 128, False), (2, 8192, 32, 64, True),
           (32, 512, 32, 64, True), (1, 16384, 16, 128, False), (32, 512, 16, 128, True),
           (4, 4096, 32, 64, True)]
# ROUNDS (default 3): rounds over the modes, each opened by the next mode; ITERS calls a round
ROUNDS = int(os.environ.get("ROUNDS", "3"))
ITERS = int(os.environ.get("ITERS", "30"))
# ONLY_CONFIGS="B,S,H,D,causal;...": these instead of CONFIGS
if os.environ.get("ONLY_CONFIGS"):
    CONFIGS = [tuple(int(x) for x in c.split(",")[:4]) + (c.split(",")[4] == "1",)
               for c in os.environ["ONLY_CONFIGS"].split(";")]
# SIDE_STREAM=1: every call on a side stream, as python -m cudadent.bench runs them
STREAM = torch.cuda.Stream() if os.environ.get("SIDE_STREAM") == "1" else torch.cuda.current_stream()

for B, S, H, D, causal in CONFIGS:
    g = torch.Generator(device="cuda").manual_seed(S + D)
    q, k, v = (torch.randn((B, S, H, D), dtype=torch.bfloat16, device="cuda", generator=g)
               .requires_grad_(True) for _ in range(3))
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))
    flops = 4.0 * B * H * S * S * D / (2 if causal else 1)

    def cud():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    modes = {
        "cd nograd": (torch.no_grad, lambda: cudadent.attention(q, k, v, causal=causal)),
        "cd nograd+lse": (torch.no_grad, lambda: cudadent.attention(q, k, v, causal=causal,
                                                                    return_lse=True)),
        "cd grad": (torch.enable_grad, lambda: cudadent.attention(q, k, v, causal=causal)),
        "cudnn nograd": (torch.no_grad, cud),
        "cudnn grad": (torch.enable_grad, cud),
    }
    if DEV is not None:
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda")
        pl = DEV.params(q.detach(), k.detach(), v.detach(), o, lse, causal, -1, -1, 1 / math.sqrt(D))
        pn = DEV.params(q.detach(), k.detach(), v.detach(), o, None, causal, -1, -1, 1 / math.sqrt(D))
        modes["dev lse"] = (torch.no_grad, lambda: DEV.run(2, pl))
        modes["dev nolse"] = (torch.no_grad, lambda: DEV.run(2, pn))

        def dev_lse_fresh():  # out and lse allocated per call, as the package does
            o2 = torch.empty_like(q)
            lse2 = torch.empty(B, H, S, device="cuda")
            DEV.run(2, DEV.params(q.detach(), k.detach(), v.detach(), o2, lse2, causal, -1, -1,
                                  1 / math.sqrt(D)))
        modes["dev lse fresh"] = (torch.no_grad, dev_lse_fresh)
    res = {m: [] for m in modes}
    names = list(modes)
    # each mode opens one round in turn (docs/kernels/sm90_fwd.md section 7.2: the order edge)
    for r in range(ROUNDS):
        for i in range(len(names)):
            m = names[(i + r) % len(names)]
            ctx, fn = modes[m]
            with ctx(), torch.cuda.stream(STREAM):
                res[m].append(time_events(fn, 3, ITERS))
    print("%d,%d,%d,%d,%d  " % (B, S, H, D, causal) + "  ".join(
        "%s %.1f" % (m, flops / statistics.median(t) / 1e9) for m, t in res.items()), flush=True)
