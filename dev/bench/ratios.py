#!/usr/bin/env python3
"""ratios.py - cudadent / cuDNN per FA3-suite config from package-bench JSONs, side by side.

    python3 dev/bench/ratios.py A.json [B.json ...] [--labels a,b,..]

One column per JSON (a package bench, python -m cudadent.bench): the ratio of cudadent's
TFLOP/s to cuDNN's measured in the same process, per (head_dim, causal, seqlen, direction),
then the geometric mean and the count at or above 1.0 per direction. Where several JSONs share a
label (repeated runs of one library), the column is their median. Reads only what the bench
wrote; configs a JSON lacks show as '-'.
"""
import argparse
import json
import math
import statistics
from collections import defaultdict


def ratios(path):
    with open(path) as f:
        res = json.load(f)["results"]
    tf = {}
    for r in res:
        if r.get("suite") != "fa3" or "tflops" not in r or "error" in r:
            continue
        tf[(r["D"], r["causal"], r["S"], r["direction"], r["backend"])] = r["tflops"]
    out = {}
    for (D, c, S, d, b), v in tf.items():
        ref = tf.get((D, c, S, d, "cudnn"))
        if b == "cudadent" and ref:
            out[(D, c, S, d)] = v / ref
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("jsons", nargs="+")
    p.add_argument("--labels", default=None, help="one per JSON; equal labels are merged")
    a = p.parse_args()
    labels = a.labels.split(",") if a.labels else a.jsons
    if len(labels) != len(a.jsons):
        p.error("--labels: one label per JSON")
    runs = defaultdict(list)
    for lab, path in zip(labels, a.jsons):
        runs[lab].append(ratios(path))
    cols = list(dict.fromkeys(labels))
    merged = {}
    for lab in cols:
        keys = set().union(*runs[lab])
        merged[lab] = {k: statistics.median([r[k] for r in runs[lab] if k in r]) for k in keys}
    keys = sorted(set().union(*merged.values()), key=lambda k: (k[3], k[0], k[1], k[2]))
    w = max(13, max(len(c) for c in cols) + 1)
    print(f"{'direction':10} {'D':>4} {'mask':>6} {'S':>6}" + "".join(f"{c[-w + 1:]:>{w}}" for c in cols))
    for k in keys:
        D, c, S, d = k
        cells = "".join(f"{merged[lab][k]:>{w}.3f}" if k in merged[lab] else f"{'-':>{w}}"
                        for lab in cols)
        print(f"{d:10} {D:>4} {'causal' if c else '':>6} {S:>6}" + cells)
    for d in dict.fromkeys(k[3] for k in keys):
        cells = ""
        for lab in cols:
            v = [x for k, x in merged[lab].items() if k[3] == d]
            g = math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")
            cells += f"{f'{g:.3f} {sum(x >= 1.0 for x in v)}/{len(v)}':>{w}}"
        print(f"{d + ' geo':10} {'':>4} {'':>6} {'':>6}" + cells)


if __name__ == "__main__":
    main()
