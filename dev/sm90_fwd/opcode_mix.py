"""opcode_mix.py - where a kernel's instructions and stall samples go, from ncu's SASS source page.

  ncu --import REP --page source --csv --print-source sass > src.csv
  python3 opcode_mix.py src.csv [src2.csv ...]

Per file: the warp-level instructions executed by opcode (the first word of each SASS line,
predicate dropped, modifiers dropped), largest first; the warp stall samples by reason; and the
samples by execution count (instructions run equally often form one region of the code: per
key block, per tile, per CTA), with each region's instruction count. Used to compare our kernel
and cuDNN's on the same call (docs/kernels/sm90_fwd.md section 7.1)."""
import csv
import sys
from collections import Counter, defaultdict


def rows_of(path):
    rows = list(csv.reader(open(path, errors="replace")))
    hdr = next(i for i, r in enumerate(rows) if "Source" in r and any("Instructions Executed" in c for c in r))
    return rows[hdr], [r for r in rows[hdr + 1:] if len(r) == len(rows[hdr])]


def num(x):
    try:
        return float(x.replace(",", "")) if x else 0.0
    except ValueError:
        return 0.0


def report(path):
    h, rows = rows_of(path)
    src = h.index("Source")
    ex = next(i for i, c in enumerate(h) if c.startswith("Instructions Executed"))
    smp = h.index("Warp Stall Sampling (All Samples)")
    stalls = [(i, c[len("stall_"):]) for i, c in enumerate(h) if c.startswith("stall_") and "Not Issued" not in c]
    ops, reasons, by_count, n_at = Counter(), Counter(), Counter(), Counter()
    reasons_at = defaultdict(Counter)
    for r in rows:
        words = r[src].split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        n = num(r[ex])
        ops[op.split(".")[0]] += n
        by_count[int(n)] += num(r[smp])
        n_at[int(n)] += 1
        for i, c in stalls:
            reasons[c] += num(r[i])
            reasons_at[int(n)][c] += num(r[i])
    total, samples = sum(ops.values()), sum(by_count.values())
    print("%s: %.4g warp instructions executed, %d stall samples" % (path, total, samples))
    for op, n in ops.most_common(28):
        print("  %-10s %12.4g %6.2f%%" % (op, n, 100 * n / total))
    print("  stalls: " + "  ".join("%s %.1f%%" % (c, 100 * v / samples) for c, v in reasons.most_common(10)))
    for n, s in by_count.most_common(8):
        top = " ".join("%s:%d" % (c, v) for c, v in reasons_at[n].most_common(4))
        print("  executed %8d times: %4d instructions, %5.1f%% of samples  %s" % (n, n_at[n], 100 * s / samples, top))


for path in sys.argv[1:]:
    report(path)
