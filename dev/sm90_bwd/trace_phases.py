#!/usr/bin/env python3
"""trace_phases.py - the Hopper backward's block phases from a trace dump (experiment 1 of
docs/kernels/sm90_bwd_next.md, now docs/kernels/sm90_bwd_trace.md).

  python3 dev/sm90_bwd/trace_phases.py DUMP [--label L] [--skip-first N] [--max-blocks N] [--json OUT]
  python3 dev/sm90_bwd/trace_phases.py --selftest

DUMP: what `dev/sm90_bwd/bwd_trace_run ... --trace DUMP` writes, linked against a library built with
-DCUDADENT_DEV -DSM90_BWD_TRACE=1 (src/kernels/sm90/bwd_trace.cuh: the file header, one header a
CTA, one 23-word record a block a CTA walks; clock64 stamps of consumer thread 0 of each consumer
warpgroup, the producer's load issue, %globaltimer and %smid at the CTA's start and end).

Prints, for the run's last traced call:
  - per block, per phase between consecutive stamps of a consumer (both consumers pooled, and
    each alone): median, p10, p90 and mean SM cycles and the share of the block's mean total;
    the phases' letters follow the stamps (A: q_full -> S^T wait, B: S^T wait -> dP^T wait, ...),
    the column "sec3" says which phase of section 3's table of sm90_bwd_next.md each is part of;
  - the block total (q_full of a block to q_full of the next, same consumer) and the sum of the
    phase medians;
  - the two consumers' arrival skew at BAR_DS, the producer's lead (load issue -> q_full passed);
  - per CTA: duration (cycles and us), prologue (start -> K/V landed), epilogue; the SM clock
    (cycles / %globaltimer ns over each CTA), CTAs per SM, and the tail: when SMs run out of CTAs
    (from %globaltimer, the only clock common to all SMs).
Durations are only ever taken within one CTA (one SM's clock64). The block phases are read from
every k-th CTA, k such that at most --max-blocks (default 32768; 0: all) block slots are read;
the CTA and time-line figures from every CTA. Python 3 standard library only (a 16k call's dump,
~97 MB, reads in a few seconds).
"""
import json
import os
import struct
import sys
import tempfile

MAGIC = b"CDBWDTR1"
HDR = 16
NEV = 11
REC = 1 + 2 * NEV
# consumer events (bwd_trace.cuh CD_BWD_EV_*)
Q_FULL, ST_WAIT, UNUSED, DPT_WAIT, DV_ISSUED, DS_STORED, BAR_DS, DQDK_ISSUED, DVDQ_WAIT, REDUCE, DK_WAIT = range(NEV)
EV_NAMES = ["q_full", "S^T wait", "(producer)", "dP^T wait", "dV issued", "dS stored", "BAR_DS",
            "dQ, dK issued", "dV/dQ wait", "dQ reduce issued", "dK wait"]
# file header words (CD_SM90_BWD_TRACE_H_*)
H_NAMES = ["magic", "version", "ctas", "max_blocks", "rec", "events", "block_m", "block_n", "d",
           "seqlen_q", "seqlen_k", "batch", "heads_q", "heads_kv", "flags", "reserved"]
# CTA header words (CD_SM90_BWD_TRACE_C_*)
C_SMID, C_START, C_START_NS, C_END, C_END_NS, C_BLOCKS, C_WORK, C_END1, C_P_START, C_P_END = range(10)
M32 = (1 << 32) - 1


def d32(a, b):
    """b - a of two 32-bit clock stamps (the block records hold the SM clock's low 32 bits)"""
    d = (b - a) & M32
    return d - (1 << 32) if d >= 1 << 31 else d

