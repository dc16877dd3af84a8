#!/usr/bin/env python3
"""dev/bench/energy_probe.py - energy per attention call, cudadent against SDPA's cuDNN backend,
and the time of a GEMM run right after each backend's attention, on one GPU at its power cap.

Why: in the training bench (python -m cudadent.bench --train) cudadent's attention kernels take
2.1 / 5.5 ms less GPU time a step than cuDNN's at d128-s4k / d128-s16k, but the step keeps only
0.9 / 4.1 ms: every cuBLAS GEMM runs 1-3% slower in cudadent's steps at an equal median SM clock,
the GPU power-capped (700 W) all the time. Hypothesis: at the cap a more power-dense attention
kernel leaves the clock lower for the kernels after it, so a step gains what attention saves in
ENERGY, not in time. It predicts that cudadent's calls draw more watts than cuDNN's (J/call falls
by less than ms/call) and that a GEMM right after cudadent's attention runs slower.

1. Energy per call, per shape (the training bench's d128-s4k and d128-s16k attention: causal, 16
   query over 8 KV heads; a non-causal 16k one without GQA), direction (fwd_train: forward with
   grad, so each backend computes its LSE; bwd: torch.autograd.grad(out, (q, k, v), dout,
   retain_graph=True) on one forward graph made first) and backend, A B B A over rounds: after
   0.3 s of warm-up, the call back to back for ~--seconds; NVML's energy counter read before and
   after (synchronized): J/call and W "edge". The counter moves in steps (reportedly ~100 ms:
   up to ~7% of a 1.5 s window), so a thread polls it every 2 ms and W "slope" is its rate from
   the first to the last step inside the run (J/call slope: that x the CUDA-event time a call).
   SM clock, power, temperature, power-cap share: cudadent.gpu_monitor.GpuMonitor, every 10 ms.
2. GEMM after: per rep, for cudadent, cudnn and a control (rotating orders), a ~40 ms burst
   (d128-s4k forward + backward pairs; control: the GEMM itself), then on the same stream one
   bf16 GEMM of the model's MLP size (16384 x 2048 @ 2048 x 5632), CUDA events around it only;
   then synchronize and 50 ms idle. GEMM ms median / p10 / p90, cudadent / cudnn.

On the GPU machine, from the checkout's root (dev/sm90_bwd/gpu_run.sh with PREBUILT=build-carry
unpacks the carried library into build-gpu/: its copy_lib):
  CUDADENT_LIBRARY=$PWD/build-gpu/libcudadent.so PYTHONPATH=$PWD/python \\
      python3 dev/bench/energy_probe.py --out $OUT
~100 s at the defaults on an H200 (estimate printed first), --quick ~35 s. Writes OUT/energy.md
(also printed) and OUT/energy.json (every measurement).
"""
import argparse
import itertools
import json
import math
import os
import statistics
import sys
import threading
import time

SHAPES = {  # q (B, S, H, D), k / v (B, S, Hkv, D), bf16
    "d128-s4k": dict(B=4, S=4096, H=16, Hkv=8, D=128, causal=True),
    "d128-s16k": dict(B=1, S=16384, H=16, Hkv=8, D=128, causal=True),
    "d128-s16k-full": dict(B=1, S=16384, H=16, Hkv=16, D=128, causal=False),
}
BACKENDS = ("cudadent", "cudnn")
DIRECTIONS = ("fwd_train", "bwd")
GEMM = (16384, 2048, 5632)  # tokens x hidden @ hidden x intermediate of d128-s4k's model
WARM_S = 0.3
STARTUP_S = 15.0  # CUDA context, library load, cuDNN plans, first calls


def parse_args():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="folder for energy.md and energy.json")
    p.add_argument("--seconds", type=float, default=1.5,
                   help="seconds of back-to-back calls an energy measurement (1.5; keep >= 1)")
    p.add_argument("--quick", action="store_true", help="d128-s4k, one round, 20 GEMM-after reps")
    p.add_argument("--shapes", default=None, help="comma-separated of " + ", ".join(SHAPES))
    p.add_argument("--rounds", type=int, default=None, help="energy rounds per backend (2)")
    p.add_argument("--reps", type=int, default=None, help="GEMM-after reps per label (100)")
    p.add_argument("--burst-ms", type=float, default=40.0, help="burst before the GEMM (40)")
    p.add_argument("--gap-ms", type=float, default=50.0, help="idle gap after each rep (50)")
    p.add_argument("--time-limit", type=float, default=170.0,
                   help="seconds; no measurement starts that would end after it (170)")
    a = p.parse_args()
    a.shapes = [s.strip() for s in (a.shapes or ("d128-s4k" if a.quick else ",".join(SHAPES)))
                .split(",") if s.strip()]
    if any(s not in SHAPES for s in a.shapes):
        p.error(f"unknown shape in {a.shapes}; choose from {', '.join(SHAPES)}")
    a.rounds, a.reps = a.rounds or (1 if a.quick else 2), a.reps or (20 if a.quick else 100)
    return a


