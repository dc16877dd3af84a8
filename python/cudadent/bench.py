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
import statistics
import subprocess
import sys
import time
import traceback

from .bench_suites import (BACKENDS, DIRECTIONS, FA3_SEQLENS, GQA_SHAPES, GRAPH_CALLS,  # noqa: F401
                           QUICK_SEQLENS, QUICK_SMALL, SDPA_BACKENDS, SMALL_SHAPES,
                           TIMED_IN_ROUNDS)
from .bench_report import _short_error, report_stem, write_report  # noqa: F401 (report_stem: tests)


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
