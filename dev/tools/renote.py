#!/usr/bin/env python3
"""renote: rewrite citations of the removed experiment logs into the design notes.

Issue 23 removed the long chronological logs (dev/sm90_fwd/NOTES.md, dev/sm80_fwd/NOTES.md,
dev/sm80_bwd/NOTES.md; `git show 1d8cfb0:dev/sm90_fwd/NOTES.md` has them) in favour of one design
note per kernel (docs/kernels/*.md) and one line per step in bench/RESULTS.md. Code and scripts
cited the logs by step number ("dev/sm90_fwd/NOTES.md step 43", "NOTES.md steps 44-45", "NOTES
step 18", "dev/sm80_bwd/NOTES.md call 3") and, in the sm90 forward's sources, by bare step
number ("(step 43)", "steps 19, 28"). This tool rewrites each such citation to the design-note
section that now holds it ("docs/kernels/sm90_fwd.md section 5.3"), using the map
dev/tools/renote_map.tsv, and points a bare "DESIGN.md" at docs/DESIGN.md.

Run from the repository root:

    python3 dev/tools/renote.py [--dry-run] [--map FILE] [PATH ...]

PATHs are files or folders (default: the whole tree but .git, build folders and docs/ and bench/,
which hold the new text). It prints every change as `path:line: old -> new`, every citation it
could not map, and lines the rewrite made longer than 100 characters (to reflow by hand); with
--dry-run it writes nothing. Exit status: 0 when every citation found was mapped, 1 otherwise.
Idempotent: a rewritten citation no longer matches any pattern.

Which citations (see CITATION and BARE below):
  * [dev/<log>/]NOTES[.md] followed by "step(s) LIST", "call(s) N", "run N", ", exp0N[, exp0M]"
    or "Open", or by nothing (the log as a whole). Without the dev/<log>/ prefix the log is
    inferred from the citing file's path: sm80_fwd or sm80/fwd -> sm80_fwd, sm80_bwd or
    sm80/bwd -> sm80_bwd, anything else -> sm90_fwd (every bare "NOTES.md step" in the tree
    meant the sm90 forward's log).
  * bare "step(s) LIST" only in source files of the sm90 forward: a path with "src/" and "sm90"
    in it whose file name does not contain "bwd" (the sm90 backward has no numbered steps). In
    other files "step" means other things (gpu_run.sh steps, main-loop steps).
  * "DESIGN.md" not already preceded by "docs/" or a path (e.g. "../shared/").
LIST: numbers with optional letter suffixes (30a, 39c), joined by ", ", " and ", "/" or ranges
"44-45" / "44-47".
"""
import argparse
import fnmatch
import os
import re
import sys

SKIP_DIRS = {".git", "docs", "bench", "build", "build-gpu", "build-base", "build-pyenv",
             "build-pytest", "build-sanitize", "__pycache__", ".venv", "node_modules"}
TEXT_EXT = {".c", ".h", ".cu", ".cuh", ".cc", ".cpp", ".py", ".sh", ".md", ".txt", ".cmake",
            ".toml", ".in", ".tsv", ""}
NUM = r"\d+[a-z]?"
LIST = rf"{NUM}(?:\s*(?:-|–|,\s*|\s+and\s+|\s*/\s*)\s*{NUM})*"
CITATION = re.compile(
    r"(?:dev/(?P<log>sm90_fwd|sm80_fwd|sm80_bwd)/)?NOTES(?:\.md)?"
    r"(?P<tail>"
    rf"(?:,?\s+(?P<stepw>steps?)\s+(?P<steps>{LIST}))"
    r"|(?:,?\s+(?P<callw>calls?)\s+(?P<calls>" + LIST + r"))"
    r"|(?:,?\s+run\s+(?P<run>\d+))"
    r"|(?:,\s*(?P<exps>exp\d\d(?:,\s*exp\d\d)*))"
    r"|(?:\s+(?P<open>Open)\b)"
    r")?")
BARE = re.compile(rf"\b(?P<stepw>[Ss]teps?)\s+(?P<steps>{LIST})")
DESIGN = re.compile(r"(?<![\w/.\-])DESIGN\.md")


def load_map(path):
    exact, by_glob = {}, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) not in (2, 3):
                sys.exit(f"{path}:{n}: expected key<TAB>replacement[<TAB>path glob]")
            if len(parts) == 3:
                by_glob.append((parts[2], parts[0], parts[1]))
            else:
                exact[parts[0]] = parts[1]
    return exact, by_glob


def lookup(key, path, exact, by_glob):
    for glob, k, v in by_glob:
        if k == key and fnmatch.fnmatch(path, glob):
            return v
    return exact.get(key)


def expand(lst):
    """'44-45' -> [44, 45]; '19, 28' -> [19, 28]; '30a' -> [30]."""
    out = []
    for part in re.split(r"\s*(?:,\s*|\s+and\s+|/)\s*", lst.strip()):
        r = re.match(r"(\d+)[a-z]?\s*[-–]\s*(\d+)[a-z]?$", part)
        if r:
            a, b = int(r.group(1)), int(r.group(2))
            out += list(range(a, b + 1)) if a <= b else [a, b]
        elif re.match(r"\d+", part):
            out.append(int(re.match(r"\d+", part).group(0)))
    return out