def fail(msg):
    print(f"energy_probe: {msg}", file=sys.stderr)
    sys.exit(2)


def estimate_s(a):
    energy = len(a.shapes) * len(DIRECTIONS) * len(BACKENDS) * a.rounds * (a.seconds + WARM_S + 0.3)
    gemm = 3 * a.reps * (a.burst_ms + a.gap_ms + 8) / 1e3 + 3
    return STARTUP_S + 1.0 + energy + gemm, energy, gemm


class EnergyPoller:
    """Polls NVML's energy counter (mJ) every period_s in a thread, keeping (perf_counter s, mJ)
    at each change; the time is taken right before the read, while this thread holds the GIL."""

    def __init__(self, nvml, handle, period_s=0.002):
        self.read = lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        self.period_s, self.points, self._stop = period_s, [], threading.Event()
        self._thread = threading.Thread(target=self._loop, name="energy-poller", daemon=True)
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join()

    def _loop(self):
        last = None
        while not self._stop.wait(self.period_s):
            try:
                t, e = time.perf_counter(), self.read()
            except Exception:  # the main thread's own read() reports it
                return
            if e != last:
                self.points.append((t, e))
                last = e

    def rate(self, t0, t1):
        """(W from the first to the last step in [t0, t1] or None, steps, median ms apart)"""
        pts = [p for p in list(self.points) if t0 <= p[0] <= t1]
        if len(pts) < 3:
            return None, len(pts), None
        gap = statistics.median((b[0] - a[0]) * 1e3 for a, b in zip(pts, pts[1:]))
        return (pts[-1][1] - pts[0][1]) / 1e3 / (pts[-1][0] - pts[0][0]), len(pts), gap


def make_inputs(cfg, seed):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    B, S, H, Hkv, D = (cfg[k] for k in ("B", "S", "H", "Hkv", "D"))
    return tuple(torch.randn(s, dtype=torch.bfloat16, device="cuda", generator=g).requires_grad_()
                 for s in ((B, S, H, D), (B, S, Hkv, D), (B, S, Hkv, D)))


def make_call(backend, qkv, causal, direction):
    """fn() of one call as bench_backends.make_forward makes it (cudadent.attention on (B, S, H,
    D); SDPA on (B, H, S, D) views, enable_gqa where Hkv < H); run it under _backend_ctx."""
    import torch
    from cudadent.bench_backends import _backend_ctx, make_forward
    fwd, _, leaves, _ = make_forward(backend, *qkv, causal, "bshd")
    if direction == "fwd_train":
        return fwd
    with _backend_ctx(backend):
        out = fwd()
    dout = torch.randn_like(out)
    return lambda: torch.autograd.grad(out, leaves, dout, retain_graph=True)


def timed(fn, n):
    """(start, end) CUDA events on the current stream around n calls of fn; synchronized."""
    import torch
    stream = torch.cuda.current_stream()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(stream)
    for _ in range(n):
        fn()
    e.record(stream)
    torch.cuda.synchronize()
    return s, e


def measure_energy(call, backend, seconds, poller, mon, tag):
    import torch
    from cudadent.bench_backends import _backend_ctx
    with _backend_ctx(backend), torch.enable_grad():
        timed(call, 1)  # a first call may build plans (cuDNN)
        t = time.perf_counter()
        timed(call, 2)
        k = max(2, int(WARM_S / max((time.perf_counter() - t) / 2, 1e-4)))
        s, e = timed(call, k)  # the warm-up, timed to size the run
        n = max(3, math.ceil(seconds * 1e3 * k / s.elapsed_time(e)))
        mon.tag = tag
        e0, w0 = poller.read(), time.perf_counter()
        s, e = timed(call, n)
        w1 = time.perf_counter()
        e1 = poller.read()
        mon.tag = None
    gpu_s, wall = s.elapsed_time(e) / 1e3, w1 - w0
    w_slope, steps, step_ms = poller.rate(w0, w1)
    r = dict(calls=n, ms=gpu_s * 1e3 / n, wall_s=wall, gpu_busy=gpu_s / wall,
             J_edge=(e1 - e0) / 1e3 / n, W_edge=(e1 - e0) / 1e3 / wall, W_slope=w_slope,
             J_slope=w_slope * gpu_s / n if w_slope else None, counter_steps=steps,
             counter_step_ms=step_ms)
    r.update(mon.summary(tag) or {})
    return r