# (letter, from event, to event, what, section 3's phase of sm90_bwd_next.md: A S^T + dP^T, B dS
# and packs after the dP^T wait, C dV / dK, D barrier and dQ, E dQ staging, "waits" the loop head)
PHASES = [
    ("A", Q_FULL, ST_WAIT, "q_full -> S^T wait (S^T, dP^T issued; S^T in flight)", "A"),
    ("B", ST_WAIT, DPT_WAIT, "S^T wait -> dP^T wait (LSE2 loads, exp2, mask; dP^T)", "A"),
    ("C", DPT_WAIT, DV_ISSUED, "dP^T wait -> dV issued (delta loads, dS, P/dS packs)", "B"),
    ("D", DV_ISSUED, DS_STORED, "dV issued -> dS stored (stmatrix, proxy fence)", "C"),
    ("E", DS_STORED, BAR_DS, "dS stored -> BAR_DS passed (the other consumer)", "D"),
    ("F", BAR_DS, DQDK_ISSUED, "BAR_DS -> dQ and dK issued", "D"),
    ("G", DQDK_ISSUED, DVDQ_WAIT, "dQ, dK issued -> dV and dQ done (wait<1>)", "C+D"),
    ("H", DVDQ_WAIT, REDUCE, "dV/dQ done -> dQ reduce issued (staging under dK)", "E"),
    ("I", REDUCE, DK_WAIT, "reduce issued -> dK done (wait<0>)", "C"),
    ("J", DK_WAIT, None, "dK done -> next q_full (release, loop head, q_full wait)", "waits"),
]

# the wide rows (header d 192 / 256, bwd_wide_kernel.cuh: the same events at their equivalent
# points, bwd_trace.cuh's "wide:"): the phases' meanings where they differ
WIDE_WHAT = {
    "C": "dP^T wait -> P^T, dS^T packed (delta loads, dS math, packs)",
    "D": "packed -> dS stored (stmatrix, proxy fence)",
    "F": "BAR_DS -> dQ, dV and dK issued",
    "G": "issued -> dQ done (wait<1>; dV, dK running)",
    "H": "dQ done -> dQ reduce issued (staging + bulk, or red.v4)",
    "I": "reduce issued -> dV and dK done (wait<0>)",
    "J": "dV, dK done -> next q_full (release, loop head, q_full wait)",
}


def pct(sorted_vals, q):
    """the q-quantile (0..1) of sorted values, nearest rank"""
    if not sorted_vals:
        return float("nan")
    i = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return sorted_vals[i]


def stats(vals):
    v = sorted(vals)
    n = len(v)
    return {"n": n, "median": pct(v, 0.5), "p10": pct(v, 0.1), "p90": pct(v, 0.9),
            "mean": (sum(v) / n) if n else float("nan"), "min": v[0] if n else float("nan"),
            "max": v[-1] if n else float("nan")}


class Trace:
    def __init__(self, data):
        if len(data) < 8 * HDR or data[:8] != MAGIC:
            raise ValueError("not a cudadent sm90 backward trace (magic %r)" % bytes(data[:8]))
        words = memoryview(data).cast("Q")
        self.h = dict(zip(H_NAMES, words[:HDR].tolist()))
        if self.h["version"] != 1 or self.h["rec"] != REC or self.h["events"] != NEV:
            raise ValueError("trace version %d / record %d / events %d: this script reads 1 / %d / %d"
                             % (self.h["version"], self.h["rec"], self.h["events"], REC, NEV))
        self.ctas, self.maxb = self.h["ctas"], self.h["max_blocks"]
        need = HDR + HDR * self.ctas + REC * self.ctas * self.maxb
        if len(words) < need:
            raise ValueError("truncated trace: %d words, the header says %d" % (len(words), need))
        self.words = words
        self.r0 = HDR + HDR * self.ctas
        self.n = self.ctas * self.maxb

    def cta(self, c, w):
        return self.words[HDR + HDR * c + w]

    def ev(self, c, b, consumer, ev):
        """event ev of consumer (-1: the producer's load issue) in block b of CTA c"""
        return self.words[self.r0 + REC * (self.maxb * c + b) + (0 if consumer < 0 else 1 + NEV * consumer + ev)]

    def col(self, consumer, ev, sel):
        """event ev of consumer (0, 1; -1: the producer's load issue) for every block slot of the
        CTAs sel, CTA-major (max_blocks slots a CTA)"""
        off = self.r0 + (0 if consumer < 0 else 1 + NEV * consumer + ev)
        out = []
        span = REC * self.maxb
        for c in sel:
            start = off + span * c
            out += self.words[start:start + span:REC].tolist()
        return out