def join_sections(targets):
    """['docs/X.md section 5.3', 'docs/X.md section 5.4'] -> 'docs/X.md sections 5.3, 5.4'."""
    uniq = []
    for t in targets:
        if t not in uniq:
            uniq.append(t)
    if len(uniq) == 1:
        return uniq[0]
    docs = {t.split(" section ")[0] for t in uniq}
    if len(docs) == 1 and all(" section " in t for t in uniq):
        return f"{docs.pop()} sections " + ", ".join(t.split(" section ")[1] for t in uniq)
    return "; ".join(uniq)


def infer_log(path):
    p = path.replace(os.sep, "/")
    if "sm80_fwd" in p or "sm80/fwd" in p:
        return "sm80_fwd"
    if "sm80_bwd" in p or "sm80/bwd" in p:
        return "sm80_bwd"
    return "sm90_fwd"


def is_sm90_fwd_source(path):
    p = path.replace(os.sep, "/")
    return ("src/" in p or p.startswith("src")) and "sm90" in p and "bwd" not in os.path.basename(p)


def rewrite_line(line, path, maps, problems):
    exact, by_glob = maps
    changes = []

    def citation(m):
        log = m.group("log") or infer_log(path)
        keys = []
        whole = lookup(f"{log} {(m.group('stepw') or '').lower()} {m.group('steps') or ''}",
                       path, exact, by_glob)
        if m.group("steps") and whole is not None:  # a list mapped as written ("steps 3-4")
            changes.append((m.group(0), whole))
            return whole
        if m.group("steps"):
            keys = [f"{log} step {n}" for n in expand(m.group("steps"))]
        elif m.group("calls"):
            keys = [f"{log} call {n}" for n in expand(m.group("calls"))]
        elif m.group("run"):
            keys = [f"{log} run {m.group('run')}"]
        elif m.group("exps"):
            keys = [f"{log} {e.strip()}" for e in m.group("exps").split(",")]
        elif m.group("open"):
            keys = [f"{log} Open"]
        else:
            keys = [log]
        targets = [lookup(k, path, exact, by_glob) for k in keys]
        if any(t is None for t in targets):
            problems.append((m.group(0), [k for k, t in zip(keys, targets) if t is None]))
            return m.group(0)
        new = join_sections(targets)
        changes.append((m.group(0), new))
        return new

    line = CITATION.sub(citation, line)
    if is_sm90_fwd_source(path):
        def bare(m):
            whole = lookup(f"sm90_fwd {m.group('stepw').lower()} {m.group('steps')}", path,
                           exact, by_glob)
            if whole is not None:  # a list mapped as written ("steps 3-4")
                changes.append((m.group(0), whole))
                return whole
            keys = [f"sm90_fwd step {n}" for n in expand(m.group("steps"))]
            targets = [lookup(k, path, exact, by_glob) for k in keys]
            if not keys or any(t is None for t in targets):
                problems.append((m.group(0), [k for k, t in zip(keys, targets) if t is None]))
                return m.group(0)
            new = join_sections(targets)
            changes.append((m.group(0), new))
            return new
        line = BARE.sub(bare, line)

    def design(m):
        new = lookup("DESIGN.md", path, exact, by_glob)
        if new is None:
            problems.append((m.group(0), ["DESIGN.md"]))
            return m.group(0)
        changes.append((m.group(0), new))
        return new

    line = DESIGN.sub(design, line)
    return line, changes


def files_under(paths):
    for root in paths:
        if os.path.isfile(root):
            yield root
            continue
        for d, dirs, files in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("build"))
            for name in sorted(files):
                if os.path.splitext(name)[1] in TEXT_EXT:
                    yield os.path.join(d, name)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=["."])
    ap.add_argument("--dry-run", action="store_true", help="report only, write nothing")
    ap.add_argument("--map", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "renote_map.tsv"))
    a = ap.parse_args(argv)
    maps = load_map(a.map)
    this = {os.path.abspath(__file__), os.path.abspath(a.map)}
    n_changes = n_files = 0
    unmapped = []
    for path in files_under(a.paths):
        if os.path.abspath(path) in this:
            continue
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        if "NOTES" not in text and "DESIGN.md" not in text and not is_sm90_fwd_source(path):
            continue
        out, changed = [], False
        rel = os.path.relpath(path)
        for i, line in enumerate(text.split("\n"), 1):
            problems = []
            new, changes = rewrite_line(line, rel, maps, problems)
            for old, rep in changes:
                if old != rep:
                    print(f"{rel}:{i}: {old} -> {rep}")
                    n_changes += 1
            for old, keys in problems:
                print(f"{rel}:{i}: NOT MAPPED: {old!r} (keys {', '.join(keys) or 'none'})")
                unmapped.append((rel, i, old))
            if new != line:
                changed = True
                if len(new) > 100 >= len(line):
                    print(f"{rel}:{i}: note: the line is now {len(new)} characters (reflow)")
            out.append(new)
        if changed:
            n_files += 1
            if not a.dry_run:
                with open(path, "w", encoding="utf-8") as f:
                    f.write("\n".join(out))
    verb = "would change" if a.dry_run else "changed"
    print(f"renote: {verb} {n_changes} citations in {n_files} files; "
          f"{len(unmapped)} not mapped")
    return 1 if unmapped else 0


if __name__ == "__main__":
    sys.exit(main())
