"""opcode_mix.py - executed instructions per opcode from ncu's SASS source page.

  ncu --import REP --page source --csv --print-source sass > src.csv
  python3 opcode_mix.py src.csv [src2.csv ...]

Prints, per file, the warp-level instructions executed by opcode (the first word of each SASS
line, predicate dropped, modifiers kept up to the first dot), largest first, and the total; used
to compare how our kernel and cuDNN's spend their instructions on the same call."""
import csv
import sys
from collections import Counter


def mix(path):
    rows = list(csv.reader(open(path, errors="replace")))
    hdr = next(i for i, r in enumerate(rows) if "Source" in r and any("Instructions Executed" in c for c in r))
    h = rows[hdr]
    src = h.index("Source")
    ex = next(i for i, c in enumerate(h) if c.startswith("Instructions Executed"))
    count = Counter()
    for r in rows[hdr + 1:]:
        if len(r) != len(h):
            continue
        try:
            n = float(r[ex].replace(",", ""))
        except ValueError:
            continue
        words = r[src].split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        count[op.split(".")[0]] += n
    return count


for path in sys.argv[1:]:
    c = mix(path)
    total = sum(c.values())
    print("%s: %.4g warp instructions executed" % (path, total))
    for op, n in c.most_common(28):
        print("  %-10s %12.4g %6.2f%%" % (op, n, 100 * n / total))
