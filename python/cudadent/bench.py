"""python -m cudadent.bench: cudadent against PyTorch's attention backends, in one process.

Suites (docs/DESIGN.md):
  fa3    16k tokens, hidden 2048: head_dim 64 and 128, heads = 2048 / head_dim, seqlen 512 .. 16k,
         batch = 16384 / seqlen, causal and not, bf16, forward and backward. TFLOP/s.
  gqa    grouped-query attention: 32 query heads over 8 KV heads of head_dim 128, causal,
         seqlen 4k (batch 4) and 8k (batch 2): 16k tokens, bf16, forward and backward. TFLOP/s.
         In the full default run, not in --quick (--suite gqa runs it alone).
  small  B,H,S,D = 1,1,32,64 / 1,1,128,64 / 1,8,512,64 / 2,8,128,64 / 8,8,128,64 causal /
         16,8,512,64 causal, fp16, forward and backward. GPU time per call from a CUDA graph of
         100 calls, and the eager time per call of a Python loop of 100 calls.
  --train  a training step of Llama models from transformers instead (cudadent.train_bench):
         tokens/s, the attention share of the step, peak memory and the loss curves.
Backends: cudadent, SDPA's cudnn / flash / efficient (torch.nn.attention.sdpa_kernel), and
FlexAttention (torch.compile(flex_attention)) where it compiles. A backend that fails (for
cudadent: a kernel not built yet, say) is shown as n/a, with the reason listed under the table.

How it times (see also the Method section of the written report):
  * inputs: fresh torch.randn draws (never zeros), one (batch, seqlen, heads, head_dim) set per
    shape shared by every backend; SDPA and Flex get (batch, heads, seqlen, head_dim) views of
    the same memory (what a training loop has after its QKV projection; --sdpa-layout bhsd gives
    them contiguous (B, H, S, D) copies instead);
  * forward (fwd): the attention call alone under torch.no_grad (inference: no backend computes
    the log-sum-exp); forward in training (fwd_train, FA3 suite only): the same call with
    gradients recorded (every backend computes and saves its log-sum-exp, as in a training step);
    backward: the backward alone, as
    torch.autograd.grad(out, (q, k, v), dout, retain_graph=True) on one forward's graph made
    before timing, so no forward is inside the timed region (dout: a fixed randn tensor);
  * large shapes: CUDA events around each call, after warm-up; every (backend, direction) of a
    shape timed in rounds, each round in its own shuffled order (clocks fall under sustained
    load at the power limit, so what follows lighter work reads high); the median of the pooled
    calls;
  * FLOPs: 4*B*H*Sq*Sk*D forward, halved for causal; backward 2.5x forward (FlashAttention's
    convention). Total time of the batch, never divided by batch size.
Writes <out>/<gpu>.md, .png (TFLOP/s vs seqlen, one panel per head_dim x causal x fwd/bwd;
fwd_train is in the tables only) and .json (every measurement, one line per row), and prints the
tables. The names are stable, so a run replaces the GPU's previous result (git history keeps the
old ones): <gpu> is the GPU's name in lower case (nvidia-h200, nvidia-h100-80gb-hbm3), then
-quick for --quick and -partial for a run of part of the suites or backends (--suite other than
all, --seqlens, --head-dims, --causal, --backends, --no-flex), so neither replaces a full run.
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import time
import traceback

SDPA_BACKENDS = ("cudnn", "flash", "efficient")
BACKENDS = ("cudadent",) + SDPA_BACKENDS + ("flex",)

FA3_SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)
QUICK_SEQLENS = (1024, 8192)
SMALL_SHAPES = (  # B, H, S, D, causal
    (1, 1, 32, 64, False), (1, 1, 128, 64, False), (1, 8, 512, 64, False),
    (2, 8, 128, 64, False), (8, 8, 128, 64, True), (16, 8, 512, 64, True))
QUICK_SMALL = ((1, 1, 128, 64, False), (1, 8, 512, 64, False), (8, 8, 128, 64, True),
               (16, 8, 512, 64, True))
GQA_SHAPES = ((4, 32, 8, 4096, 128, True), (2, 32, 8, 8192, 128, True))  # B, Hq, Hkv, S, D, causal
GRAPH_CALLS = 100
# directions measured per suite: fwd (no grad), fwd_train (grad recorded, LSE saved), bwd
DIRECTIONS = {"fa3": ("fwd", "fwd_train", "bwd"), "gqa": ("fwd", "fwd_train", "bwd"),
              "small": ("fwd", "bwd")}
TIMED_IN_ROUNDS = ("fa3", "gqa")  # suites whose shapes are timed by measure_fa3_interleaved


# ---- progress ---------------------------------------------------------------------------------

class _SimpleBar:
    def __init__(self, total, desc):
        self.total, self.n, self.desc, self.t0, self.postfix = total, 0, desc, time.time(), ""

    def set_postfix_str(self, s):
        self.postfix = s
        self._draw()

    def update(self, k=1):
        self.n += k
        self._draw()

    def _draw(self):
        frac = self.n / max(self.total, 1)
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        sys.stderr.write(f"\r{self.desc} [{bar}] {self.n}/{self.total} "
                         f"{time.time() - self.t0:5.0f}s {self.postfix[:50]:<50}")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")


def _progress(total, desc):
    try:
        from tqdm import tqdm
        return tqdm(total=total, desc=desc, file=sys.stderr, dynamic_ncols=True)
    except ImportError:
        return _SimpleBar(total, desc)


# ---- environment ------------------------------------------------------------------------------

def _run(cmd, cwd=None):
    try:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _repo_root():
    for start in (os.getcwd(), os.path.dirname(os.path.abspath(__file__))):
        d = start
        while True:
            if os.path.isfile(os.path.join(d, "include", "cudadent.h")):
                return d
            parent = os.path.dirname(d)
            if parent == d:
                break
            d = parent
    return None


def _git_commit():
    env = os.environ.get("CUDADENT_GIT_COMMIT")
    if env:
        return env
    root = _repo_root()
    if root is None:
        return "unknown"
    head = _run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root)
    if head is None:
        return "unknown (no git)"
    dirty = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root)
    return head + ("+dirty" if dirty else "")


def environment():
    import torch
    env = {
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "gpu": torch.cuda.get_device_name(),
        "sms": torch.cuda.get_device_properties(0).multi_processor_count,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "python": platform.python_version(),
        "commit": _git_commit(),
        "command": "python -m cudadent.bench " + " ".join(sys.argv[1:]),
    }
    smi = _run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit",
                "--format=csv,noheader"])
    if smi:
        parts = [p.strip() for p in smi.splitlines()[0].split(",")]
        env["driver"] = parts[0]
        env["smi"] = ", ".join(parts[1:])
    else:
        try:
            import pynvml
            pynvml.nvmlInit()
            v = pynvml.nvmlSystemGetDriverVersion()
            env["driver"] = v.decode() if isinstance(v, bytes) else v
        except Exception:
            env["driver"] = "unknown"
    try:
        import cudadent
        env["cudadent"] = f"{cudadent.library_version()} ({cudadent.library_path()})"
    except Exception as e:
        env["cudadent"] = f"not loaded: {e}"
    return env


# ---- timing -----------------------------------------------------------------------------------

def time_events(fn, warmup, iters, budget_s=2.0):
    """Median milliseconds of fn() over CUDA events around each call."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    one = time.perf_counter() - t0
    iters = max(5, min(iters, int(budget_s / max(one, 1e-6))))
    return statistics.median(time_event_samples(fn, iters))


