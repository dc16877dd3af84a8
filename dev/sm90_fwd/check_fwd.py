#!/usr/bin/env python3
"""check_fwd.py - correctness and timing of the sm90 forward variants (dev/sm90_fwd/sm90_dev.cu,
built as a shared library), in one process with PyTorch's SDPA (cuDNN backend) for the ratio.

  python3 dev/sm90_fwd/check_fwd.py LIB check [--variants 0,1,2]
  python3 dev/sm90_fwd/check_fwd.py LIB bench [--variants 0,1,2] [--suite fa3|quick] [--iters N]
  python3 dev/sm90_fwd/check_fwd.py LIB trace B,S,H,D,causal   (LIB built with -DSM90_TRACE)
  python3 dev/sm90_fwd/check_fwd.py LIB[,LIB..] accuracy   (LSE and O errors beside cuDNN's, FA2's)

check: fresh random inputs (normal; some cases with rare large outliers), poisoned (NaN) outputs,
float64 torch reference, flash-attn's criterion max|o - ref| <= 2 max|o_lowp - ref| + 1e-5 where
o_lowp is computed with 16-bit inputs, 16-bit scores and 16-bit P. LSE checked against the float64
log-sum-exp (fully masked rows: -inf). bench: CUDA events around each call after warm-up, median
of --iters; FLOPs 4 B H Sq Sk D, halved for causal.
"""
import ctypes
import math
import random
import statistics
import sys

import torch
import torch.nn.functional as F


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("stride_batch", ctypes.c_int64),
                ("stride_seq", ctypes.c_int64), ("stride_head", ctypes.c_int64),
                ("stride_dim", ctypes.c_int64)]


class Params(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("dtype", ctypes.c_int), ("batch", ctypes.c_int),
                ("seqlen_q", ctypes.c_int), ("seqlen_k", ctypes.c_int), ("heads_q", ctypes.c_int),
                ("heads_kv", ctypes.c_int), ("head_dim", ctypes.c_int), ("q", Tensor),
                ("k", Tensor), ("v", Tensor), ("o", Tensor), ("lse", ctypes.c_void_p),
                ("softmax_scale", ctypes.c_float), ("causal", ctypes.c_int),
                ("window_left", ctypes.c_int), ("window_right", ctypes.c_int),
                ("deterministic", ctypes.c_int)]


def tdesc(t):  # t: (B, S, H, D) view
    sb, ss, sh, sd = t.stride()
    return Tensor(t.data_ptr(), sb, ss, sh, sd)


def make_tensor(B, S, H, D, dtype, layout, outliers, gen):
    if layout == "bshd":
        t = torch.randn(B, S, H, D, generator=gen, device="cuda")
    elif layout == "bhsd":
        t = torch.randn(B, H, S, D, generator=gen, device="cuda").transpose(1, 2)
    else:  # padded: head stride D + 64, seq stride H * (D + 64) + 8
        base = torch.randn(B, S * (H * (D + 64) + 8) + 64, generator=gen, device="cuda")
        t = base.as_strided((B, S, H, D), (base.stride(0), H * (D + 64) + 8, D + 64, 1))
    if outliers:  # in place, so the layout (strides) stays
        mask = torch.rand(t.shape, generator=gen, device="cuda") < 1e-3
        t.mul_(torch.where(mask, 20.0, 1.0))
    out = torch.empty_strided(t.shape, t.stride(), dtype=dtype, device="cuda")
    out.copy_(t)
    return out


