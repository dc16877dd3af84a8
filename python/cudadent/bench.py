"""python -m cudadent.bench: cudadent against PyTorch's attention backends, in one process.

Suites (docs/DESIGN.md):
  fa3    16k tokens, hidden 2048: head_dim 64 and 128, heads = 2048 / head_dim, seqlen 512 .. 16k,
         batch = 16384 / seqlen, causal and not, bf16, forward and backward. TFLOP/s.
  gqa    grouped-query attention: 32 query heads over 8 KV heads of head_dim 128, causal,
         seqlen 4k (batch 4) and 8k (batch 2): 16k tokens, bf16, forward and backward. TFLOP/s.
         In the full default run, not in --quick (--suite gqa runs it alone).
  dims   issue 27's widths as the FA3 suite (heads = 2048 / head_dim): head_dim 96, 256, and 192
         with V's 128; seqlen 512 .. 16k, causal and not, bf16. Only as --suite dims. FLOPs
         2 B H S^2 (D + Dv) forward.
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
import json
import os
import random
import statistics
import sys
import time
import traceback

from .bench_suites import (BACKENDS, DIMS_PAIRS, DIRECTIONS, FA3_SEQLENS, GQA_SHAPES, GRAPH_CALLS,  # noqa: F401
                           QUICK_SEQLENS, QUICK_SMALL, SDPA_BACKENDS, SMALL_SHAPES,
                           TIMED_IN_ROUNDS)
from .bench_report import _short_error, report_stem, write_report  # noqa: F401 (report_stem: tests)
from .bench_backends import _backend_ctx, make_forward  # noqa: F401
from .bench_env import _repo_root, environment  # noqa: F401 (environment: train_bench)
from .bench_timing import (flops, time_eager_loop, time_event_samples, time_events,  # noqa: F401
                           time_graph)


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


# ---- the runs ---------------------------------------------------------------------------------

def _inputs(B, H, S, D, dtype, requires_grad, seed, Hkv=None, Dv=None):
    import torch
    g = torch.Generator(device="cuda").manual_seed(seed)
    shapes = ((B, S, H, D), (B, S, Hkv or H, D), (B, S, Hkv or H, Dv or D))
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
    return _inputs(B, H, S, D, tdtype, True, seed=1234 + S + D + int(causal), Hkv=cfg.get("Hkv"),
                   Dv=cfg.get("Dv"))


def _base(cfg):
    keys = ("suite", "B", "H") + (("Hkv",) if "Hkv" in cfg else ()) + ("S", "D") \
        + (("Dv",) if "Dv" in cfg else ()) + ("causal", "dtype")
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
                                direction, cfg.get("Dv")) / (r["ms"] * 1e-3) / 1e12
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
                                r["direction"], cfg.get("Dv")) / (r["ms"] * 1e-3) / 1e12
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
    if args.suite == "dims":
        for D, Dv in DIMS_PAIRS:
            for causal in args.masks:
                for S in args.seqlens or FA3_SEQLENS:
                    cfgs.append(dict(suite="dims", B=16384 // S, H=2048 // D, S=S, D=D, Dv=Dv,
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
    p.add_argument("--suite", choices=("fa3", "gqa", "small", "dims", "all"), default="all",
                   help="all: the FA3 suite, the GQA suite (not with --quick) and the small shapes; "
                   "dims (alone): head dims 96, 256 and 192 with V's 128, as the FA3 suite")
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
