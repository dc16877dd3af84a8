#!/usr/bin/env python3
"""short_model.py - the two CPU models of docs/kernels/sm80_fwd.md section 10 (d256 at short lengths).

    python3 dev/sm80_fwd/short_model.py

1. DRAM reads of K / V under an LRU model of the L2 (50 MiB, 64 KiB units: a K + V tile of 64 keys,
   a Q tile of 64 rows x 512 B; O written at a CTA's end, allocating): CTAs dispatched in grid order
   to the SMs as they free, each reading its K / V tiles evenly over its duration (F + n t, jittered
   2%). For the portable forward's 128 x 64 tile (one CTA an SM: 132 slots) in today's order and in
   the grouped order of dispatch.h CUDADENT_SM80_FWD_WIDE8_SHORT, and for FA2's 64 x 64 tile on an
   H200 (two CTAs an SM: 264 slots, query tiles of a head consecutive, ascending).
2. Makespan of the causal grid under list scheduling (CTA durations F + n t with t = 3.33 us a
   key tile and F = 6.0 us a CTA, fitted to session 30's times; +-5% jitter, 20 seeds): today's
   order, the groups all descending, and the snake the kernel takes (cd_sm80_fwd_grouped_tile).
The orders are written as the kernel's decode (fwd_kernel.cuh); check_layout.cu part 5 checks that
decode itself.
"""
import collections
import heapq
import random

F, T = 6.0, 3.33  # us: per-CTA cost and per 64-key tile (128 rows), section 10.2
SMS = 132


def grouped(x, bhc, mb, g):
    """cd_sm80_fwd_grouped_tile: (bh, m_block) of CTA x"""
    per = g * mb
    grp, r = divmod(x, per)
    first = grp * g
    gs = min(g, bhc - first)
    level = r // gs
    groups = (bhc + g - 1) // g
    desc = (groups - 1 - grp) % 2 == 0
    return first + r - level * gs, (mb - 1 - level) if desc else level


def order(kind, bhc, mb, g=None):
    for x in range(bhc * mb):
        if kind == "today":
            yield x % bhc, mb - 1 - x // bhc
        elif kind == "grouped":
            yield grouped(x, bhc, mb, g)
        elif kind == "desc":  # every group descending
            per = g * mb
            grp, r = divmod(x, per)
            gs = min(g, bhc - grp * g)
            yield grp * g + r % gs, mb - 1 - r // gs
        else:  # FA2: query tiles of a head consecutive, ascending
            yield x // mb, x % mb


def tiles(m, bm, nb, causal):
    return min(nb, ((m + 1) * bm + 63) // 64) if causal else nb


def dram_kv(S, causal, bm, slots, kind, g=None, l2_mib=50, seed=1):
    B, H = 16384 // S, 8
    bhc, mb, nb = B * H, S // bm, S // 64
    rnd = random.Random(seed)
    free = [(0.0, i) for i in range(slots)]
    acc = []
    for bh, m in order(kind, bhc, mb, g):
        t0, slot = heapq.heappop(free)
        n = tiles(m, bm, nb, causal)
        d = (F + n * T) * (1 + rnd.uniform(-0.02, 0.02))
        acc.append((t0, ("Q", bh, m), bm * 512))
        for i, k in enumerate(range(n - 1, -1, -1)):
            acc.append((t0 + i * d / (n + 1), ("KV", bh, k), 65536))
        acc.append((t0 + d, ("O", bh, m), bm * 512))
        heapq.heappush(free, (t0 + d, slot))
    acc.sort(key=lambda a: a[0])
    lru, used, miss, cap = collections.OrderedDict(), 0, 0, l2_mib << 20
    for _, key, size in acc:
        if key in lru:
            lru.move_to_end(key)
            continue
        if key[0] == "KV":
            miss += size
        lru[key] = size
        used += size
        while used > cap:
            used -= lru.popitem(last=False)[1]
    return miss / 2**20


def makespan(durs):
    free = [0.0] * SMS
    end = 0.0
    for d in durs:
        t = heapq.heappop(free)
        heapq.heappush(free, t + d)
        end = max(end, t + d)
    return end


def group_of(S):  # cd_sm80_fwd_order_group at d256 h8 (16 MiB of K / V a group)
    return (16 << 20) // (S * 512 * 2) if S // 128 <= 16 else 16384 // S * 8


def main():
    print("1. K / V read from DRAM (MiB; 128 MiB unique), d256 h8, 16k tokens")
    for S in (512, 2048, 8192):
        for causal in (False, True):
            g = group_of(S)
            row = [f"today {dram_kv(S, causal, 128, SMS, 'today'):5.0f}",
                   f"grouped G={g} {dram_kv(S, causal, 128, SMS, 'grouped', g):5.0f}",
                   f"FA2 64x64 {dram_kv(S, causal, 64, 2 * SMS, 'fa2'):5.0f}"]
            print(f"   S {S:5d} {'causal' if causal else 'full  '}: " + ", ".join(row))
    print("2. causal makespan / mean work (list scheduling, +-5% jitter, 20 seeds)")
    for S in (512, 1024, 2048):  # from 4k (32 query tiles) the kernel keeps today's order
        B, H = 16384 // S, 8
        bhc, mb, nb = B * H, S // 128, S // 64
        g = max(1, (16 << 20) // (S * 1024))
        mean = sum(F + tiles(m, 128, nb, True) * T for m in range(mb)) * bhc / SMS
        out = []
        for kind in ("today", "desc", "grouped"):
            durs = [F + tiles(m, 128, nb, True) * T for _, m in order(kind, bhc, mb, g)]
            ms = sum(makespan([d * (1 + random.Random(s * 7919 + i).uniform(-0.05, 0.05))
                               for i, d in enumerate(durs)]) for s in range(20)) / 20
            out.append(f"{kind} {ms / mean:.3f}")
        print(f"   S {S:5d} (G={g}): " + ", ".join(out))


if __name__ == "__main__":
    main()
