"""dev/bench/gemm_after_attn.py - do the GEMMs that follow an attention backward run slower after
cudadent's than after cuDNN's? (A question of session 27: in the training bench's profiled steps
the cuBLAS GEMMs took 0.4-1.8% more GPU time in cudadent's steps than in SDPA's at the same
median SM clock, which ate about half of the attention kernels' gain at d128-s4k and more than
all of it at gqa4-s4k on an H100; bench/RESULTS.md session 27.)

One process, one GPU, bf16. A round per backend (cudadent, then SDPA's cuDNN, order shuffled each
round): the attention's forward with LSE and backward of the d128-s4k config (4 x 4096, 16 / 8
heads, d128, causal), then at once a fixed train of GEMMs of that model's MLP shapes, timed by CUDA
events around the GEMM train only. The control: the same GEMM train after an idle gap (a sleep
after the previous train's synchronize) with no attention before it. NVML's SM clock and power
are sampled (every 2 ms) while the host waits for each GEMM train, where pynvml imports
(cudadent.gpu_monitor). If the GEMMs after
cudadent's attention run slower than after cuDNN's and both slower than the control, the cause
is in the GPU's state after the kernels (clock, power, L2), not in the training step's code.

  CUDADENT_LIBRARY=... PYTHONPATH=python python3 dev/bench/gemm_after_attn.py [--rounds 20]
Prints one line per backend: GEMM train ms (median, min-max), SM MHz and watts (medians), and the
ratio to the control and to the other backend.
"""
import argparse
import random
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import cudadent
from cudadent.gpu_monitor import GpuMonitor

B, S, HQ, HKV, D = 4, 4096, 16, 8, 128
TOKENS, HIDDEN, FF = B * S, HQ * D, 5632


def attention_step(backend, q, k, v, dout):
    """forward with LSE (gradients recorded) and backward of one attention call"""
    if backend == "cudadent":
        out = cudadent.attention(q, k, v, causal=True)
    else:
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                 is_causal=True, enable_gqa=True).transpose(1, 2)
    torch.autograd.grad(out, (q, k, v), dout)


def gemm_train(x, w_up, w_down, reps):
    """the MLP's GEMMs of one layer's forward, reps times (up / gate projections and the down one)"""
    for _ in range(reps):
        h = x @ w_up
        x2 = h[:, :FF] @ w_down
    return x2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--reps", type=int, default=8, help="GEMM pairs a train (~1 ms each on an H100)")
    ap.add_argument("--gap-ms", type=float, default=50.0, help="idle gap before the control train")
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    q = torch.randn(B, S, HQ, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(B, S, HKV, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(B, S, HKV, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
    dout = torch.randn(B, S, HQ, D, device=dev, dtype=torch.bfloat16)
    x = torch.randn(TOKENS, HIDDEN, device=dev, dtype=torch.bfloat16)
    w_up = torch.randn(HIDDEN, 2 * FF, device=dev, dtype=torch.bfloat16) * 0.02
    w_down = torch.randn(FF, HIDDEN, device=dev, dtype=torch.bfloat16) * 0.02
    labels = ("cudadent", "cudnn", "control")
    for label in labels[:2]:  # warm-up, both paths compiled and autotuned
        attention_step(label, q, k, v, dout)
    gemm_train(x, w_up, w_down, args.reps)
    torch.cuda.synchronize()
    times = {lab: [] for lab in labels}
    mon = GpuMonitor(period_s=0.002)
    mon.start()
    for _ in range(args.rounds):
        order = list(labels)
        random.shuffle(order)
        for lab in order:
            if lab == "control":
                time.sleep(args.gap_ms / 1000.0)
            else:
                attention_step(lab, q, k, v, dout)
                torch.cuda.synchronize()  # so that the samples below see the GEMMs only; the
                # gap is a launch latency (tens of us), short against the clock's and the power
                # limiter's reaction (ms)
            t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0.record()
            gemm_train(x, w_up, w_down, args.reps)
            t1.record()
            mon.tag = lab  # samples while the host waits: the GEMM train's time
            t1.synchronize()
            mon.tag = None
            times[lab].append(t0.elapsed_time(t1))
            torch.cuda.synchronize()
    mon.stop()
    med = {lab: statistics.median(times[lab]) for lab in labels}
    for lab in labels:
        g = mon.summary(lab)
        c = f", SM {g['sm_mhz']:.0f} MHz, {g['watts']:.0f} W ({g['samples']} samples)" if g else ""
        print(f"{lab:9s} GEMM train {med[lab]:.3f} ms (min {min(times[lab]):.3f}, max {max(times[lab]):.3f}; "
              f"{len(times[lab])} rounds){c}; vs control {med[lab] / med['control']:.4f}")
    print(f"cudadent / cudnn: {med['cudadent'] / med['cudnn']:.4f}")


if __name__ == "__main__":
    main()
