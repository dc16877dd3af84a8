#!/usr/bin/env python3
"""Summary of flash-attn test runs against cudadent: reads the plugin's JSON lines (one or more
files: files of several shards or calls are merged, a case seen twice counts once, its last
record), writes summary.json and summary.txt.

    summarize.py --out DIR [--commit TEXT] RESULTS.jsonl ...

Per file (label): cases collected (after any -k / function selection), run, and their outcome:
passed, failed, error, refused by cudadent (by category), skipped by flash-attn's own skips (by
reason), not run (time budget). Where only part of the collection ran (--sample, --shard, the
time budget), each function's counts are also scaled up to its collected count ("estimate for
the whole collection": each function's sample stands for its function) with the time it would
take at the sample's mean time per case. "dense core" is issue 27's set: the non-varlen,
non-kvcache functions (115,550 cases at flash-attn 0251105a).
No torch needed.
"""
import argparse
import collections
import json
import os
import sys

DENSE_CORE = {
    "fa2": {"test_flash_attn_output", "test_flash_attn_qkvpacked", "test_flash_attn_causal",
            "test_flash_attn_deterministic", "test_flash_attn_splitkv",
            "test_flash_attn_race_condition", "test_flash_attn_bwd_overflow",
            "test_flash_attn_bwd_transpose"},
    "hopper": {"test_flash_attn_output"},
}
OUTCOMES = ("passed", "failed", "error", "refused", "skipped", "not run")


def load(paths):
    collections_by_label, cases = {}, {}
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut by a killed run
                label = rec.get("label") or os.path.basename(path).split(".")[0]
                if rec.get("type") == "collection":
                    col = collections_by_label.setdefault(label, {"collected": {},
                                                                  "flags": set()})
                    for fn, n in rec["collected"].items():
                        col["collected"][fn] = max(col["collected"].get(fn, 0), n)
                    if rec.get("chunk_dropped"):
                        col["flags"].add("chunk_dropped")
                elif rec.get("type") == "case":
                    old = cases.get((label, rec["id"]))
                    if old is None or rec["outcome"] != "not run":
                        cases[(label, rec["id"])] = rec
    return collections_by_label, cases


def _new_counts():
    return {"ran": 0, "outcomes": collections.Counter(), "refused": collections.Counter(),
            "skipped": collections.Counter(), "dur": 0.0, "refused_after_ok_calls": 0,
            "passed_without_call": 0}


def _add(c, rec):
    o = rec["outcome"]
    c["outcomes"][o] += 1
    if o == "not run":
        return
    c["ran"] += 1
    c["dur"] += rec.get("dur") or 0.0
    if o == "refused":
        c["refused"][rec["category"]] += 1
        if rec.get("ok_calls"):
            c["refused_after_ok_calls"] += 1
    elif o == "skipped":
        c["skipped"][rec["category"]] += 1
    elif o == "passed" and rec.get("ok_calls") == 0:
        c["passed_without_call"] += 1  # a pass that never reached cudadent: look at it


def summarize(collections_by_label, cases, commit=None):
    labels = sorted(set(collections_by_label) | {k[0] for k in cases})
    out = {"flash_attn_commit": commit, "files": {}}
    for label in labels:
        collected = collections_by_label.get(label, {}).get("collected", {})
        flags = sorted(collections_by_label.get(label, {}).get("flags", ()))
        recs = [r for (lab, _), r in cases.items() if lab == label]
        by_func = collections.defaultdict(_new_counts)
        total = _new_counts()
        for r in recs:
            _add(by_func[r["func"]], r)
            _add(total, r)
        est = _new_counts()
        est_core = _new_counts()
        est_seconds = 0.0
        complete = True
        for fn, n in collected.items():
            c = by_func.get(fn)
            if c is None or c["ran"] == 0:
                complete = complete and n == 0
                est["outcomes"]["unknown (none ran)"] += n
                continue
            if c["ran"] != n:
                complete = False
            scale = n / c["ran"]
            targets = [est] + ([est_core] if fn in DENSE_CORE.get(label, ()) else [])
            for t in targets:
                for key in ("outcomes", "refused", "skipped"):
                    for k, v in c[key].items():
                        if key == "outcomes" and k == "not run":
                            continue
                        t[key][k] += v * scale
                t["ran"] += n
            est_seconds += c["dur"] * scale
        failures = [{"id": r["id"], "msg": r["msg"]} for r in sorted(
            recs, key=lambda r: r["id"]) if r["outcome"] in ("failed", "error")]
        f = {
            "collected": sum(collected.values()),
            "collected_by_function": dict(sorted(collected.items())),
            "dense_core_collected": sum(n for fn, n in collected.items()
                                        if fn in DENSE_CORE.get(label, ())),
            "flags": flags,
            "run": _plain(total),
            "by_function": {fn: _plain(c) for fn, c in sorted(by_func.items())},
            "complete": complete,
            "estimate_whole_collection": None if complete else _plain(est, rnd=True),
            "estimate_dense_core": _plain(est_core, rnd=True),
            "estimated_seconds_whole_collection": round(est_seconds),
            "failures": failures[:50],
            "failures_total": len(failures),
        }
        out["files"][label] = f
    return out