def run_energy(a, res, poller, mon, deadline):
    import torch
    torch.cuda.synchronize()
    t0, e0 = time.perf_counter(), poller.read()
    time.sleep(1.0)  # the idle baseline
    res["idle"] = dict(W_edge=(poller.read() - e0) / 1e3 / (time.perf_counter() - t0),
                       W_slope=poller.rate(t0, time.perf_counter())[0])
    for shape in a.shapes:
        cfg = SHAPES[shape]
        qkv = make_inputs(cfg, seed=1234)
        for rnd, (j, direction) in itertools.product(range(a.rounds), enumerate(DIRECTIONS)):
            for backend in BACKENDS if (rnd + j) % 2 == 0 else BACKENDS[::-1]:  # A B, B A, ...
                if time.monotonic() + a.seconds + WARM_S + 0.5 > deadline:
                    res["stopped_early"] = f"time limit, before {shape} {direction} {backend}"
                    return
                r = dict(shape=shape, direction=direction, backend=backend, round=rnd)
                try:
                    call = make_call(backend, qkv, cfg["causal"], direction)
                    r.update(measure_energy(call, backend, a.seconds, poller, mon,
                                            (shape, direction, backend, rnd)))
                    del call
                except Exception as ex:
                    r["error"] = f"{type(ex).__name__}: {ex}"
                    mon.tag = None
                    torch.cuda.synchronize()
                res["energy"].append(r)
                print(f"  {shape} {direction} {backend} r{rnd}: {f(r.get('ms'))} ms/call, "
                      f"{f(r.get('J_slope'), '.4f')} J/call, {f(r.get('W_slope'), '.0f')} W, "
                      f"{f(r.get('sm_mhz'), '.0f')} MHz {r.get('error', '')}", flush=True)
        del qkv
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def run_gemm_after(a, res, mon, deadline):
    import torch
    from cudadent.bench_backends import _backend_ctx, make_forward
    qkv = make_inputs(SHAPES["d128-s4k"], seed=4321)
    stream = torch.cuda.current_stream()
    M, K, N = GEMM
    x, w, y = (torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
               for m, n in ((M, K), (K, N), (M, N)))
    units = {"control": lambda: torch.matmul(x, w, out=y)}
    for b in BACKENDS:
        fwd, _, leaves, _ = make_forward(b, *qkv, True, "bshd")
        with _backend_ctx(b):
            dout = torch.randn_like(fwd())
        units[b] = lambda fwd=fwd, leaves=leaves, dout=dout: \
            torch.autograd.grad(fwd(), leaves, dout)  # a forward with LSE, then its backward
    labels, count = BACKENDS + ("control",), {}
    for lab in labels:  # calibrate: calls a burst
        with _backend_ctx(lab):
            timed(units[lab], 3)
            s, e = timed(units[lab], 5)
        count[lab] = max(1, round(a.burst_ms * 5 / s.elapsed_time(e)))
    out = res["gemm_after"] = {lab: dict(calls_per_burst=count[lab], gemm_ms=[], burst_ms=[])
                               for lab in labels}
    perms = list(itertools.permutations(labels))
    time.sleep(a.gap_ms / 1e3)
    for i in range(a.reps):
        if time.monotonic() + 3 * (a.burst_ms + a.gap_ms + 10) / 1e3 > deadline:
            res["stopped_early"] = f"time limit, GEMM-after rep {i} of {a.reps}"
            break
        for lab in perms[i % len(perms)]:
            t0, t1, t2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            with _backend_ctx(lab):
                mon.tag = ("after", lab)
                t0.record(stream)
                for _ in range(count[lab]):
                    units[lab]()
                t1.record(stream)
                units["control"]()  # the timed GEMM
                t2.record(stream)
                t2.synchronize()
                mon.tag = None
            out[lab]["burst_ms"].append(t0.elapsed_time(t1))
            out[lab]["gemm_ms"].append(t1.elapsed_time(t2))
            time.sleep(a.gap_ms / 1e3)
    for lab in labels:
        out[lab]["monitor"] = mon.summary(("after", lab))


