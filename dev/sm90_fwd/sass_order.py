#!/usr/bin/env python3
"""sass_order.py - for each kernel in a cuobjdump -sass listing, the order of the instructions
that decide overlap in the sm90 forward: HGMMA runs, WARPGROUP.DEPBAR (wgmma waits), MUFU.EX2 runs,
named barriers. Shows whether the softmax's EX2s sit between the S wait (DEPBAR gsb0 0x1) and the
P V wait (DEPBAR gsb0 0x0), i.e. whether ptxas kept the intra-warpgroup overlap.
  python3 dev/sm90_fwd/sass_order.py FILE.sass"""
import re
import sys

kernel, seq = None, []


def flush():
    if kernel and seq:
        print(kernel)
        print("   " + " | ".join("%s x%d" % (k, n) if n > 1 else k for k, n in seq))


for line in open(sys.argv[1]):
    m = re.search(r"Function : (\S+)", line)
    if m:
        flush()
        kernel, seq = m.group(1), []
        continue
    m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);", line)
    if not m:
        continue
    op, rest = m.group(2), m.group(3)
    key = None
    if op.startswith("HGMMA"):
        key = "HGMMA"
    elif op.startswith("WARPGROUP.DEPBAR"):
        key = "WAIT" + rest.replace("gsb0,", "").replace(" ", "")
    elif op == "MUFU.EX2":
        key = "EX2"
    elif op.startswith("BAR.SYNC") or op.startswith("BAR.ARV"):
        key = op.split(".")[1]
    if key is None:
        continue
    if seq and seq[-1][0] == key:
        seq[-1][1] += 1
    else:
        seq.append([key, 1])
flush()