class Lib:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        self.path = path
        self.lib.sm90_dev_fwd.restype = ctypes.c_int
        self.lib.sm90_dev_fwd.argtypes = [ctypes.c_int, ctypes.POINTER(Params), ctypes.c_void_p, ctypes.c_int]
        self.order = -1

    def params(self, q, k, v, o, lse, causal, wl, wr, scale):
        B, Sq, Hq, D = q.shape
        Sk, Hkv = k.shape[1], k.shape[2]
        p = Params()
        p.struct_size = ctypes.sizeof(Params)
        p.dtype = 0 if q.dtype == torch.float16 else 1
        p.batch, p.seqlen_q, p.seqlen_k, p.heads_q, p.heads_kv, p.head_dim = B, Sq, Sk, Hq, Hkv, D
        p.q, p.k, p.v, p.o = tdesc(q), tdesc(k), tdesc(v), tdesc(o)
        p.lse = lse.data_ptr() if lse is not None else None
        p.softmax_scale = scale
        # normalized as api.c does
        if causal:
            wr = 0
        if wl >= Sk:
            wl = -1
        if wr >= Sq:
            wr = -1
        p.causal, p.window_left, p.window_right, p.deterministic = 0, wl, wr, 0
        return p

    def run(self, variant, p):
        rc = self.lib.sm90_dev_fwd(variant, ctypes.byref(p), ctypes.c_void_p(torch.cuda.current_stream().cuda_stream), self.order)
        if rc != 0:
            raise RuntimeError("sm90_dev_fwd returned cudaError %d" % rc)


def visible(Sq, Sk, causal, wl, wr):
    if causal:
        wr = 0
    i = torch.arange(Sq, device="cuda")[:, None]
    j = torch.arange(Sk, device="cuda")[None, :]
    sh = Sk - Sq
    ok = torch.ones(Sq, Sk, dtype=torch.bool, device="cuda")
    if wl >= 0:
        ok &= j >= i + sh - wl
    if wr >= 0:
        ok &= j <= i + sh + wr
    return ok


def reference(q, k, v, scale, causal, wl, wr):
    B, Sq, Hq, D = q.shape
    Sk, Hkv = k.shape[1], k.shape[2]
    g = Hq // Hkv
    ok = visible(Sq, Sk, causal, wl, wr)
    qd = q.double().transpose(1, 2)
    kd = k.double().transpose(1, 2).repeat_interleave(g, dim=1)
    vd = v.double().transpose(1, 2).repeat_interleave(g, dim=1)
    s = (qd @ kd.transpose(-1, -2)) * scale
    s = s.masked_fill(~ok, -math.inf)
    lse = torch.logsumexp(s, dim=-1)  # -inf where no key is visible
    pr = torch.exp(s - lse[..., None]).nan_to_num(0.0)
    o = (pr @ vd).transpose(1, 2)
    # low precision: 16-bit inputs, scores rounded to 16 bits, P rounded to 16 bits
    dt = q.dtype
    s_lp = ((q.float().transpose(1, 2) @ k.float().transpose(1, 2).repeat_interleave(g, dim=1).transpose(-1, -2)) * scale).to(dt).float()
    s_lp = s_lp.masked_fill(~ok, -math.inf)
    p_lp = torch.softmax(s_lp, dim=-1).nan_to_num(0.0).to(dt)
    o_lp = (p_lp.float() @ v.float().transpose(1, 2).repeat_interleave(g, dim=1)).to(dt).transpose(1, 2)
    return o, lse, o_lp


