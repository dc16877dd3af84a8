#!/usr/bin/env python3
"""trace_sass.py - what SM90_BWD_TRACE changes in the backward's main kernels' SASS (experiment 1
of docs/kernels/sm90_bwd_next.md, now sm90_bwd_trace.md): per kernel of both listings, the
instruction count, the HGMMA count and whether the sequence of the ops that order the kernel
(HGMMA, WARPGROUP.ARRIVE / DEPBAR, BAR.SYNC / ARV, STSM, MEMBAR, SYNCS, UBLKRED / UBLKCP / UTMALDG, MUFU.EX2, LDS) is the same;
with --diff, the differing runs of that sequence.

  nvcc -cubin -o k0.cubin -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -O3 \\
       -Iinclude -Isrc [-DCUDADENT_DEV -DSM90_BWD_D128_BM80=1] src/kernels/sm90/bwd.cu
  nvcc ... -DCUDADENT_DEV -DSM90_BWD_TRACE=1 [-DSM90_BWD_D128_BM80=1] ... -o k1.cubin
  cuobjdump -sass k0.cubin > k0.sass; cuobjdump -sass k1.cubin > k1.sass
  python3 dev/sm90_bwd/trace_sass.py k0.sass k1.sass [--diff]

(cuobjdump: dev/bench/local_sass.sh says where to get it.) Python 3 standard library only.
"""
import difflib
import re
import sys

KEY = re.compile(r"^(@!?U?P\w+ )?(HGMMA|WARPGROUP|BAR\.SYNC|BAR\.ARV|STSM|MEMBAR|SYNCS|UBLKRED|UBLKCP|UTMALDG|MUFU\.EX2|LDS)")


def functions(path):
    out, cur = {}, None
    for line in open(path):
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1)
            out[cur] = []
            continue
        if cur and re.search(r"/\*[0-9a-f]{4}\*/", line):
            out[cur].append(line.split("*/", 1)[1].split(";")[0].strip())
    return out


def key(ins):
    return [(x.split()[1] if x.startswith("@") else x.split()[0]) for x in ins if KEY.match(x)]


def runs(seq):
    out = []
    for x in seq:
        if out and out[-1][0] == x:
            out[-1][1] += 1
        else:
            out.append([x, 1])
    return ["%s x%d" % (x, n) for x, n in out]


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    a, b = functions(argv[1]), functions(argv[2])
    for name in sorted(a):
        if "bwd_kernel" not in name or name not in b:
            continue
        ka, kb = key(a[name]), key(b[name])
        hg = lambda s: sum(1 for x in s if x.startswith("HGMMA"))
        print("%-52s instr %5d -> %5d  HGMMA %3d -> %3d  ordering ops %s" % (
            name[:52], len(a[name]), len(b[name]), hg(ka), hg(kb), "same" if ka == kb else "differ"))
        if "--diff" in argv and ka != kb:
            for line in difflib.unified_diff(runs(ka), runs(kb), lineterm="", n=0):
                if not line.startswith(("---", "+++")):
                    print("    " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
