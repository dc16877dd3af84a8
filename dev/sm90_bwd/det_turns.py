#!/usr/bin/env python3
"""The sm90 backward's deterministic dQ turns (src/kernels/sm90/bwd_kernel.cuh) simulated on the
CPU, for the turn orders of config.cuh SM90_BWD_DET_DESCENDING. Each CTA (key block n of one
(batch, KV head) chain) walks (query head, query block) as the kernel does (head outer, query
blocks cd_mask_q_blocks); a block's reduce into (head, m) may go when that tile's count equals
its turn (ascending: n - first key block of m; descending: last key block of m - n, with the key
blocks launched in descending order). Time is in steps: every resident CTA does at most one
block a step, its reduce counted at the step's end; CTAs become resident in launch order as
slots free (one CTA an SM).

Checks, over many masks and shapes: no deadlock with 3 or 132 slots, and each tile's turns are
0..k-1 once each, k = last - first + 1 (the mask rule's functions, written again here from
src/kernels/common/mask_rule.cuh). Then the steps of a b4 x 8 KV heads x 4 query heads s4k d128
(BLOCK_M 64) call, without ordering ("free"), ascending and descending: the prediction for
SM90_BWD_DET_DESCENDING. Run: python3 dev/sm90_bwd/det_turns.py
"""


def q_blocks(k0, k1, sq, sk, wl, wr, bm):
    shift, lo, hi = sk - sq, 0, sq - 1
    if wr >= 0 and k0 - shift - wr > lo:
        lo = k0 - shift - wr
    if wl >= 0 and k1 - shift + wl < hi:
        hi = k1 - shift + wl
    return (0, 0) if lo > hi else (lo // bm, hi // bm + 1)


def first_key_block(m, bm, bn, sq, sk, wl):
    if wl < 0:
        return 0
    k_lo = m * bm + (sk - sq) - wl
    return 0 if k_lo <= 0 else k_lo // bn


def last_key_block(m, bm, bn, sq, sk, wr, nb):
    if wr < 0:
        return nb - 1
    k_hi = m * bm + bm - 1 + (sk - sq) + wr
    return -1 if k_hi < 0 else min(k_hi // bn, nb - 1)


def simulate(sq, sk, wl, wr, bm, bn, heads_per_kv, chains, slots, mode):
    """Steps to finish, or None on a deadlock; asserts each tile's turns."""
    nb = (sk + bn - 1) // bn
    desc = mode == "desc" and wr >= 0
    ctas = []
    for ch in range(chains):
        for x in range(nb):  # launch order: blockIdx.x
            n = nb - 1 - x if desc else x
            lo, hi = q_blocks(n * bn, min(n * bn + bn, sk) - 1, sq, sk, wl, wr, bm)
            work = [(ch, h, m) for h in range(heads_per_kv) for m in range(lo, hi)]
            turns = [last_key_block(m, bm, bn, sq, sk, wr, nb) - n if desc
                     else n - first_key_block(m, bm, bn, sq, sk, wl) for _, _, m in work]
            ctas.append({"work": work, "turns": turns, "i": 0})
    count, seen, resident, launched, steps = {}, {}, [], 0, 0
    while launched < len(ctas) or resident:
        resident = [c for c in resident if c["i"] < len(c["work"])]
        while len(resident) < slots and launched < len(ctas):
            resident.append(ctas[launched])
            launched += 1
        done = []
        for c in resident:
            if c["i"] == len(c["work"]):
                continue
            tile, turn = c["work"][c["i"]], c["turns"][c["i"]]
            if mode == "free" or count.get(tile, 0) == turn:
                assert turn >= 0
                done.append(tile)
                seen.setdefault(tile, []).append(turn)
                c["i"] += 1
        if resident and not done and any(c["i"] < len(c["work"]) for c in resident):
            return None
        for tile in done:
            count[tile] = count.get(tile, 0) + 1
        steps += 1
    if mode != "free":
        for (ch, h, m), ts in seen.items():
            assert sorted(ts) == list(range(len(ts))), ((h, m), ts)
            k = last_key_block(m, bm, bn, sq, sk, wr, nb) - first_key_block(m, bm, bn, sq, sk, wl) + 1
            assert len(ts) == k, ((h, m), len(ts), k)
    return steps


def main():
    deadlocks = 0
    for sq, sk in [(1000, 1000), (4096, 4096), (300, 1000), (1000, 300), (1, 1000), (2049, 2048),
                   (20000, 20000)]:
        for wl, wr in [(-1, 0), (-1, -1), (200, 30), (33, 7), (500, -1), (-1, 100), (0, 0)]:
            for bm in (64, 128):
                for slots in (3, 132):
                    for mode in ("asc", "desc"):
                        if simulate(sq, sk, wl, wr, bm, 128, 4 if sq < 5000 else 1, 1, slots,
                                    mode) is None:
                            deadlocks += 1
                            print("DEADLOCK", sq, sk, (wl, wr), bm, slots, mode)
    print(f"orders checked; deadlocks: {deadlocks}")
    print("b4 x 8 KV heads x 4 query heads, s4k, BLOCK_M 64, 132 SMs: steps")
    for wl, wr in [(-1, 0), (-1, -1), (256, 64)]:
        r = {m: simulate(4096, 4096, wl, wr, 64, 128, 4, 32, 132, m) for m in ("free", "asc", "desc")}
        print(f"  window ({wl},{wr}): free {r['free']}, ascending {r['asc']} "
              f"({r['asc'] / r['free']:.2f}x), descending {r['desc']} ({r['desc'] / r['free']:.2f}x)")


if __name__ == "__main__":
    main()
