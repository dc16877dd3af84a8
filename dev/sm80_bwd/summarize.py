"""summarize.py - one table of TFLOP/s from several run_gpu.sh bench logs: python3 summarize.py A-bench.txt ..."""
import re
import sys

pat = re.compile(r"bwd d(\d+) (causal|full)\s+b\s*\d+ h\s*\d+ s\s*(\d+): ours\s+[\d.]+ ms\s+([\d.]+) TF/s \| flash\s+[\d.]+ ms\s+([\d.]+) TF/s"
                 r"(?:.*det\s+[\d.]+ ms\s+([\d.]+) TF/s)?")
names, table, flash, det = [], {}, {}, {}
for path in sys.argv[1:]:
    name = path.split("/")[-1].replace("-bench.txt", "")
    names.append(name)
    for line in open(path):
        m = pat.search(line)
        if m:
            key = (int(m.group(1)), m.group(2), int(m.group(3)))
            table[(name, key)] = float(m.group(4))
            flash.setdefault(key, []).append(float(m.group(5)))
            if m.group(6):
                det[(name, key)] = float(m.group(6))
keys = sorted(flash)
print("shape            flash  " + " ".join(f"{n[:12]:>12s}" for n in names) + "   (TFLOP/s; ours/flash)")
for k in keys:
    f = sum(flash[k]) / len(flash[k])
    cells = []
    for n in names:
        v = table.get((n, k))
        cells.append(f"{v:6.1f} {v / f:4.2f}" if v else " " * 11)
        if (n, k) in det:
            cells[-1] += f" det {det[(n, k)]:5.1f}"
    print(f"d{k[0]:3d} {k[1][0]} s{k[2]:5d}  {f:6.1f}  " + "  ".join(cells))