def time_event_samples(fn, calls):
    """Milliseconds of each of `calls` calls of fn, CUDA events around each (no warm-up).

    The events are recorded on the current stream passed explicitly: Event.record() without it
    makes a Stream object each time, ~6 us of host time per event on the H200 machine (dev/
    pkg_overhead.py --breakdown), which made entries whose GPU time is short (d128 causal 512)
    time the host instead of the GPU."""
    import torch
    stream = torch.cuda.current_stream()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(calls)]
    for i in range(calls):
        starts[i].record(stream)
        fn()
        ends[i].record(stream)
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def time_graph(fn, stream, replays, calls=GRAPH_CALLS):
    """Milliseconds per call: a CUDA graph of `calls` calls of fn, median over replays.

    fn (and whatever made its inputs, such as the forward of a backward) must have run on
    `stream`, so that autograd's backward kernels land on the capturing stream."""
    import torch
    g = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    stream.synchronize()
    with torch.cuda.graph(g, stream=stream):
        for _ in range(calls):
            fn()
    g.replay()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(stream)
        with torch.cuda.stream(stream):
            g.replay()
        e.record(stream)
        e.synchronize()
        times.append(s.elapsed_time(e))
    del g
    return statistics.median(times) / calls


def time_eager_loop(fn, stream, repeats, calls=GRAPH_CALLS):
    """Milliseconds per call of a Python loop of `calls` eager calls (events around the loop)."""
    import torch
    times = []
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
        stream.synchronize()
        for _ in range(repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for _ in range(calls):
                fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
    return statistics.median(times) / calls


def flops(B, H, S, D, causal, direction):
    f = 4.0 * B * H * S * S * D
    if causal:
        f /= 2
    return f * (2.5 if direction == "bwd" else 1.0)


# ---- backends ---------------------------------------------------------------------------------

_FLEX = {}


def _flex_compiled():
    import torch
    if "fn" not in _FLEX:
        from torch.nn.attention.flex_attention import flex_attention
        # One compile per shape and grad mode: above dynamo's default limit of 8 entries it would
        # silently run the unfused eager fallback (and measure that).
        for name in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit",
                     "accumulated_cache_size_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, max(getattr(torch._dynamo.config, name), 512))
        _FLEX["fn"] = torch.compile(flex_attention, dynamic=False)
    return _FLEX["fn"]


def _backend_ctx(backend):
    """What make_forward's ctx holds for `backend`, made fresh (a context manager is single-use)."""
    import contextlib
    if backend in SDPA_BACKENDS:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel([{"cudnn": SDPBackend.CUDNN_ATTENTION,
                             "flash": SDPBackend.FLASH_ATTENTION,
                             "efficient": SDPBackend.EFFICIENT_ATTENTION}[backend]])
    return contextlib.nullcontext()


def make_forward(backend, q, k, v, causal, sdpa_layout):
    """(fn, ctx, leaves, to_bshd): fn() runs one forward of `backend` while ctx is held; leaves
    are the tensors gradients are taken for; to_bshd(out) gives the output as (B, S, H, D).
    q, k, v: (B, S, H, D) tensors; k and v may have fewer heads than q (GQA)."""
    import contextlib
    import torch.nn.functional as F

    if backend == "cudadent":
        import cudadent
        return (lambda: cudadent.attention(q, k, v, causal=causal)), contextlib.nullcontext(), \
            (q, k, v), (lambda o: o)
    if sdpa_layout == "bhsd":  # separate contiguous (B, H, S, D) leaves: no copy in the timing
        qt, kt, vt = (t.detach().transpose(1, 2).contiguous().requires_grad_(t.requires_grad)
                      for t in (q, k, v))
        leaves = (qt, kt, vt)
    else:
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        leaves = (q, k, v)
    to_bshd = lambda o: o.transpose(1, 2)  # noqa: E731
    gqa = {"enable_gqa": True} if k.shape[2] != q.shape[2] else {}
    if backend in SDPA_BACKENDS:
        return (lambda: F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal, **gqa)), \
            _backend_ctx(backend), leaves, to_bshd
    if backend == "flex":
        flex = _flex_compiled()
        from torch.nn.attention.flex_attention import create_block_mask

        def causal_mask(b, h, qi, ki):
            return qi >= ki

        def full_mask(b, h, qi, ki):
            return qi >= 0
        # Always a block mask made up front: with None, flex builds one on every call (a host to
        # device copy, which CUDA graph capture refuses). A full mask has only full blocks.
        block_mask = create_block_mask(causal_mask if causal else full_mask, None, None,
                                       q.shape[1], k.shape[1], device=q.device)
        return (lambda: flex(qt, kt, vt, block_mask=block_mask, **gqa)), \
            contextlib.nullcontext(), leaves, to_bshd
    raise ValueError(backend)