def _plain(c, rnd=False):
    r = (lambda v: int(round(v))) if rnd else (lambda v: v)
    d = {"cases": r(c["ran"]) if rnd else c["ran"],
         "outcomes": {k: r(v) for k, v in sorted(c["outcomes"].items())},
         "refused_by_category": {k: r(v) for k, v in c["refused"].most_common()},
         "skipped_by_reason": {k: r(v) for k, v in c["skipped"].most_common()}}
    if not rnd:
        d["seconds"] = round(c["dur"], 1)
        d["mean_seconds_per_case"] = round(c["dur"] / c["ran"], 4) if c["ran"] else None
        d["refused_after_some_calls_passed"] = c["refused_after_ok_calls"]
        d["passed_without_a_cudadent_call"] = c["passed_without_call"]
    return d


def text(summary):
    lines = [f"flash-attn tests against cudadent (flash-attn {summary.get('flash_attn_commit')})"]
    for label, f in summary["files"].items():
        run = f["run"]
        lines.append("")
        lines.append(f"== {label}: {f['collected']} collected (dense core {f['dense_core_collected']})"
                     f", {run['cases']} ran in {run['seconds']} s"
                     + (f"; flags: {', '.join(f['flags'])}" if f["flags"] else ""))
        oc = run["outcomes"]
        lines.append("   " + ", ".join(f"{k} {oc.get(k, 0)}" for k in OUTCOMES))
        lines.append(f"   {'function':50} {'coll':>7} {'ran':>6} {'pass':>6} {'fail':>5} "
                     f"{'refus':>6} {'skip':>5} {'s/case':>7}")
        for fn, n in f["collected_by_function"].items():
            c = f["by_function"].get(fn, {"cases": 0, "outcomes": {},
                                          "mean_seconds_per_case": None})
            o = c["outcomes"]
            ms = c["mean_seconds_per_case"]
            lines.append(f"   {fn:50} {n:7} {c['cases']:6} {o.get('passed', 0):6} "
                         f"{o.get('failed', 0) + o.get('error', 0):5} {o.get('refused', 0):6} "
                         f"{o.get('skipped', 0):5} {'' if ms is None else f'{ms:.3f}':>7}")
        lines.append("   refused by category (cases run): " + _kv(run["refused_by_category"]))
        if run["refused_after_some_calls_passed"]:
            lines.append(f"   refused after some of their cudadent calls had returned (e.g. the "
                         f"forward ran, or a sub-run): {run['refused_after_some_calls_passed']}")
        if run["passed_without_a_cudadent_call"]:
            lines.append(f"   passed without any cudadent call returning: "
                         f"{run['passed_without_a_cudadent_call']}")
        if run["skipped_by_reason"]:
            lines.append("   skipped by flash-attn (cases run): " + _kv(run["skipped_by_reason"]))
        for name, key in (("whole collection", "estimate_whole_collection"),
                          ("dense core", "estimate_dense_core")):
            e = f[key]
            if e is None or not e["cases"]:
                continue
            lines.append(f"   estimate, {name} ({e['cases']} cases): "
                         + _kv(e["outcomes"]) + "; refused: " + _kv(e["refused_by_category"]))
        lines.append(f"   estimated time of the whole collection: "
                     f"{f['estimated_seconds_whole_collection']} s (sum over functions of "
                     f"collected x mean s/case; pytest collection not included)")
        if f["failures_total"]:
            lines.append(f"   failures ({f['failures_total']}, first {len(f['failures'])}):")
            for x in f["failures"][:15]:
                lines.append(f"     {x['id']}: {x['msg']}")
    return "\n".join(lines) + "\n"


def _kv(d):
    return ", ".join(f"{k} {v}" for k, v in d.items()) or "none"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--commit", default=None)
    ap.add_argument("results", nargs="+")
    a = ap.parse_args(argv)
    paths = [p for p in a.results if os.path.exists(p)]
    if not paths:
        print("summarize.py: no results file", file=sys.stderr)
        return 1
    s = summarize(*load(paths), commit=a.commit)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(s, f, indent=1, sort_keys=True)
    t = text(s)
    with open(os.path.join(a.out, "summary.txt"), "w") as f:
        f.write(t)
    sys.stdout.write(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
