#!/usr/bin/env python3
"""sass_loops.py - opcode counts of every loop body (a backward branch and what it spans) with at
least 8 HGMMA, per kernel of a cuobjdump -sass listing: the main-loop steps of the sm90 forward
(one run each: right-edge masked, unmasked, left-window masked) and the loops around them.
  python3 dev/sm90_fwd/sass_loops.py FILE.sass [KERNEL_SUBSTRING...]"""
import collections
import re
import sys

kernels, fn = {}, None
for line in open(sys.argv[1]):
    m = re.search(r"Function : (\S+)", line)
    if m:
        fn = m.group(1)
        kernels[fn] = []
        continue
    m = re.search(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", line)
    if m and fn:
        kernels[fn].append((int(m.group(1), 16), m.group(3), m.group(4)))
want = sys.argv[2:]
for k, ins in kernels.items():
    if want and not any(w in k for w in want):
        continue
    print("== %s: %d instructions" % (k[:48], len(ins)))
    for a, op, rest in ins:
        t = re.search(r"0x([0-9a-f]+)", rest) if op.startswith("BRA") else None
        if not t or int(t.group(1), 16) >= a:
            continue
        body = [x for x in ins if int(t.group(1), 16) <= x[0] <= a]
        nh = sum(1 for x in body if x[1].startswith("HGMMA"))
        if nh >= 8 and len(body) < 1200:  # one step, not the tile loop around it
            c = collections.Counter(x[1].split(".")[0] for x in body)
            print("  loop %x-%x: %d instr, HGMMA %d, LDL %d: %s" % (int(t.group(1), 16), a, len(body), nh, c["LDL"],
                  " ".join("%s %d" % kv for kv in c.most_common(16))))