def _short_error(e):
    msg = f"{type(e).__name__}: {e}".strip().splitlines()[0]
    return msg[:300]


# ---- the runs ---------------------------------------------------------------------------------

def _inputs(B, H, S, D, dtype, requires_grad, seed, Hkv=None):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    shapes = ((B, S, H, D),) + ((B, S, Hkv or H, D),) * 2
    q, k, v = (torch.randn(shape, dtype=dtype, device="cuda", generator=g) for shape in shapes)
    if requires_grad:
        for t in (q, k, v):
            t.requires_grad_(True)
    return q, k, v


def _compare_output(cfg, backend, out, r):
    """The first SDPA/Flex forward output of a shape becomes cfg["ref"]; cudadent's is compared
    with it (r["max_abs_diff_vs_sdpa"])."""
    out = out.float()
    if backend == "cudadent":
        if cfg.get("ref") is not None:
            r["max_abs_diff_vs_sdpa"] = float((out - cfg["ref"]).abs().max())
    elif cfg.get("ref") is None:
        cfg["ref"] = out


def _prepare_call(cfg, backend, direction, qkv, args, r):
    """(call, grad): what to time for one backend and direction, and the grad mode to time it
    in. fwd: the forward (its output checked by _compare_output into r); fwd_train: the same
    call with gradients recorded; bwd: the backward of one forward graph made here. Runs on the
    current stream; time the call under _backend_ctx(backend)."""
    import torch
    q, k, v = qkv
    fwd, ctx, leaves, to_bshd = make_forward(backend, q, k, v, cfg["causal"], args.sdpa_layout)
    with ctx:
        if direction == "fwd":
            with torch.no_grad():
                _compare_output(cfg, backend, to_bshd(fwd()), r)
            return fwd, False
        if direction == "fwd_train":
            return fwd, True
        o = fwd()
        dout = torch.randn_like(o)

    def bwd(o=o, dout=dout, leaves=leaves):
        return torch.autograd.grad(o, leaves, dout, retain_graph=True)
    return bwd, True


def _record_error(r, e, args):
    import torch
    r["error"] = _short_error(e)
    if isinstance(e, _GraphFailed):
        r["eager_ms"] = e.eager_ms
    if args.verbose:
        traceback.print_exc()
    try:
        torch.cuda.synchronize()
    except Exception:
        pass


def _shape_inputs(cfg):
    import torch
    B, H, S, D, causal = (cfg[k] for k in ("B", "H", "S", "D", "causal"))
    tdtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    return _inputs(B, H, S, D, tdtype, True, seed=1234 + S + D + int(causal), Hkv=cfg.get("Hkv"))