def f(v, spec=".3f"):
    return "n/a" if v is None else format(v, spec)


def med(rows, key):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def ratio(x, y):
    return x / y if x is not None and y else None


def row(cells):
    return "| " + " | ".join(str(c) for c in cells) + " |"


COLS = (("ms/call", "ms", ".3f"), ("J/call slope", "J_slope", ".4f"),
        ("J/call edge", "J_edge", ".4f"), ("W slope", "W_slope", ".0f"),
        ("W edge", "W_edge", ".0f"), ("SM MHz", "sm_mhz", ".0f"),
        ("SM MHz min", "sm_mhz_min", ".0f"), ("NVML W", "watts", ".0f"),
        ("capped", "power_capped", ".0%"), ("max C", "temp_max", ".0f"))
RATIO_KEYS = ("ms", "J_slope", "J_edge", "W_slope", "W_edge", "sm_mhz")


def markdown(a, res):
    env, rows = res["env"], [r for r in res["energy"] if "error" not in r]
    L = ["# Energy probe: cudadent vs cuDNN attention at the power cap", "",
         f"- GPU: {env.get('gpu')} (max SM clock, power limit: {env.get('smi', 'n/a')}); driver "
         f"{env.get('driver')}; torch {env.get('torch')} (CUDA {env.get('cuda')}); cuDNN "
         f"{env.get('cudnn')}; cudadent {env.get('cudadent')}; commit {env.get('commit')}; "
         f"{env.get('date')}", f"- command: `{env.get('command')}`",
         f"- elapsed {res['elapsed_s']:.0f} s" + (f"; STOPPED EARLY: {res['stopped_early']}"
                                                  if res.get("stopped_early") else ""), ""]
    L += [f"**{k}**: {res[k]}\n" for k in ("error_energy", "error_gemm") if res.get(k)]
    if "idle" in res:
        steps = [r["counter_step_ms"] for r in rows if r.get("counter_step_ms")]
        L += ["## 1. Energy per call", "",
              f"~{a.seconds:g} s of back-to-back calls after {WARM_S:g} s of warm-up, medians over "
              f"{a.rounds} round(s). NVML's energy counter stepped every "
              f"{f(statistics.median(steps) if steps else None, '.0f')} ms (median): 'edge' (read "
              "before / after) errs by up to one step over the window, keep --seconds >= 1; "
              "'slope' (first to last step inside the run) has no edge error. Idle: "
              f"{f(res['idle']['W_slope'], '.0f')} W. SM MHz, NVML W, capped, max C: 10 ms "
              "samples.",
              "",
              row(("shape", "dir", "backend") + tuple(c[0] for c in COLS) + ("calls",)),
              row(["---"] * (len(COLS) + 4))]
        for shape, d in itertools.product(a.shapes, DIRECTIONS):
            g = {b: [r for r in rows if (r["shape"], r["direction"], r["backend"]) == (shape, d, b)]
                 for b in BACKENDS}
            L += [row([shape, d, b] + [f(med(rs, k), sp) for _, k, sp in COLS] +
                      [sum(r["calls"] for r in rs)]) for b, rs in g.items() if rs]
            if all(g.values()):
                L.append(row([shape, d, "**cudadent / cudnn**"] + [
                    f(ratio(med(g["cudadent"], k), med(g["cudnn"], k)), ".3f")
                    if k in RATIO_KEYS else "" for _, k, _ in COLS] + [""]))
        L += [""] + [f"- {r['shape']} {r['direction']} {r['backend']}: {r['error']}"
              for r in res["energy"] if "error" in r]
        L += ["", "Reading: a W ratio > 1 (J ratio above the ms ratio) means cudadent's calls are "
              "more power-dense than cuDNN's.", ""]
    ga = res.get("gemm_after")
    if ga:
        ctrl = statistics.median(ga["control"]["gemm_ms"]) if ga["control"]["gemm_ms"] else None
        L += ["## 2. The GEMM after an attention burst", "",
              f"Per rep: a ~{a.burst_ms:g} ms burst, one {GEMM[0]}x{GEMM[1]} @ {GEMM[1]}x{GEMM[2]} "
              f"bf16 GEMM (timed alone), synchronize, {a.gap_ms:g} ms idle. NVML columns: samples "
              "during burst + GEMM.", "",
              row(("before the GEMM", "calls/burst", "burst ms", "GEMM ms median", "p10", "p90",
                   "vs control", "SM MHz", "NVML W", "capped", "reps")), row(["---"] * 11)]
        for lab, r in ga.items():
            t, m = r["gemm_ms"], r.get("monitor") or {}
            if t:
                q = statistics.quantiles(t, n=10) if len(t) >= 2 else [t[0]] * 9
                L.append(row([lab, r["calls_per_burst"], f(statistics.median(r["burst_ms"]), ".1f"),
                              f(statistics.median(t), ".4f"), f(q[0], ".4f"), f(q[8], ".4f"),
                              f(ratio(statistics.median(t), ctrl), ".4f"),
                              f(m.get("sm_mhz"), ".0f"), f(m.get("watts"), ".0f"),
                              f(m.get("power_capped"), ".0%"), len(t)]))
        x, y = ga["cudadent"]["gemm_ms"], ga["cudnn"]["gemm_ms"]
        if x and y:
            L += ["", f"GEMM after cudadent / after cudnn (medians): **"
                  f"{statistics.median(x) / statistics.median(y):.4f}** (the hypothesis predicts "
                  "> 1; check 'capped' during the bursts: with the idle gaps the GPU may stay "
                  "under its power cap)."]
    return "\n".join(L) + "\n"