def analyze(tr, skip_first=1, max_blocks=32768):
    """everything the report prints, as a dict. The block phases are taken over every k-th CTA
    (k such that at most max_blocks block slots are read; 0: every CTA), the CTA figures over all."""
    maxb = tr.maxb
    out = {"header": {k: tr.h[k] for k in H_NAMES[1:15]}}
    stride = 1 if not max_blocks or tr.n <= max_blocks else -(-tr.n // max_blocks)
    sel = list(range(0, tr.ctas, stride))
    out["cta_stride"] = stride
    n = len(sel) * maxb
    # blocks to count: index within the CTA >= skip_first
    keep = [(i % maxb) >= skip_first for i in range(n)] if maxb else []
    cols = [[tr.col(w, e, sel) for e in range(NEV)] for w in range(2)]
    phases = {}
    total = {0: [], 1: []}
    negative = 0
    for letter, a, b, what, sec in PHASES:
        per = {}
        for w in range(2):
            ca = cols[w][a]
            if b is None:  # to the next block's q_full (same CTA)
                cb = cols[w][Q_FULL][1:] + [0]
                vals = [d32(x, y) for i, (x, y) in enumerate(zip(ca, cb))
                        if x and y and keep[i] and (i + 1) % maxb]
            else:
                cb = cols[w][b]
                vals = [d32(x, y) for x, y, k in zip(ca, cb, keep) if x and y and k]
            negative += sum(1 for v in vals if v < 0)
            per[w] = vals
        phases[letter] = {"what": what, "sec3": sec, "c0": stats(per[0]), "c1": stats(per[1]),
                          "both": stats(per[0] + per[1])}
    for w in range(2):
        q = cols[w][Q_FULL]
        total[w] = [d32(q[i], q[i + 1]) for i in range(n - 1)
                    if q[i] and q[i + 1] and keep[i] and (i + 1) % maxb]
    out["phases"] = phases
    out["total"] = {"c0": stats(total[0]), "c1": stats(total[1]), "both": stats(total[0] + total[1])}
    out["negative_durations"] = negative
    # barrier: which consumer arrives last (dS stored), and how far apart they pass it
    s0, s1 = cols[0][DS_STORED], cols[1][DS_STORED]
    b0, b1 = cols[0][BAR_DS], cols[1][BAR_DS]
    skew = [d32(y, x) for x, y, k in zip(s0, s1, keep) if x and y and k]
    passed = [abs(d32(y, x)) for x, y, k in zip(b0, b1, keep) if x and y and k]
    out["bar_ds"] = {"arrival_skew_abs": stats([abs(v) for v in skew]),
                     "c0_last_share": (sum(1 for v in skew if v > 0) / len(skew)) if skew else float("nan"),
                     "pass_skew_abs": stats(passed)}
    # producer: load issue -> consumer 0's q_full passed (the data's lead, or the consumer's wait)
    pl = tr.col(-1, 0, sel)
    q0 = cols[0][Q_FULL]
    out["producer"] = {"load_to_qfull": stats([d32(x, y) for x, y, k in zip(pl, q0, keep) if x and y and k]),
                       "loads": sum(1 for x in pl if x)}
    # the producer's own words (bwd_trace.cuh cd_sm90_bwd_trace_pstamp; traces from session 24 on,
    # 0 in older ones): consumer 1's event-2 word its wait for the stage begun, consumer 0's its
    # loads issued. Per block i: the wait (begun -> stage free, the load-issue stamp), the issue
    # (-> issued), the release of block i - 2 (both consumers' dK wait, the later) -> stage free,
    # and the loop (block i - 1 issued -> block i's wait begun: the trace's copy and the loop head)
    pw, pd = cols[1][UNUSED], cols[0][UNUSED]
    dk0, dk1 = cols[0][DK_WAIT], cols[1][DK_WAIT]
    idx = [i for i in range(n) if keep[i] and (i % maxb) >= 2]

    def rel(i):
        a, b = dk0[i - 2], dk1[i - 2]
        return 0 if not a or not b else (b if d32(a, b) > 0 else a)
    out["producer"]["wait"] = stats([d32(pw[i], pl[i]) for i in idx if pw[i] and pl[i]])
    out["producer"]["issue"] = stats([d32(pl[i], pd[i]) for i in idx if pl[i] and pd[i]])
    out["producer"]["release_to_issue"] = stats([d32(rel(i), pl[i]) for i in idx if rel(i) and pl[i]])
    out["producer"]["loop"] = stats([d32(pd[i - 1], pw[i]) for i in idx if pd[i - 1] and pw[i]])
    # CTAs
    ctas = []
    for c in range(tr.ctas):
        start, end = tr.cta(c, C_START), tr.cta(c, C_END)
        if not start or not end:
            continue
        nb = tr.cta(c, C_BLOCKS)
        ctas.append({"smid": tr.cta(c, C_SMID), "start": start, "end": end, "idx": c,
                     "chain": tr.cta(c, C_WORK) >> 24,
                     "start_ns": tr.cta(c, C_START_NS), "end_ns": tr.cta(c, C_END_NS), "blocks": nb,
                     # consumer 0's first q_full and last dK wait (32-bit stamps), 0 where none
                     "q_first": tr.ev(c, 0, 0, Q_FULL) if nb else 0,
                     "dk_last": tr.ev(c, nb - 1, 0, DK_WAIT) if 0 < nb <= maxb else 0})
    out["ctas_traced"] = len(ctas)
    out["ctas_in_grid"] = tr.ctas
    if not ctas:
        return out
    dur = [c["end"] - c["start"] for c in ctas]
    out["cta_cycles"] = stats(dur)
    out["blocks_per_cta"] = stats([c["blocks"] for c in ctas])
    out["prologue"] = stats([d32(c["start"], c["q_first"]) for c in ctas if c["q_first"]])
    out["epilogue"] = stats([d32(c["dk_last"], c["end"]) for c in ctas if c["dk_last"]])
    ghz = [(c["end"] - c["start"]) / (c["end_ns"] - c["start_ns"]) for c in ctas if c["end_ns"] > c["start_ns"]]
    clk = pct(sorted(ghz), 0.5) if ghz else float("nan")
    out["sm_clock_ghz"] = clk
    out["cta_us"] = stats([d / clk / 1e3 for d in dur]) if ghz else None
    # time line (%globaltimer): per SM its CTAs, the kernel's span, the tail
    t0 = min(c["start_ns"] for c in ctas)
    t1 = max(c["end_ns"] for c in ctas)
    span = t1 - t0
    sms = {}
    for c in ctas:
        sms.setdefault(c["smid"], []).append(c)
    last_end = {s: max(c["end_ns"] for c in v) for s, v in sms.items()}
    gaps = []
    for v in sms.values():
        v.sort(key=lambda c: c["start_ns"])
        gaps += [b["start_ns"] - a["end_ns"] for a, b in zip(v, v[1:])]
    first_idle = min(last_end.values())
    out["timeline"] = {
        "sms": len(sms), "span_us": span / 1e3,
        "ctas_per_sm": stats([len(v) for v in sms.values()]),
        "tail_us": (t1 - first_idle) / 1e3,  # from the first SM out of CTAs to the kernel's end
        "tail_share": (t1 - first_idle) / span if span else float("nan"),
        "idle_after_last_share": (sum(t1 - e for e in last_end.values()) / (len(sms) * span)) if span else float("nan"),
        "sm_last_end_us": stats([(e - t0) / 1e3 for e in last_end.values()]),
        "gap_between_ctas_ns": stats(gaps),
        "waves": len(ctas) / len(sms),
    }
    # SM speed and the set of units in flight (docs/kernels/sm90_bwd_next.md section 10, session
    # 32: a persistent CTA's static stride cannot rebalance SMs of unequal speed): per SM its ns a
    # block over its CTAs (units); at 64 instants of the span, the launch indices in flight (max -
    # min + 1) and the distinct chains (KV head, batch) among them
    per_sm = [sum(c["end_ns"] - c["start_ns"] for c in v) / sum(c["blocks"] for c in v)
              for v in sms.values() if sum(c["blocks"] for c in v)]
    spread, chains = [], []
    for k in range(1, 65):
        t = t0 + span * k / 65
        live = [c for c in ctas if c["start_ns"] <= t < c["end_ns"]]
        if live:
            spread.append(max(c["idx"] for c in live) - min(c["idx"] for c in live) + 1)
            chains.append(len(set(c["chain"] for c in live)))
    out["in_flight"] = {"sm_ns_per_block": stats(per_sm), "index_spread": stats(spread),
                        "chains": stats(chains)}
    return out


def fmt(x, nd=0):
    if x is None or x != x:
        return "-"
    return ("%." + str(nd) + "f") % x


def report(res, label=""):
    h = res["header"]
    lines = []
    p = lines.append
    p("==== %s: d%d BLOCK_M %d x BLOCK_N %d, batch %d, heads %d/%d, seqlen %d/%d, flags %d; CTAs traced %d of %d"
      % (label or "trace", h["d"], h["block_m"], h["block_n"], h["batch"], h["heads_q"], h["heads_kv"],
         h["seqlen_q"], h["seqlen_k"], h["flags"], res["ctas_traced"], res["ctas_in_grid"]))
    if not res["ctas_traced"]:
        p("no CTA records: the sm90 backward's dense main kernel did not run traced (dispatch chose "
          "another kernel? CUDADENT_KERNEL_BWD=sm90)")
        return "\n".join(lines)
    tot = res["total"]["both"]
    p("per block, SM cycles (consumer thread 0, both consumers pooled; first %s block(s) of each CTA "
      "left out; every %d. CTA)" % (res.get("skip_first", 1), res["cta_stride"]))
    p("%-3s %-66s %5s %7s %7s %7s %7s %6s %7s %7s" % ("", "phase", "sec3", "median", "p10", "p90", "mean",
                                                      "share", "c0 med", "c1 med"))
    sum_med = 0.0
    for letter, _, _, _, _ in PHASES:
        ph = res["phases"][letter]
        s = ph["both"]
        if s["n"] == 0:
            continue
        sum_med += s["median"]
        share = s["mean"] / tot["mean"] if tot["n"] and tot["mean"] else float("nan")
        what = WIDE_WHAT.get(letter, ph["what"]) if h["d"] > 128 else ph["what"]
        p("%-3s %-66s %5s %7s %7s %7s %7s %5s%% %7s %7s" % (
            letter, what[:66], ph["sec3"], fmt(s["median"]), fmt(s["p10"]), fmt(s["p90"]),
            fmt(s["mean"]), fmt(100 * share, 1), fmt(ph["c0"]["median"]), fmt(ph["c1"]["median"])))
    p("%-3s %-66s %5s %7s %7s %7s %7s %6s %7s %7s" % (
        "", "block total (q_full -> next q_full)", "", fmt(tot["median"]), fmt(tot["p10"]), fmt(tot["p90"]),
        fmt(tot["mean"]), "", fmt(res["total"]["c0"]["median"]), fmt(res["total"]["c1"]["median"])))
    p("sum of the phase medians (A..J): %s cycles; blocks counted %d" % (fmt(sum_med), tot["n"]))
    if res["negative_durations"]:
        p("WARNING: %d negative durations (stamps out of order: compiler-moved clock reads?)" % res["negative_durations"])
    bd = res["bar_ds"]
    p("BAR_DS: arrival skew |c0 - c1| median %s p90 %s cycles, consumer 0 last in %s%% of blocks; "
      "passing skew median %s" % (fmt(bd["arrival_skew_abs"]["median"]), fmt(bd["arrival_skew_abs"]["p90"]),
                                  fmt(100 * bd["c0_last_share"], 1), fmt(bd["pass_skew_abs"]["median"])))
    pr = res["producer"]["load_to_qfull"]
    p("producer: load issue -> consumer 0's q_full passed median %s p10 %s p90 %s cycles (%d loads)"
      % (fmt(pr["median"]), fmt(pr["p10"]), fmt(pr["p90"]), res["producer"]["loads"]))
    if res["producer"]["wait"]["n"]:
        pp = res["producer"]
        p("producer, per block (median / p90 cycles): wait for the stage %s / %s; block i - 2 released -> "
          "stage seen free %s / %s; load issue %s / %s; issued -> next wait (copy, loop) %s / %s" % (
              fmt(pp["wait"]["median"]), fmt(pp["wait"]["p90"]), fmt(pp["release_to_issue"]["median"]),
              fmt(pp["release_to_issue"]["p90"]), fmt(pp["issue"]["median"]), fmt(pp["issue"]["p90"]),
              fmt(pp["loop"]["median"]), fmt(pp["loop"]["p90"])))
    cc, cu = res["cta_cycles"], res["cta_us"]
    p("CTA: %d traced, duration median %s p90 %s max %s cycles (%s / %s / %s us at the measured %s GHz); "
      "blocks median %s" % (res["ctas_traced"], fmt(cc["median"]), fmt(cc["p90"]), fmt(cc["max"]),
                            fmt(cu["median"], 2) if cu else "-", fmt(cu["p90"], 2) if cu else "-",
                            fmt(cu["max"], 2) if cu else "-", fmt(res["sm_clock_ghz"], 3),
                            fmt(res["blocks_per_cta"]["median"])))
    p("CTA: prologue (start -> first q_full) median %s cycles, epilogue (last dK wait -> end) median %s cycles"
      % (fmt(res["prologue"]["median"]), fmt(res["epilogue"]["median"])))
    tl = res["timeline"]
    p("time line: %d SMs, span %s us, %s CTAs an SM (waves; min %s max %s), gap between an SM's CTAs "
      "median %s ns" % (tl["sms"], fmt(tl["span_us"], 1), fmt(tl["waves"], 2), fmt(tl["ctas_per_sm"]["min"]),
                        fmt(tl["ctas_per_sm"]["max"]), fmt(tl["gap_between_ctas_ns"]["median"])))
    p("tail: the first SM out of CTAs %s us before the end (%s%% of the span); SM time idle after each "
      "SM's last CTA %s%%; SMs' last CTA ends median %s us" % (
          fmt(tl["tail_us"], 1), fmt(100 * tl["tail_share"], 1), fmt(100 * tl["idle_after_last_share"], 1),
          fmt(tl["sm_last_end_us"]["median"], 1)))
    fl = res.get("in_flight")
    if fl and fl["sm_ns_per_block"]["n"]:
        sp = fl["sm_ns_per_block"]
        p("SMs: ns a block min %s p10 %s median %s p90 %s max %s (max / min %s); SMs' last CTA ends min %s "
          "max %s us; in flight: launch-index spread median %s max %s, chains median %s max %s" % (
              fmt(sp["min"], 1), fmt(sp["p10"], 1), fmt(sp["median"], 1), fmt(sp["p90"], 1), fmt(sp["max"], 1),
              fmt(sp["max"] / sp["min"], 3) if sp["min"] else "-", fmt(tl["sm_last_end_us"]["min"], 1),
              fmt(tl["sm_last_end_us"]["max"], 1), fmt(fl["index_spread"]["median"]),
              fmt(fl["index_spread"]["max"]), fmt(fl["chains"]["median"]), fmt(fl["chains"]["max"])))
    return "\n".join(lines)


# ---------------------------------------------------------------- self-test (no GPU)

SYNTH = {  # cycles a phase takes in the synthetic dump (consumer 0; consumer 1 +10 on A)
    Q_FULL: 0, ST_WAIT: 700, UNUSED: 0, DPT_WAIT: 700, DV_ISSUED: 200, DS_STORED: 150,
    BAR_DS: 50, DQDK_ISSUED: 40, DVDQ_WAIT: 600, REDUCE: 300, DK_WAIT: 250,
}
HEAD = 100  # dK wait -> next q_full


def synth(path, bm80=False, ctas=24, sms=8, maxb=6, clock_ghz=1.5):
    """a dump with known phases: CTA c on SM c % sms, walking maxb blocks (CTA 5: maxb - 1; CTA 7:
    not traced); the block stamps are 32-bit (some CTAs' clocks wrap there); bm80: the header's
    BLOCK_M only"""
    words = [0] * (HDR + HDR * ctas + REC * ctas * maxb)
    words[0] = struct.unpack("<Q", MAGIC)[0]
    hv = {"version": 1, "ctas": ctas, "max_blocks": maxb, "rec": REC, "events": NEV,
          "block_m": 80 if bm80 else 64, "block_n": 128, "d": 128, "seqlen_q": 64 * maxb,
          "seqlen_k": 128 * ctas // 4, "batch": 1, "heads_q": 4, "heads_kv": 4, "flags": 0}
    for i, k in enumerate(H_NAMES):
        if k in hv:
            words[i] = hv[k]
    r0 = HDR + HDR * ctas
    sm_time = {}
    for c in range(ctas):
        if c == 7:
            continue
        nb = maxb - 1 if c == 5 else maxb
        sm = c % sms
        t_ns = sm_time.get(sm, 1000000)  # SM's time line (ns)
        start = (1 << 32) - 20000 + 12345 * c if c % 3 == 0 else 10 ** 9 + 12345 * c  # own clock64 origins; some wrap 2^32
        hb = HDR + HDR * c
        words[hb + C_SMID] = sm
        words[hb + C_START] = start
        words[hb + C_START_NS] = t_ns
        t = start + 1000
        for i in range(nb):
            rec = r0 + REC * (c * maxb + i)
            words[rec] = (t - 900) & M32  # producer's load issue (32-bit stamps)
            words[rec + 1 + NEV * 1 + UNUSED] = (t - 950) & M32  # its wait begun (50 cycles)
            words[rec + 1 + NEV * 0 + UNUSED] = (t - 870) & M32  # its loads issued (30 cycles)
            for w in range(2):
                tw = t + (10 if w else 0)
                for e in range(NEV):
                    d = SYNTH[e] + (10 if (w and e == ST_WAIT) else 0) + (i % 2 if e == DVDQ_WAIT else 0)
                    tw += d
                    if e == UNUSED:
                        continue
                    words[rec + 1 + NEV * w + e] = tw & M32
                    if e == DK_WAIT and w == 0:
                        dk0 = tw
            t = dk0 + HEAD
        end = t - HEAD + 2000
        words[hb + C_END] = end
        words[hb + C_END1] = end + 3
        words[hb + C_BLOCKS] = nb
        end_ns = t_ns + int(round((end - start) / clock_ghz))
        words[hb + C_END_NS] = end_ns
        sm_time[sm] = end_ns + 500
    with open(path, "wb") as f:
        f.write(struct.pack("<%dQ" % len(words), *words))
    return words


def selftest():
    fails = []

    def check(cond, what):
        if not cond:
            fails.append(what)

    with tempfile.TemporaryDirectory() as d:
        for bm80 in (False, True):
            path = os.path.join(d, "t.bin")
            synth(path, bm80=bm80)
            with open(path, "rb") as f:
                res = analyze(Trace(f.read()), skip_first=1)
            ph = res["phases"]
            check(ph["A"]["c0"]["median"] == SYNTH[ST_WAIT], "A c0 %s" % ph["A"]["c0"]["median"])
            check(ph["A"]["c1"]["median"] == SYNTH[ST_WAIT] + 10, "A c1")
            check(ph["B"]["both"]["median"] == SYNTH[DPT_WAIT], "B %s" % ph["B"]["both"]["median"])
            for letter, ev in (("C", DV_ISSUED), ("D", DS_STORED), ("E", BAR_DS), ("F", DQDK_ISSUED),
                               ("H", REDUCE), ("I", DK_WAIT)):
                check(ph[letter]["both"]["median"] == SYNTH[ev], "%s %s" % (letter, ph[letter]["both"]["median"]))
            check(ph["G"]["both"]["p10"] == SYNTH[DVDQ_WAIT] and ph["G"]["both"]["p90"] == SYNTH[DVDQ_WAIT] + 1, "G spread")
            check(ph["J"]["c0"]["median"] == HEAD, "J %s" % ph["J"]["c0"]["median"])
            per_block = sum(SYNTH.values()) + HEAD
            check(res["total"]["c0"]["median"] in (per_block, per_block + 1), "total %s" % res["total"]["c0"]["median"])
            # blocks counted: 23 traced CTAs (one of 5 blocks), the first of each left out; J and
            # the total need a next block
            check(ph["A"]["c0"]["n"] == 22 * 5 + 4, "A n %d" % ph["A"]["c0"]["n"])
            check(ph["J"]["c0"]["n"] == 22 * 4 + 3, "J n %d" % ph["J"]["c0"]["n"])
            check(ph["J"]["c1"]["median"] == HEAD - 10, "J c1 %s" % ph["J"]["c1"]["median"])
            check(res["prologue"]["median"] == 1000 and res["epilogue"]["median"] == 2000,
                  "prologue %s epilogue %s" % (res["prologue"]["median"], res["epilogue"]["median"]))
            check(res["ctas_traced"] == 23, "CTAs traced %d" % res["ctas_traced"])
            check(abs(res["sm_clock_ghz"] - 1.5) < 1e-3, "clock %s" % res["sm_clock_ghz"])
            check(res["timeline"]["sms"] == 8, "SMs")
            check(res["negative_durations"] == 0, "negative")
            # consumer 1 stamps 10 cycles later and its S^T wait 10 more: it reaches BAR_DS 20 later
            check(res["bar_ds"]["arrival_skew_abs"]["median"] == 20, "skew %s" % res["bar_ds"]["arrival_skew_abs"]["median"])
            check(res["bar_ds"]["c0_last_share"] == 0.0, "c0 last")
            check(res["producer"]["load_to_qfull"]["median"] == 900, "producer lead %s" % res["producer"]["load_to_qfull"]["median"])
            pp = res["producer"]
            check(pp["wait"]["median"] == 50 and pp["issue"]["median"] == 30, "producer wait %s issue %s"
                  % (pp["wait"]["median"], pp["issue"]["median"]))
            # block i's wait begins at q_full(i) - 950, block i - 1's loads were issued at
            # q_full(i - 1) - 870: the loop is a block (the total) less 80
            check(pp["loop"]["median"] in (per_block - 80, per_block - 79), "producer loop %s" % pp["loop"]["median"])
            # block i - 2's later dK wait is consumer 1's, 20 cycles after consumer 0's (it starts 10
            # later and waits 10 more for S^T): two blocks before q_full(i), less one block and
            # HEAD, plus 20; the stage seen free at q_full(i) - 900
            check(pp["release_to_issue"]["median"] in (per_block + HEAD - 920, per_block + HEAD - 919),
                  "release -> issue %s" % pp["release_to_issue"]["median"])
            check(res["timeline"]["ctas_per_sm"]["min"] == 2 and res["timeline"]["ctas_per_sm"]["max"] == 3, "CTAs an SM")
            check(res["blocks_per_cta"]["min"] == 5 and res["blocks_per_cta"]["max"] == 6, "blocks a CTA")
            # the tail: SM 7 has 2 CTAs (7 untraced), SM 5 two (CTA 5 shorter): from the first SM
            # out of CTAs to the end
            ends = {}
            with open(path, "rb") as f:
                tr = Trace(f.read())
            for c in range(tr.ctas):
                if tr.cta(c, C_START):
                    ends[tr.cta(c, C_SMID)] = max(ends.get(tr.cta(c, C_SMID), 0), tr.cta(c, C_END_NS))
            want_tail = (max(ends.values()) - min(ends.values())) / 1e3
            check(abs(res["timeline"]["tail_us"] - want_tail) < 1e-9, "tail %s want %s" % (res["timeline"]["tail_us"], want_tail))
            fl = res["in_flight"]
            check(fl["index_spread"]["n"] > 0 and fl["index_spread"]["max"] <= tr.ctas and fl["chains"]["min"] >= 1,
                  "in flight %s" % fl)
            # every 3rd CTA (the phases' sample): the same medians, fewer blocks
            with open(path, "rb") as f:
                sub = analyze(Trace(f.read()), skip_first=1, max_blocks=50)
            check(sub["cta_stride"] == 3 and sub["phases"]["A"]["c0"]["median"] == SYNTH[ST_WAIT] and
                  sub["phases"]["A"]["c0"]["n"] == 8 * 5 and sub["ctas_traced"] == 23, "sampled CTAs")
            text = report(res, "selftest")
            check("block total" in text and "tail:" in text, "report text")
            if bm80:
                print(text)
        # a file that is not a trace
        bad = os.path.join(d, "bad.bin")
        with open(bad, "wb") as f:
            f.write(b"\0" * 256)
        try:
            with open(bad, "rb") as f:
                Trace(f.read())
            fails.append("bad magic accepted")
        except ValueError:
            pass
        # an empty trace (no CTA ran traced)
        path = os.path.join(d, "empty.bin")
        w = synth(path)
        w = w[:HDR] + [0] * (len(w) - HDR)
        with open(path, "wb") as f:
            f.write(struct.pack("<%dQ" % len(w), *w))
        with open(path, "rb") as f:
            res = analyze(Trace(f.read()))
        check(res["ctas_traced"] == 0 and "no CTA records" in report(res), "empty trace")
    if fails:
        print("selftest FAILED: " + "; ".join(fails))
        return 1
    print("selftest passed")
    return 0


def main(argv):
    if "--selftest" in argv:
        return selftest()
    args = [a for a in argv[1:]]
    label, js, skip, maxblk = "", None, 1, 32768
    path = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--label":
            label = args[i + 1]; i += 2
        elif a == "--json":
            js = args[i + 1]; i += 2
        elif a == "--skip-first":
            skip = int(args[i + 1]); i += 2
        elif a == "--max-blocks":
            maxblk = int(args[i + 1]); i += 2
        elif a.startswith("-"):
            print(__doc__); return 2
        else:
            path = a; i += 1
    if path is None:
        print(__doc__)
        return 2
    with open(path, "rb") as f:
        res = analyze(Trace(f.read()), skip_first=skip, max_blocks=maxblk)
    res["skip_first"] = skip
    print(report(res, label or os.path.basename(path)))
    if js:
        with open(js, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