def _base(cfg):
    keys = ("suite", "B", "H") + (("Hkv",) if "Hkv" in cfg else ()) + ("S", "D", "causal", "dtype")
    return {k: cfg[k] for k in keys}


def measure_shape(cfg, backend, args, stream):
    """Result dicts (each direction in turn) of one shape and one backend. The first SDPA/Flex
    forward output of a shape is kept in cfg["ref"]; cudadent's is compared with it."""
    import torch
    qkv = _shape_inputs(cfg)
    results = []
    for direction in DIRECTIONS[cfg["suite"]]:
        r = dict(_base(cfg), backend=backend, direction=direction)
        try:
            with torch.cuda.stream(stream):
                call, grad = _prepare_call(cfg, backend, direction, qkv, args, r)
                with _backend_ctx(backend), torch.set_grad_enabled(grad):
                    r.update(_time(call, cfg["suite"], args, stream))
                del call
            r["tflops"] = flops(cfg["B"], cfg["H"], cfg["S"], cfg["D"], cfg["causal"],
                                direction) / (r["ms"] * 1e-3) / 1e12
        except Exception as e:  # n/a in the table; the reason listed under it
            _record_error(r, e, args)
        results.append(r)
    return results


def measure_fa3_interleaved(cfg, backends, args, stream):
    """Result dicts of one FA3-suite shape for several backends, every (backend, direction)
    timed in args.rounds rounds, each round in its own shuffled order (seeded by the round), args.iters
    calls in all (an untimed call before each round's share), median of the pooled samples.

    Why: on an H100/H200 at its power limit the SM clock drops ~15% under sustained load (1.98 ->
    ~1.65 GHz), so a measurement that follows lighter work reads up to ~10% high (measured:
    dev/sm90_fwd/fwd_modes.py, bench/RESULTS.md session 5). Timing one backend's directions one
    after another favoured whatever followed a light run. Rounds in a fixed cyclic order still
    gave each entry the same predecessor in nearly every round (in the dev bench the entry after
    cuDNN read ~4-5% high at 16k, docs/kernels/sm90_fwd.md section 7.2); shuffled rounds vary it."""
    import torch
    qkv = _shape_inputs(cfg)
    results, entries = [], []  # entries: (result dict, backend, grad mode, call)
    for backend in backends:
        for direction in DIRECTIONS[cfg["suite"]]:
            r = dict(_base(cfg), backend=backend, direction=direction)
            results.append(r)
            try:
                with torch.cuda.stream(stream):
                    call, grad = _prepare_call(cfg, backend, direction, qkv, args, r)
                    with _backend_ctx(backend), torch.set_grad_enabled(grad):
                        for _ in range(args.warmup):
                            call()
                    torch.cuda.synchronize()
                entries.append((r, backend, grad, call))
            except Exception as e:  # n/a in the table; the reason listed under it
                _record_error(r, e, args)
    rounds = max(1, args.rounds)
    share = max(1, -(-args.iters // rounds))
    samples = {id(e[0]): [] for e in entries}
    for rnd in range(rounds):
        order = list(range(len(entries)))
        random.Random(rnd).shuffle(order)
        for i in order:
            r, backend, grad, call = entries[i]
            if "error" in r:
                continue
            try:
                with torch.cuda.stream(stream), _backend_ctx(backend), \
                        torch.set_grad_enabled(grad):
                    call()
                    samples[id(r)] += time_event_samples(call, share)
            except Exception as e:
                _record_error(r, e, args)
    for r, *_ in entries:
        if "error" not in r:
            r["ms"] = statistics.median(samples[id(r)])
            r["tflops"] = flops(cfg["B"], cfg["H"], cfg["S"], cfg["D"], cfg["causal"],
                                r["direction"]) / (r["ms"] * 1e-3) / 1e12
    return results


class _GraphFailed(Exception):
    def __init__(self, eager_ms, cause):
        super().__init__(f"CUDA graph capture failed: {_short_error(cause)}")
        self.eager_ms = eager_ms


def _time(fn, suite, args, stream):
    if suite == "small":
        eager = time_eager_loop(fn, stream, max(3, args.replays // 4))
        try:
            return {"ms": time_graph(fn, stream, args.replays), "eager_ms": eager}
        except Exception as e:
            raise _GraphFailed(eager, e) from e
    return {"ms": time_events(fn, args.warmup, args.iters)}


def shapes(args):
    cfgs = []
    if args.suite in ("fa3", "all"):
        seqlens = args.seqlens or (QUICK_SEQLENS if args.quick else FA3_SEQLENS)
        for D in args.head_dims:
            for causal in args.masks:
                for S in seqlens:
                    cfgs.append(dict(suite="fa3", B=16384 // S, H=2048 // D, S=S, D=D,
                                     causal=causal, dtype="bf16"))
    if args.suite == "gqa" or (args.suite == "all" and not args.quick):
        for B, H, Hkv, S, D, causal in GQA_SHAPES:
            if args.seqlens is None or S in args.seqlens:
                cfgs.append(dict(suite="gqa", B=B, H=H, Hkv=Hkv, S=S, D=D, causal=causal,
                                 dtype="bf16"))
    if args.suite in ("small", "all"):
        for B, H, S, D, causal in (QUICK_SMALL if args.quick else SMALL_SHAPES):
            cfgs.append(dict(suite="small", B=B, H=H, S=S, D=D, causal=causal, dtype="fp16"))
    return cfgs


def backends_for(cfg, args):
    out = []
    for b in args.backends:
        if b == "flex":
            if args.no_flex:
                continue
            if args.quick and (cfg["suite"] == "small" or cfg["S"] < max(QUICK_SEQLENS)
                               or cfg["D"] != 128):
                continue  # --quick: flex (a compile per shape) only at head_dim 128, seqlen 8k
        out.append(b)
    # SDPA first: its output is the reference the cudadent output is compared with.
    return sorted(out, key=lambda b: (b == "flex", b == "cudadent"))


def run(args):
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("cudadent.bench: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = True
    env = environment()
    cfgs = shapes(args)
    # FlexAttention compiles each shape: its runs go last, so that --time-limit cuts them first.
    # FA3 shapes: one task of all but flex, interleaved (measure_fa3_interleaved); small shapes
    # (GPU time from CUDA graphs of short calls) and flex: one backend after another.
    tasks = []
    for cfg in cfgs:
        bs = [b for b in backends_for(cfg, args) if b != "flex"]
        if cfg["suite"] in TIMED_IN_ROUNDS and bs:
            tasks.append((cfg, tuple(bs)))
        else:
            tasks += [(cfg, b) for b in bs]
    tasks += [(cfg, b) for cfg in cfgs for b in backends_for(cfg, args) if b == "flex"]
    bar = _progress(len(tasks), "cudadent.bench")
    stream = torch.cuda.Stream()
    results = []
    t0 = time.time()
    for i, (cfg, backend) in enumerate(tasks):
        names = backend if isinstance(backend, tuple) else (backend,)
        if args.time_limit is not None and time.time() - t0 > args.time_limit:
            for b in names:
                for direction in DIRECTIONS[cfg["suite"]]:
                    results.append(dict(_base(cfg), backend=b, direction=direction,
                                        error=f"skipped: --time-limit {args.time_limit:g} s "
                                              "reached"))
            bar.update(1)
            continue
        bar.set_postfix_str(f"{'+'.join(names)} B{cfg['B']} H{cfg['H']} S{cfg['S']} D{cfg['D']}"
                            f"{' causal' if cfg['causal'] else ''}")
        if isinstance(backend, tuple):
            results.extend(measure_fa3_interleaved(cfg, backend, args, stream))
        else:
            results.extend(measure_shape(cfg, backend, args, stream))
        bar.update(1)
        if i + 1 == len(tasks) or tasks[i + 1][0] is not cfg:
            cfg.pop("ref", None)  # this shape is done: free its reference output
    bar.close()
    env["elapsed_s"] = round(time.time() - t0, 1)
    return env, results


# ---- report -----------------------------------------------------------------------------------

def _fa3_method(args):
    rounds = getattr(args, "rounds", None)  # absent from reports written before rounds existed
    if rounds is None:
        timing = (f"- FA3 suite: CUDA events around each call after {args.warmup} warm-up calls, "
                  f"median of up to\n  {args.iters} calls (fewer for calls longer than "
                  f"~{2.0 / args.iters * 1e3:.0f} ms), one backend after another.")
    else:
        share = max(1, -(-args.iters // max(1, rounds)))
        order = ("in its own shuffled order" if getattr(args, "round_order", "cyclic") == "shuffled"
                 else "opened by the next entry in turn")
        timing = (f"- FA3 and GQA suites: CUDA events around each call; per shape every "
                  f"(backend, direction) but flex\n  after {args.warmup} warm-up calls, timed in "
                  f"{rounds} rounds of {share} calls (plus one untimed), each round\n  {order} "
                  f"(at the power limit the clock falls ~15% under\n  "
                  f"sustained load: what follows lighter work reads high); median of the pooled "
                  f"calls.\n  FlexAttention: one direction after another, after the others.")
    return timing + ("\n  FLOPs: 4·B·H·S²·D forward, halved for causal; backward 2.5x forward.")


def _cell(r, key="tflops", fmt="{:.1f}"):
    if r is None:
        return "-"
    if "error" in r:
        return "n/a"
    return fmt.format(r[key])


def _index(results):
    return {(r["suite"], r["B"], r["H"], r.get("Hkv", r["H"]), r["S"], r["D"], r["causal"],
             r["direction"], r["backend"]): r for r in results}


def _tflops_rows(idx, shapes, suite, backends, lines):
    """Rows of a TFLOP/s table (FA3 or GQA suite): one per shape and direction."""
    for (_, D, causal, S, B, H, Hkv) in shapes:
        for d in DIRECTIONS[suite]:
            rs = {b: idx.get((suite, B, H, Hkv, S, D, causal, d, b)) for b in backends}
            best = max((r["tflops"] for b, r in rs.items()
                        if b in SDPA_BACKENDS and r and "error" not in r), default=None)
            c = rs.get("cudadent")
            ratio = f"{c['tflops'] / best:.2f}" if c and "error" not in c and best else "-"
            diff = c.get("max_abs_diff_vs_sdpa") if c else None
            heads = f"{H}" if Hkv == H else f"{H}/{Hkv}"
            lines.append(f"| {D} | {'yes' if causal else 'no'} | {S} | {B} x {heads} | {d} | "
                         + " | ".join(_cell(rs[b]) for b in backends)
                         + f" | {ratio} | {'' if diff is None else f'{diff:.2e}'} |")
    lines.append("")


def tables(env, results, backends):
    idx = _index(results)
    lines = []
    keys = sorted({(r["suite"], r["D"], r["causal"], r["S"], r["B"], r["H"],
                    r.get("Hkv", r["H"])) for r in results},
                  key=lambda t: (t[0] != "fa3", t[0] != "gqa", t[1], t[2], t[3], t[4]))
    fa3 = [t for t in keys if t[0] == "fa3"]
    gqa = [t for t in keys if t[0] == "gqa"]
    small = [t for t in keys if t[0] == "small"]
    for suite, shapes, title in (
            ("fa3", fa3, "### FA3 suite: bf16, TFLOP/s (higher is better)\n"),
            ("gqa", gqa, "### GQA suite: bf16, query heads / KV heads, TFLOP/s (higher is "
                         "better)\n")):
        if not shapes:
            continue
        lines.append(title)
        lines.append("| head_dim | causal | seqlen | batch x heads | dir | "
                     + " | ".join(backends) + " | cudadent / best SDPA | max abs diff vs SDPA |")
        lines.append("|" + "---|" * (6 + len(backends) + 1))
        _tflops_rows(idx, shapes, suite, backends, lines)
    if small:
        lines.append(f"### Small shapes: fp16, microseconds per call, GPU time in a CUDA graph of "
                     f"{GRAPH_CALLS} calls (eager loop time per call in brackets; lower is "
                     f"better)\n")
        lines.append("| B,H,S,D | causal | dir | " + " | ".join(backends)
                     + " | best SDPA / cudadent (graph) |")
        lines.append("|" + "---|" * (3 + len(backends) + 1))
        for (_, D, causal, S, B, H, Hkv) in small:
            for d in ("fwd", "bwd"):
                rs = {b: idx.get(("small", B, H, Hkv, S, D, causal, d, b)) for b in backends}
                cells = []
                for b in backends:
                    r = rs[b]
                    if r is None:
                        cells.append("-")
                    elif "error" in r:
                        cells.append(f"n/a ({r['eager_ms'] * 1e3:.1f})" if "eager_ms" in r
                                     else "n/a")
                    else:
                        cells.append(f"{r['ms'] * 1e3:.1f} ({r['eager_ms'] * 1e3:.1f})")
                best = min((r["ms"] for b, r in rs.items()
                            if b in SDPA_BACKENDS and r and "error" not in r), default=None)
                c = rs.get("cudadent")
                ratio = f"{best / c['ms']:.2f}" if c and "error" not in c and best else "-"
                lines.append(f"| {B},{H},{S},{D} | {'yes' if causal else 'no'} | {d} | "
                             + " | ".join(cells) + f" | {ratio} |")
        lines.append("")
    errors = {}
    for r in results:
        if "error" in r:
            errors.setdefault((r["backend"], r["error"]), []).append(
                f"{r['suite']} B{r['B']} H{r['H']}"
                f"{'/' + str(r['Hkv']) if r.get('Hkv', r['H']) != r['H'] else ''}"
                f" S{r['S']} D{r['D']}"
                f"{' causal' if r['causal'] else ''} {r['direction']}")
    if errors:
        lines.append("### n/a: why\n")
        for (b, e), where in sorted(errors.items()):
            more = f" (+{len(where) - 3} more)" if len(where) > 3 else ""
            lines.append(f"- **{b}** ({len(where)} runs: {'; '.join(where[:3])}{more}): `{e}`")
        lines.append("")
    return "\n".join(lines)


def method_text(args):
    return f"""### Method

- One process, one GPU; every backend sees the same fresh `torch.randn` inputs per shape
  (batch, seqlen, heads, head_dim); SDPA and FlexAttention get
  {"(batch, heads, seqlen, head_dim) views of that memory (no copy)" if args.sdpa_layout == "bshd"
   else "contiguous (batch, heads, seqlen, head_dim) copies"}.
- SDPA backends forced one at a time with `torch.nn.attention.sdpa_kernel`; FlexAttention is
  `torch.compile(flex_attention, dynamic=False)` with a causal (or full) `create_block_mask` made
  before timing (compile time excluded){"; with --quick only at head_dim 128, seqlen 8k" if args.quick else ""}.
- Forward (fwd): the attention call alone, under `torch.no_grad()` (no backend computes its
  log-sum-exp). Forward in training (fwd_train, FA3 suite): the same call with gradients
  recorded, as in a training step (each backend computes and saves its log-sum-exp). Backward: the backward alone,
  `torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)` on one forward graph made before
  timing (no forward inside the timed region).
{_fa3_method(args)}
- Small shapes: a CUDA graph of {GRAPH_CALLS} calls, median of {args.replays} replays, divided by
  {GRAPH_CALLS} (GPU time per call); eager: CUDA events around a Python loop of {GRAPH_CALLS}
  eager calls, divided by {GRAPH_CALLS} (includes launch overhead).
- GQA suite: k and v have fewer heads than q; SDPA and FlexAttention get `enable_gqa=True`
  (a backend that refuses it is n/a). FLOPs count the query heads.
- "max abs diff vs SDPA": cudadent's forward output against the first SDPA backend that ran,
  a sanity check only (the correctness criterion is in tests/python).
"""


def is_partial(args):
    """True where the run measured part of what a full run measures (see report_stem)."""
    g = lambda k, d=None: getattr(args, k, d)  # noqa: E731 (args of an older saved .json too)
    return bool(g("suite", "all") != "all" or g("seqlens") or g("no_flex")
                or tuple(g("head_dims", None) or (64, 128)) != (64, 128)
                or g("causal", "both") != "both"
                or set(g("backends", None) or BACKENDS) != set(BACKENDS))


def report_stem(gpu, args):
    """The file name (without extension) of a run's report: stable per GPU, so the next run
    replaces it. <gpu>[-quick][-partial]: a --quick or partial run never replaces a full one."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(gpu).lower()).strip("-") or "gpu"
    return (slug + ("-quick" if getattr(args, "quick", False) else "")
            + ("-partial" if is_partial(args) else ""))


def _dumps(x):
    return json.dumps(x, default=str, separators=(", ", ": "))


def json_text(env, args, results):
    """Valid JSON, compact: the environment and arguments on a line each, one line per row."""
    parts = ["{" + f'"env": {_dumps(env)},', f'"args": {_dumps(args)},', '"results": [']
    parts += [_dumps(r) + ("," if i + 1 < len(results) else "") for i, r in enumerate(results)]
    parts.append("]}")
    return "\n".join(parts) + "\n"


def write_report(env, results, args):
    os.makedirs(args.out, exist_ok=True)
    stem = report_stem(env["gpu"], args)
    md_path = os.path.join(args.out, stem + ".md")
    backends = [b for b in BACKENDS if b in args.backends]
    header = [f"## cudadent benchmark: {env['gpu']}, {env['date']}\n",
              "| | |", "|---|---|"]
    for key in ("gpu", "sms", "driver", "smi", "torch", "cuda", "cudnn", "python", "cudadent",
                "commit", "command", "elapsed_s", "note"):
        if key in env:
            header.append(f"| {key} | `{env[key]}` |")
    text = "\n".join(header) + "\n\n" + tables(env, results, backends) + "\n" + method_text(args)
    with open(md_path, "w") as f:
        f.write(text)
    with open(os.path.join(args.out, stem + ".json"), "w") as f:
        f.write(json_text(env, {k: v for k, v in vars(args).items()}, results))
    png = None
    if not args.no_plot:
        try:
            png = plot(results, backends, os.path.join(args.out, stem + ".png"), env)
        except Exception as e:
            print(f"cudadent.bench: no plot: {_short_error(e)}", file=sys.stderr)
    return md_path, png, text


def plot(results, backends, path, env):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fa3 = [r for r in results if r["suite"] == "fa3"]
    if not fa3:
        return None
    panels = [(D, c, d) for d in ("fwd", "bwd") for D in (64, 128) for c in (False, True)]
    colors = {"cudadent": "#d62728", "cudnn": "#1f77b4", "flash": "#2ca02c",
              "efficient": "#9467bd", "flex": "#ff7f0e"}
    fig, axes = plt.subplots(2, 4, figsize=(18, 8.5), sharex=True)
    for ax, (D, causal, d) in zip(axes.flat, panels):
        for b in backends:
            pts = sorted((r["S"], r["tflops"]) for r in fa3 if r["backend"] == b and r["D"] == D
                         and r["causal"] == causal and r["direction"] == d and "error" not in r)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=b,
                        color=colors.get(b), linewidth=2.8 if b == "cudadent" else 1.3,
                        zorder=3 if b == "cudadent" else 2)
        ax.set_xscale("log", base=2)
        seqlens = sorted({r["S"] for r in fa3})
        ax.set_xticks(seqlens)
        ax.set_xticklabels([f"{s // 1024}k" if s >= 1024 else str(s) for s in seqlens])
        ax.set_title(f"{d}, head_dim {D}, {'causal' if causal else 'non-causal'}")
        ax.set_xlabel("seqlen (batch = 16k / seqlen)")
        ax.set_ylabel("TFLOP/s")
        ax.grid(True, alpha=0.3)
        ax.set_ylim(bottom=0)
    handles, labels = [], []
    for ax in axes.flat:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.suptitle(f"cudadent vs PyTorch attention, FA3 suite (16k tokens, hidden 2048, bf16) · "
                 f"{env['gpu']} · torch {env['torch']} · cuDNN {env['cudnn']} · "
                 f"commit {env['commit']}", y=0.99, fontsize=11)
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), bbox_to_anchor=(0.5, 0.96))
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _default_out():
    root = _repo_root()
    if root and os.path.isdir(os.path.join(root, "bench")):
        return os.path.join(root, "bench", "results")
    return os.path.join(os.getcwd(), "cudadent-bench-results")


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m cudadent.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true",
                   help="a subset (seqlen 1k and 8k, 4 small shapes, flex at d128 8k only): "
                   "about a minute")
    p.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="skip the measurements left after this long (reported as skipped), so a "
                   "report is always written; FlexAttention's runs (a compile per shape) come "
                   "last and are cut first")
    p.add_argument("--suite", choices=("fa3", "gqa", "small", "all"), default="all",
                   help="all: the FA3 suite, the GQA suite (not with --quick) and the small shapes")
    p.add_argument("--out", default=None, help="folder for the .md/.png/.json (default: "
                   "bench/results of the checkout, else ./cudadent-bench-results); the files are "
                   "named by GPU, <gpu>[-quick][-partial], and replace that GPU's previous ones")
    p.add_argument("--backends", default=",".join(BACKENDS),
                   help=f"comma-separated subset of {','.join(BACKENDS)}")
    p.add_argument("--seqlens", default=None, help="FA3 suite seqlens, comma-separated")
    p.add_argument("--head-dims", default="64,128", help="FA3 suite head dims (64,128)")
    p.add_argument("--causal", choices=("both", "yes", "no"), default="both",
                   help="FA3 suite: causal configs, non-causal, or both")
    p.add_argument("--iters", type=int, default=None, help="timed calls per measurement (30)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=6,
                   help="FA3 suite: rounds over every (backend, direction) of a shape, each "
                   "in its own shuffled order; --iters calls in all")
    p.add_argument("--replays", type=int, default=None, help="graph replays, small shapes (20)")
    p.add_argument("--no-flex", action="store_true", help="skip FlexAttention")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--sdpa-layout", choices=("bshd", "bhsd"), default="bshd",
                   help="bshd: SDPA gets (B,H,S,D) views of (B,S,H,D) memory; bhsd: copies")
    p.add_argument("-v", "--verbose", action="store_true", help="print tracebacks of failures")
    p.add_argument("--render", metavar="JSON", default=None,
                   help="measure nothing: write the .md/.png of a saved .json again (into --out, "
                   "default the .json's folder)")
    from . import train_bench
    train_bench.add_arguments(p)
    args = p.parse_args(argv)
    if args.train:
        train_bench.finish_args(args, p)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in args.backends:
        if b not in BACKENDS:
            p.error(f"unknown backend {b!r}; choose from {', '.join(BACKENDS)}")
    if args.seqlens:
        args.seqlens = tuple(int(s) for s in args.seqlens.split(","))
    args.head_dims = tuple(int(d) for d in str(args.head_dims).split(","))
    for d in args.head_dims:
        if d not in (64, 128):
            p.error(f"--head-dims: {d} is not in the FA3 suite (64, 128)")
    args.masks = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    if args.iters is None:
        args.iters = 10 if args.quick else 30
    if args.replays is None:
        args.replays = 8 if args.quick else 20
    args.round_order = "shuffled"  # saved with the report: older reports' rounds were cyclic
    args.out_given = args.out
    if args.out is None:
        args.out = _default_out()
    return args


def render(path, out=None):
    """Write the .md/.png of a saved .json again (e.g. after annotating a measurement)."""
    with open(path) as f:
        saved = json.load(f)
    if saved.get("kind") == "train":  # a --train report
        from . import train_report
        env, targs, result = train_report.load(path)
        return train_report.write_report(env, targs, result,
                                         out or os.path.dirname(os.path.abspath(path)),
                                         quick=targs.get("quick", False),
                                         no_plot=targs.get("no_plot", False))
    args = argparse.Namespace(**saved["args"])
    args.out = out or os.path.dirname(os.path.abspath(path))
    return write_report(saved["env"], saved["results"], args)


def main(argv=None):
    args = parse_args(argv)
    if args.render:
        md_path, png, text = render(args.render, args.out_given)
        print(text)
        print(f"wrote {md_path}" + (f" and {png}" if png else ""))
        return 0
    if args.train:
        from . import train_bench
        return train_bench.main(args)
    env, results = run(args)
    md_path, png, text = write_report(env, results, args)
    print(text)
    print(f"wrote {md_path}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
