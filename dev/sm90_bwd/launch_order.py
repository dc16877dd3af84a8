#!/usr/bin/env python3
"""A list-scheduling model of the sm90 backward's launch order (bwd_kernel.cuh
cd_sm90_bwd_work_of_block, config.cuh SM90_BWD_LPT_GROUP): 132 SMs, one CTA each; CTAs start in
launch order on the first free SM; a CTA takes C0 us plus C1 us a (64 x 128 x 128) block of work
(a d64 block is 128 x 128 x 64: the same FLOPs). A CTA of key block n (128 keys) walks the query
blocks that see it: all of them without a mask, those from the diagonal on under a causal mask,
once per query head of its KV head. C0 and C1 come from session 16's package bench (d128
non-causal over 1k-8k, docs/kernels/sm90_bwd.md section 6); with them the model gives d128 causal
4k 1.47 ms and GQA 32/8 causal 4k 3.06 ms against 1.50 and 3.12 measured.
Prints, per FA3-suite causal config and the GQA shapes, the makespan of today's order (chain by
chain) and of G chains at a time with key blocks ascending across them.
Run: python3 dev/sm90_bwd/launch_order.py [G]
"""
import heapq
import sys

SMS, C0, C1 = 132, 3.0, 2.6


def makespan(order, work):
    free = [0.0] * SMS
    for cta in order:
        t = heapq.heappop(free)
        heapq.heappush(free, t + C0 + work[cta])
    return max(free)


def orders(batch, heads_kv, group_heads, seqlen, head_dim, causal, group):
    block_m, block_n = (64 if head_dim == 128 else 128), 128
    nb, nm = seqlen // block_n, seqlen // block_m
    chains = batch * heads_kv
    work = {(c, n): ((nm - n * block_n // block_m) if causal else nm) * group_heads * C1
            for c in range(chains) for n in range(nb)}
    today = [(c, n) for c in range(chains) for n in range(nb)]
    grouped = [(c, n) for g in range(0, chains, group) for n in range(nb)
               for c in range(g, min(g + group, chains))]
    return makespan(today, work), makespan(grouped, work)


def main():
    group = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    print(f"makespan (us): today -> {group} chains at a time, key blocks ascending")
    for d in (64, 128):
        for s in (512, 1024, 2048, 4096, 8192, 16384):
            a, b = orders(16384 // s, 2048 // d, 1, s, d, True, group)
            print(f"  d{d} causal {s:5d}: {a:7.0f} -> {b:7.0f}  {a / b - 1:+.1%}")
        a, b = orders(4, 2048 // d, 1, 4096, d, False, group)
        print(f"  d{d} non-causal 4096: {a:7.0f} -> {b:7.0f}  {a / b - 1:+.1%}")
    for b_, s in ((4, 4096), (2, 8192)):
        a, b = orders(b_, 8, 4, s, 128, True, group)
        print(f"  GQA 32/8 d128 causal {s}: {a:7.0f} -> {b:7.0f}  {a / b - 1:+.1%}")


if __name__ == "__main__":
    main()
