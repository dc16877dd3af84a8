"""ncu_one_call.py - one backward (or, with --forward, one forward with gradients recorded, as in
a training step) of one backend between cudaProfilerStart / Stop, for `ncu --profile-from-start
off` (dev/sm90_bwd/ncu_compare.sh): the package bench's own forward
(cudadent.bench_backends.make_forward, so cudadent and SDPA's cuDNN run exactly as the bench
times them), three untimed calls first, then the profiled one.

    python dev/sm90_bwd/ncu_one_call.py --backend cudadent|cudnn --batch 4 --heads 16 --seqlen 4096
        --head-dim 128 [--head-dim-v 128] [--heads-kv 16] [--causal] [--forward]
"""
import argparse

import torch

from cudadent.bench_backends import make_forward


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--heads-kv", type=int, default=None)
    p.add_argument("--seqlen", type=int, required=True)
    p.add_argument("--head-dim", type=int, required=True)
    p.add_argument("--head-dim-v", type=int, default=None)
    p.add_argument("--causal", action="store_true")
    p.add_argument("--forward", action="store_true")
    a = p.parse_args()
    hkv, dv = a.heads_kv or a.heads, a.head_dim_v or a.head_dim
    g = torch.Generator(device="cuda").manual_seed(0)
    mk = lambda h, d: torch.randn(a.batch, a.seqlen, h, d, device="cuda", dtype=torch.bfloat16,  # noqa: E731
                                  generator=g).requires_grad_(True)
    q, k, v = mk(a.heads, a.head_dim), mk(hkv, a.head_dim), mk(hkv, dv)
    fwd, ctx, leaves, _ = make_forward(a.backend, q, k, v, a.causal, "bshd")
    with ctx:
        o = fwd()
        dout = torch.randn_like(o)
        call = fwd if a.forward else lambda: torch.autograd.grad(o, leaves, dout, retain_graph=True)
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        call()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