def main():
    a = parse_args()
    t_start = time.monotonic()
    try:
        import torch
        ok = torch.cuda.is_available()
    except Exception as e:  # no torch, or one that cannot load its CUDA libraries
        ok = f"torch does not import: {type(e).__name__}: {e}"
    if ok is not True:
        fail(f"CUDA is not available ({ok or 'torch.cuda.is_available() is False'}); run on a GPU")
    try:
        import cudadent
        cudadent.library_path()
        from cudadent.bench_env import environment
        from cudadent.gpu_monitor import GpuMonitor
    except Exception as e:
        fail(f"cudadent is not usable ({type(e).__name__}: {e}); set PYTHONPATH, CUDADENT_LIBRARY")
    total, e_s, g_s = estimate_s(a)
    print(f"energy_probe: estimated {total:.0f} s (energy {e_s:.0f} s, GEMM-after {g_s:.0f} s, "
          f"startup ~{STARTUP_S:.0f} s); time limit {a.time_limit:.0f} s", flush=True)
    os.makedirs(a.out, exist_ok=True)
    env = environment()
    env["command"] = " ".join([f"{k}={v}" for k, v in sorted(os.environ.items())
                               if k.startswith("CUDADENT_")] + ["python3"] + sys.argv)
    res = dict(env=env, args=vars(a), energy=[], stopped_early=None)
    sys.setswitchinterval(5e-4)  # the sampler threads get the GIL often while the host launches
    vis = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    mon = GpuMonitor(device_index=int(vis) if vis.isdigit() else 0, period_s=0.01).start()
    poller = EnergyPoller(mon._nvml, mon._handle) if mon.error is None else None
    if poller is None:
        res["error_energy"] = f"NVML not available ({mon.error}): no energy measurement"
    deadline = t_start + a.time_limit
    try:
        for name, run in (("energy", lambda: poller and run_energy(a, res, poller, mon, deadline)),
                          ("gemm", lambda: run_gemm_after(a, res, mon, deadline))):
            if res["stopped_early"] is None:
                try:
                    run()
                except Exception as ex:
                    res[f"error_{name}"] = f"{type(ex).__name__}: {ex}"
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
    finally:
        if poller is not None:
            poller.stop()
        mon.stop()
        res["elapsed_s"] = time.monotonic() - t_start
        with open(os.path.join(a.out, "energy.json"), "w") as fh:
            json.dump(res, fh, indent=1, default=str)
        with open(os.path.join(a.out, "energy.md"), "w") as fh:
            fh.write(markdown(a, res))
        print(markdown(a, res))
    return 1 if res.get("error_energy") or res.get("error_gemm") else 0


if __name__ == "__main__":
    sys.exit(main())