CASES = [
    # B, Sq, Sk, Hq, Hkv, D, dtype, causal, wl, wr, layout, outliers
    (1, 128, 128, 1, 1, 64, "bf16", 0, -1, -1, "bshd", 0),
    (1, 128, 128, 1, 1, 128, "bf16", 0, -1, -1, "bshd", 0),
    (2, 256, 256, 2, 2, 64, "bf16", 0, -1, -1, "bshd", 0),
    (2, 384, 512, 4, 2, 128, "bf16", 0, -1, -1, "bshd", 0),
    (1, 1, 1, 2, 2, 64, "fp16", 0, -1, -1, "bshd", 0),
    (2, 17, 17, 4, 4, 128, "bf16", 1, -1, -1, "bhsd", 0),
    (1, 127, 127, 4, 2, 64, "fp16", 0, -1, -1, "padded", 1),
    (1, 1000, 1000, 2, 1, 128, "bf16", 1, -1, -1, "bshd", 0),
    (1, 4097, 4097, 2, 2, 64, "bf16", 0, -1, -1, "bhsd", 0),
    (2, 128, 1000, 16, 2, 128, "fp16", 1, -1, -1, "bshd", 1),
    (2, 1000, 128, 4, 1, 64, "bf16", 1, -1, -1, "padded", 0),
    (1, 17, 4097, 2, 2, 128, "bf16", 0, 33, 7, "bshd", 0),
    (3, 257, 300, 8, 8, 64, "fp16", 0, 33, 7, "bhsd", 0),
    (1, 1, 1000, 4, 4, 128, "bf16", 1, 64, -1, "bshd", 0),
    (2, 300, 257, 8, 1, 64, "bf16", 1, 64, -1, "padded", 1),
    (1, 1000, 1000, 4, 4, 128, "fp16", 0, 100, 0, "bshd", 0),
    (2, 2048, 2048, 4, 4, 64, "bf16", 1, -1, -1, "bshd", 0),
    (1, 2048, 2048, 8, 8, 128, "bf16", 0, -1, -1, "bshd", 0),
    (1, 777, 1500, 6, 3, 128, "bf16", 0, 200, 300, "bshd", 0),
    (4, 512, 512, 16, 16, 64, "fp16", 1, -1, -1, "bshd", 0),
    (1, 1000, 5000, 4, 4, 128, "bf16", 0, -1, -1, "bhsd", 0),  # long keys, several query blocks
    (2, 300, 4500, 4, 2, 128, "fp16", 0, 700, -1, "padded", 1),
    # more tiles than SMs (each persistent CTA runs several; d64 masked: the 128-row tiles), some
    # tiles without a visible key (seqlen_q > seqlen_k, causal)
    (4, 1000, 700, 8, 4, 64, "bf16", 1, -1, -1, "bhsd", 1),
    (6, 300, 500, 8, 4, 64, "fp16", 0, 100, 20, "padded", 0),
]


def check(lib, variants):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(1234)
    fails = 0
    for c in CASES:
        B, Sq, Sk, Hq, Hkv, D, dts, causal, wl, wr, layout, outl = c
        dt = torch.float16 if dts == "fp16" else torch.bfloat16
        q = make_tensor(B, Sq, Hq, D, dt, layout, outl, gen)
        k = make_tensor(B, Sk, Hkv, D, dt, layout, outl, gen)
        v = make_tensor(B, Sk, Hkv, D, dt, layout, outl, gen)
        scale = 1.0 / math.sqrt(D)
        o_ref, lse_ref, o_lp = reference(q, k, v, scale, causal, wl, wr)
        err_lp = (o_lp.double() - o_ref).abs().max().item()
        tol = 2 * err_lp + 1e-5
        lse_ref_b = lse_ref  # [B, H, Sq]
        for var in variants:
            o = make_tensor(B, Sq, Hq, D, dt, layout, 0, gen)
            o.fill_(float("nan"))
            lse = torch.full((B, Hq, Sq), float("nan"), device="cuda")
            p = lib.params(q, k, v, o, lse, causal, wl, wr, scale)
            lib.run(var, p)
            torch.cuda.synchronize()
            nan = torch.isnan(o).any().item()
            err = (o.double() - o_ref).abs().max().item()
            fin = torch.isfinite(lse_ref_b)
            lse_err = (lse[fin].double() - lse_ref_b[fin]).abs().max().item() if fin.any() else 0.0
            lse_inf_ok = bool((lse[~fin] == -math.inf).all().item()) if (~fin).any() else True
            ok = (not nan) and err <= tol and lse_err < 1e-3 and lse_inf_ok
            fails += not ok
            print("%s v%d %-60s err %.3e lowp %.3e (tol %.3e) lse %.2e inf_ok %d nan %d" % (
                "PASS" if ok else "FAIL", var, str(c), err, err_lp, tol, lse_err, lse_inf_ok, nan), flush=True)
            # the same without LSE (lse = NULL: the tensor-core row-sum rows)
            o.fill_(float("nan"))
            lib.run(var, lib.params(q, k, v, o, None, causal, wl, wr, scale))
            torch.cuda.synchronize()
            nan = torch.isnan(o).any().item()
            err = (o.double() - o_ref).abs().max().item()
            ok = (not nan) and err <= tol
            fails += not ok
            print("%s v%d %-60s err %.3e lowp %.3e (tol %.3e) no lse, nan %d" % (
                "PASS" if ok else "FAIL", var, str(c), err, err_lp, tol, nan), flush=True)
    print("check: %d failures" % fails, flush=True)
    return fails


