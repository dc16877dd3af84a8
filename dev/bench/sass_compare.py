#!/usr/bin/env python3
"""sass_compare.py - the sm90 forward kernels of two libraries, instruction by instruction.

    python3 dev/bench/sass_compare.py BASE.sass NEW.sass [--kernel sm90_fwd_kernel] [--map FILE]

Each input is `cuobjdump -sass LIB` output. Per kernel whose name contains --kernel: the
instruction counts and SAME where the two instruction streams are equal (immediates and
addresses masked), else the opcode counts that differ (new minus base). --map FILE pairs
kernels renamed since BASE: each line "OLD NEW" replaces the substring OLD of BASE's (mangled)
kernel names by NEW before the two are matched up.
"""
import argparse
import collections
import re


def load(path, want):
    kernels, cur = {}, None
    for line in open(path):
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = m.group(1) if want in m.group(1) else None
            if cur:
                kernels[cur] = []
            continue
        m = re.match(r"\s+/\*[0-9a-f]{4,}\*/\s+(.*?);", line)
        if cur and m:
            kernels[cur].append(re.sub(r"0x[0-9a-f]+", "X", m.group(1)))
    return kernels


def opcode(ins):
    words = ins.split()
    op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    return op.split(".")[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("base")
    p.add_argument("new")
    p.add_argument("--kernel", default="sm90_fwd_kernel")
    p.add_argument("--map", default=None)
    a = p.parse_args()
    base, new = load(a.base, a.kernel), load(a.new, a.kernel)
    if a.map:
        pairs = [l.split() for l in open(a.map) if l.strip() and not l.startswith("#")]
        renamed = {}
        for name, ins in base.items():
            for old, repl in pairs:
                name = name.replace(old, repl)
            renamed[name] = ins
        base = renamed
    for name in sorted(set(base) | set(new)):
        b, n = base.get(name, []), new.get(name, [])
        print(f"{name[:60]}: {len(b)} -> {len(n)} {'SAME' if b == n else 'differs'}")
        if b != n:
            cb = collections.Counter(map(opcode, b))
            cn = collections.Counter(map(opcode, n))
            print("    ", {o: cn[o] - cb[o] for o in sorted(set(cb) | set(cn)) if cn[o] != cb[o]})


if __name__ == "__main__":
    main()
