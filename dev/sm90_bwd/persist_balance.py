#!/usr/bin/env python3
"""A list-scheduling model of the sm90 backward's persistent static stride (config.cuh
SM90_BWD_PERSISTENT 1, bwd_persist.cuh) against the hardware's dispatch of the library's grid, on
SMs of unequal speed (docs/kernels/sm90_bwd_next.md section 10, session 32, hypothesis 1).
Units of equal work (dense, no mask: 2,048 at every FA3-suite d128 shape), T us a unit at speed 1;
SM i runs at speed s_i, drawn uniform in [1 - a, 1 + a], and each unit's time has its own factor
(1 + e), e normal with deviation NOISE (cold L2, DRAM, the first blocks' latency). The library: launch order, each unit to
the first free SM, plus GAP us a CTA (launch, prologue). The stride: CTA c (on a random SM) takes
units c, c + G, ..., no gap. Prints, per spread a, the mean makespans over draws and their ratio,
and the launch-index spread in flight at mid-span (max - min + 1 of the units running).
Run: python3 dev/sm90_bwd/persist_balance.py [units T_us gap_us [noise]]
"""
import heapq
import random
import sys

SMS = 132


def library(speeds, units, t, gap, f):
    free = [(0.0, i) for i in range(len(speeds))]
    heapq.heapify(free)
    runs = []
    for u in range(units):
        t0, i = heapq.heappop(free)
        t1 = t0 + gap + t * f[u] / speeds[i]
        runs.append((t0, t1, u))
        heapq.heappush(free, (t1, i))
    return runs


def stride(speeds, units, t, perm, f):
    runs = []
    for c in range(len(speeds)):
        t0 = 0.0
        for u in range(c, units, len(speeds)):
            t1 = t0 + t * f[u] / speeds[perm[c]]
            runs.append((t0, t1, u))
            t0 = t1
    return runs


def summary(runs):
    end = max(r[1] for r in runs)
    live = [u for t0, t1, u in runs if t0 <= end / 2 < t1]
    return end, max(live) - min(live) + 1


def main(argv):
    units, t, gap = (int(argv[1]), float(argv[2]), float(argv[3])) if len(argv) > 3 else (2048, 630.0, 5.0)
    noise = float(argv[4]) if len(argv) > 4 else 0.0
    rng = random.Random(1)
    print("units %d, %.0f us a unit, gap %.1f us a library CTA, unit-time noise %.0f%%" % (units, t, gap, 100 * noise))
    for a in (0.0, 0.01, 0.02, 0.03, 0.05, 0.08):
        lib, per = [], []
        for _ in range(100):
            speeds = [1 + rng.uniform(-a, a) for _ in range(SMS)]
            perm = list(range(SMS))
            rng.shuffle(perm)
            f = [max(0.2, 1 + rng.gauss(0, noise)) for _ in range(units)]
            lib.append(summary(library(speeds, units, t, gap, f)))
            per.append(summary(stride(speeds, units, t, perm, f)))
        ml, mp = sum(x[0] for x in lib) / len(lib), sum(x[0] for x in per) / len(per)
        print("speeds +-%2.0f%%: library %7.0f us, stride %7.0f us, stride / library %.3f; in flight at mid-span: "
              "index spread %4.0f / %4.0f" % (100 * a, ml, mp, mp / ml, sum(x[1] for x in lib) / len(lib),
                                             sum(x[1] for x in per) / len(per)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