def time_samples(fn, iters):
    """Events around each call, calls queued back to back and one synchronize at the end (as
    python -m cudadent.bench): GPU time per call, with the host's launch cost hidden whenever the
    host runs ahead. (Until step 7 each call was synchronized, so host overhead counted: cuDNN's
    larger one pulled its short-sequence figures down, e.g. d128 causal 512 261 vs 351.)"""
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    torch.cuda.synchronize()
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in ev]


def bench(libs, variants, suite, iters, only=None, rounds=3, nolse=False):
    """Per config: every (lib, variant) and cuDNN, over max(rounds, entries) rounds, each in its
    own shuffled order (seeded), so clock and thermal drift, the edge of going first and the edge
    of following a light entry hit all alike; median of the pooled samples. (A fixed cyclic order
    gave the entry after cuDNN ~4-5% at 16k: docs/kernels/sm90_fwd.md section 7.2.)"""
    from torch.nn.attention import sdpa_kernel, SDPBackend
    configs = []
    seqs = [512, 1024, 2048, 4096, 8192, 16384] if suite == "fa3" else [512, 16384]
    for D in (64, 128):
        for causal in (0, 1):
            for S in seqs:
                configs.append((16384 // S, S, 2048 // D, D, causal))
    if only is not None:  # e.g. "d128c0" picks head_dim 128 non-causal
        configs = [c for c in configs if "d%dc%d" % (c[3], c[4]) in only.split(",")]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    lse_modes = (True, False) if nolse else (True,)
    names = ["L%dv%d%s" % (li, v, "" if m else "n") for li in range(len(libs)) for v in variants
             for m in lse_modes]
    print("%-22s %s %9s %7s" % ("B,S,H,D,causal", " ".join("%9s" % n for n in names), "cudnn", "L0/cudnn"))
    ratios = []
    for B, S, H, D, causal in configs:
        dt = torch.bfloat16
        q = make_tensor(B, S, H, D, dt, "bshd", 0, gen)
        k = make_tensor(B, S, H, D, dt, "bshd", 0, gen)
        v = make_tensor(B, S, H, D, dt, "bshd", 0, gen)
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda")
        scale = 1.0 / math.sqrt(D)
        flops = 4.0 * B * H * S * S * D / (2 if causal else 1)
        fns = []
        for lib in libs:
            for var in variants:
                for m in lse_modes:
                    p = lib.params(q, k, v, o, lse if m else None, causal, -1, -1, scale)
                    fns.append((lambda lib=lib, var=var, p=p: lib.run(var, p)))
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

        def cud():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                F.scaled_dot_product_attention(qt, kt, vt, is_causal=bool(causal), scale=scale)
        fns.append(cud)
        samples = [[] for _ in fns]
        for f in fns:  # warm-up
            for _ in range(3):
                f()
        torch.cuda.synchronize()
        # the first measured has an edge at 8k-16k (docs/kernels/sm90_fwd.md section 7.2)
        nr = max(rounds, len(fns))
        for r in range(nr):
            order = list(range(len(fns)))
            random.Random(r).shuffle(order)
            for i in order:
                samples[i] += time_samples(fns[i], max(3, iters // nr))
        tf = [flops / statistics.median(t) / 1e9 for t in samples]
        ratios.append(tf[0] / tf[-1])
        print("%-22s %s %9.1f %7.3f" % ("%d,%d,%d,%d,%d" % (B, S, H, D, causal), " ".join("%9.1f" % r for r in tf[:-1]), tf[-1], tf[0] / tf[-1]), flush=True)
    gm = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print("geomean L0/cudnn %.3f, min %.3f" % (gm, min(ratios)), flush=True)


def trace(lib, cfg, variant):
    """One launch with the kernel's timeline on (fwd_trace.cuh); per consumer tile, SM cycles
    from tile start to Q ready, Q ready to the first S, the main loop (per key block), the
    epilogue, and the gap to the next tile, averaged by the tile's key-block count."""
    B, S, H, D, causal = cfg
    gen = torch.Generator(device="cuda")
    q, k, v = (make_tensor(B, S, H, D, torch.bfloat16, "bshd", 0, gen) for _ in range(3))
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device="cuda")
    p = lib.params(q, k, v, o, lse, causal, -1, -1, 1.0 / math.sqrt(D))
    MAXEV = 1024
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    buf = torch.zeros(sms * 4 * MAXEV * 2, dtype=torch.int64, device="cuda")
    lib.lib.sm90_dev_trace_set.argtypes = [ctypes.c_void_p]
    lib.run(variant, p)  # warm-up, untraced
    torch.cuda.synchronize()
    assert lib.lib.sm90_dev_trace_set(buf.data_ptr()) == 0, "library built without -DSM90_TRACE"
    lib.run(variant, p)
    torch.cuda.synchronize()
    lib.lib.sm90_dev_trace_set(None)
    ev = buf.view(sms, 4, MAXEV, 2).cpu().tolist()
    by_n = {}
    span, prod_qwait, prod_tiles = [], 0, 0
    for c in range(sms):
        prow = [e for e in ev[c][0] if e[0] != 0]
        for a, b2 in zip(prow, prow[1:]):
            if a[1] & 255 == 5 and b2[1] & 255 == 6:
                prod_qwait += b2[0] - a[0]
                prod_tiles += 1
        for wg in range(1, 4):
            row = [e for e in ev[c][wg] if e[0] != 0]
            if not row:
                continue
            span.append(row[-1][0] - row[0][0])
            tiles, cur = [], None
            for t, w in row:
                e, arg = w & 255, w >> 8
                if e == 0:
                    cur = {"n": arg, 0: t}
                    tiles.append(cur)
                elif cur is not None:
                    cur[e] = t
            for i, tl in enumerate(tiles):
                if not all(x in tl for x in (1, 2, 3, 4)):
                    continue
                gap = tiles[i + 1][0] - tl[4] if i + 1 < len(tiles) else 0
                d = by_n.setdefault(tl["n"], [0, 0, 0, 0, 0, 0, 0])
                for j, x in enumerate((tl[1] - tl[0], tl[2] - tl[1], tl[3] - tl[2], tl[4] - tl[3], gap, tl[4] - tl[0])):
                    d[j] += x
                d[6] += 1
    print("trace %s: consumer rows %d, span median %.0f cycles" % (cfg, len(span), statistics.median(span)))
    print("%6s %6s %9s %9s %11s %9s %7s %9s" % ("blocks", "tiles", "q_wait", "first_S", "loop/block", "epilogue", "gap", "tile"))
    tot = [0] * 6
    for n in sorted(by_n):
        d = by_n[n]
        cnt = d[6]
        print("%6d %6d %9.0f %9.0f %11.0f %9.0f %7.0f %9.0f" % (n, cnt, d[0] / cnt, d[1] / cnt, d[2] / cnt / max(1, n - 1), d[3] / cnt, d[4] / cnt, d[5] / cnt))
        for j in range(6):
            tot[j] += d[j]
    allt = sum(tot[:5]) or 1  # 0 when no tile ended within the event budget
    print("share of consumer time: q_wait %.1f%%, first_S %.1f%%, loop %.1f%%, epilogue %.1f%%, gap %.1f%%" % tuple(100.0 * x / allt for x in tot[:5]))
    if prod_tiles:
        print("producer: mean wait for a free Q slot %.0f cycles over %d tiles" % (prod_qwait / prod_tiles, prod_tiles))
    # per key block of the main loop (events 7-11): where a consumer's step goes, and how long the
    # turn takes to pass from one consumer to the next
    names = ["turn wait", "issue", "S wait", "softmax", "P V wait"]
    acc, steps, handoff, nh, period, npd = [0.0] * 5, 0, 0.0, 0, 0.0, 0
    sample = []
    for c in range(sms):
        merged = []
        for wg in range(1, 4):
            row = [(t, w & 255, wg) for t, w in ev[c][wg] if t != 0]
            merged += row
            prev_end, prev_turn, cur = None, None, {}
            for t, e, _ in row:
                if e == 7:
                    if prev_end is not None:
                        acc[0] += t - prev_end
                    if prev_turn is not None and t - prev_turn < 100000:
                        period += t - prev_turn
                        npd += 1
                    prev_turn, cur = t, {7: t}
                elif e in (8, 9, 10, 11) and 7 in cur:
                    cur[e] = t
                    if e in (10, 11) and all(x in cur for x in (8, 9, 10, 11)):
                        acc[1] += cur[8] - cur[7]
                        acc[2] += cur[9] - cur[8]
                        if cur[10] <= cur[11]:  # softmax, then the P V wait
                            acc[3] += cur[10] - cur[9]
                            acc[4] += cur[11] - cur[10]
                        else:  # the lazy softmax: the P V wait, then the softmax
                            acc[4] += cur[11] - cur[9]
                            acc[3] += cur[10] - cur[11]
                        steps += 1
                        prev_end = t
                elif e != 7:
                    prev_end = None if e == 0 else prev_end
        merged.sort()
        last_issued = {}
        for t, e, wg in merged:
            if e == 8:
                last_issued[wg] = t
            elif e == 7:
                others = [v for k, v in last_issued.items() if k != wg]
                if others:
                    handoff += t - max(others)
                    nh += 1
        if c == 0:
            sample = [x for x in merged if x[1] >= 7][200:260]
    if steps:
        print("main loop, per key block and consumer (%d steps): %s; step period %.0f" % (
            steps, ", ".join("%s %.0f" % (n, a / steps) for n, a in zip(names, acc)), period / max(1, npd)))
        print("turn hand-off (other consumer's issue -> this consumer's turn): %.0f cycles" % (handoff / max(1, nh)))
        t0 = sample[0][0] if sample else 0
        print("CTA 0 sample (cycle, consumer, event 7 turn 8 issued 9 S 10 softmax 11 PV):",
              " ".join("%d:%d:%d" % (t - t0, wg, e) for t, e, wg in sample))


def accuracy(libs, variant):
    """LSE and O errors against the float64 reference, for each library and for SDPA's cuDNN and
    flash (FA2) backends on the same inputs (their log-sum-exp through the aten ops that return
    it): max and mean |lse - ref| over finite rows, max |o - ref| and the lowp bound of check."""
    shapes = [(4, 1024, 8, 64, 0), (4, 1024, 8, 64, 1), (2, 2048, 8, 128, 0), (2, 2048, 8, 128, 1),
              (1, 4096, 4, 64, 0), (8, 512, 8, 128, 1)]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(99)
    print("%-20s %-5s %-8s %10s %10s %10s %10s" % ("B,S,H,D,causal", "dtype", "who", "lse max", "lse mean",
                                                 "o max", "o tol"))
    for dts in ("bf16", "fp16"):
        dt = torch.float16 if dts == "fp16" else torch.bfloat16
        for B, S, H, D, causal in shapes:
            q, k, v = (make_tensor(B, S, H, D, dt, "bshd", 0, gen) for _ in range(3))
            scale = 1.0 / math.sqrt(D)
            o_ref, lse_ref, o_lp = reference(q, k, v, scale, causal, -1, -1)
            tol = 2 * (o_lp.double() - o_ref).abs().max().item() + 1e-5
            res = []
            for li, lib in enumerate(libs):
                o = torch.empty_like(q)
                lse = torch.empty(B, H, S, device="cuda")
                lib.run(variant, lib.params(q, k, v, o, lse, causal, -1, -1, scale))
                res.append(("L%d" % li, o, lse))
            qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            try:
                r = torch.ops.aten._scaled_dot_product_cudnn_attention(qt, kt, vt, None, True, 0.0, bool(causal), False, scale=scale)
                res.append(("cudnn", r[0].transpose(1, 2), r[1].reshape(B, H, S)))
            except Exception as e:  # noqa: BLE001
                print("cudnn:", str(e)[:200])
            try:
                r = torch.ops.aten._scaled_dot_product_flash_attention(qt, kt, vt, 0.0, bool(causal), False, scale=scale)
                res.append(("flash", r[0].transpose(1, 2), r[1].reshape(B, H, S)))
            except Exception as e:  # noqa: BLE001
                print("flash:", str(e)[:200])
            torch.cuda.synchronize()
            for who, o, lse in res:
                d = (lse.double() - lse_ref).abs()
                print("%-20s %-5s %-8s %10.2e %10.2e %10.2e %10.2e" % (
                    "%d,%d,%d,%d,%d" % (B, S, H, D, causal), dts, who, d.max().item(), d.mean().item(),
                    (o.double() - o_ref).abs().max().item(), tol), flush=True)


if __name__ == "__main__":
    libs = [Lib(path) for path in sys.argv[1].split(",")]
    lib = libs[0]
    mode = sys.argv[2]
    args = sys.argv[3:]
    variants = [0, 1, 2]
    suite, iters, only, nolse = "fa3", 20, None, False
    for i, a in enumerate(args):
        if a == "--order":
            for lb in libs:
                lb.order = int(args[i + 1])
        if a == "--only":
            only = args[i + 1]
        if a == "--variants":
            variants = [int(x) for x in args[i + 1].split(",")]
        if a == "--suite":
            suite = args[i + 1]
        if a == "--iters":
            iters = int(args[i + 1])
        if a == "--nolse":  # bench: each library also without LSE (column suffix n); one: without LSE
            nolse = True
    print(torch.__version__, torch.backends.cudnn.version(), torch.cuda.get_device_name(), flush=True)
    if mode == "check":
        sys.exit(1 if check(lib, variants) else 0)
    elif mode == "trace":
        for cfg in args[0].split(";"):
            for lb in libs:
                print("library", lb.path)
                trace(lb, [int(x) for x in cfg.split(",")], variants[0])
    elif mode == "accuracy":
        accuracy(libs, variants[0])
    elif mode == "one":  # one call of one FA3-suite config, for ncu: one B,S,H,D,causal
        B, S, H, D, causal = [int(x) for x in args[0].split(",")]
        gen = torch.Generator(device="cuda")
        q, k, v = (make_tensor(B, S, H, D, torch.bfloat16, "bshd", 0, gen) for _ in range(3))
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda")
        p = lib.params(q, k, v, o, None if nolse else lse, causal, -1, -1, 1.0 / math.sqrt(D))
        for _ in range(2):
            lib.run(variants[0], p)
        torch.cuda.synchronize()
    elif mode == "cudnn_one":  # cuDNN's forward of one config, for ncu: twice with LSE, twice without
        B, S, H, D, causal = [int(x) for x in args[0].split(",")]
        gen = torch.Generator(device="cuda")
        q, k, v = (make_tensor(B, S, H, D, torch.bfloat16, "bshd", 0, gen).transpose(1, 2) for _ in range(3))
        torch.cuda.synchronize()
        for _ in range(2):
            torch.ops.aten._scaled_dot_product_cudnn_attention(q, k, v, None, True, 0.0, bool(causal), False,
                                                               scale=1.0 / math.sqrt(D))
        torch.cuda.synchronize()
        from torch.nn.attention import sdpa_kernel, SDPBackend
        with torch.no_grad(), sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            for _ in range(2):
                F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), scale=1.0 / math.sqrt(D))
        torch.cuda.synchronize()
    else:
        bench(libs, variants, suite, iters, only, nolse=nolse)
