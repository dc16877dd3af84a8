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
  varlen issue 28's packed batch: 16384 tokens of documents whose lengths are drawn
         log-uniformly from 64 to 8192 with a fixed seed (the last cut to make the total), causal
         within each document, 16 heads (q and kv), head_dim 128, bf16; forward in training (with
         LSE) and backward; beside it cudadent's dense causal 8 x 2048 (same heads) in the same
         rounds. TFLOP/s counting only FLOPs within documents; the issue's two goals are lines
         of the report. Backends: cudadent.flash_attn_varlen_func, FlexAttention with a document
         block mask, flash_attn's flash_attn_varlen_func (backend flash_attn, n/a when it does not
         import); SDPA has no varlen form (it runs the dense shape only). Only as --suite varlen.
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
all, --seqlens, --head-dims, --causal, --backends, --no-flex), so neither replaces a full run;
--suite varlen writes <gpu>-varlen (-partial without cudadent or flex), --suite dims <gpu>-dims
(-partial with --seqlens, --causal, --backends or --no-flex).
"""
import argparse
import json
import os
import random
import statistics
import sys
import time
import traceback

from .bench_suites import (ALL_BACKENDS, BACKENDS, DIMS_PAIRS, DIRECTIONS,  # noqa: F401
                           FA3_SEQLENS, GQA_SHAPES, GRAPH_CALLS, QUICK_SEQLENS, QUICK_SMALL,
                           SDPA_BACKENDS, SMALL_SHAPES, TIMED_IN_ROUNDS, VARLEN_DENSE,
                           VARLEN_HEAD_DIM, VARLEN_HEADS, VARLEN_ONLY_BACKENDS, VARLEN_SEED,
                           VARLEN_TOKENS, varlen_doc_lengths)
from .bench_report import _short_error, report_stem, write_report  # noqa: F401 (report_stem: tests)
from .bench_backends import _backend_ctx, make_forward, make_varlen_forward  # noqa: F401
from .bench_env import _repo_root, environment  # noqa: F401 (environment: train_bench)
from .bench_timing import (flops, shape_flops, time_eager_loop, time_event_samples,  # noqa: F401
                           time_events, time_graph, varlen_flops)


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


def _compare_varlen(cfg, results):
    """The varlen suite's sanity check: cudadent's packed output (of the forward made for its
    backward) against flash_attn's, else flex's: r["max_abs_diff_vs_sdpa"] (the key of the
    other suites) and r["diff_vs"] (whose output) on cudadent's bwd row. Frees the outputs."""
    outs = cfg.pop("outs", {})
    ref = next((b for b in ("flash_attn", "flex") if b in outs), None)
    if "cudadent" not in outs or ref is None:
        return
    diff = float((outs["cudadent"].float() - outs[ref].float()).abs().max())
    for r in results:
        if r.get("docs") and r["backend"] == "cudadent" and r["direction"] == "bwd":
            r["max_abs_diff_vs_sdpa"], r["diff_vs"] = diff, ref


def _prepare_call(cfg, backend, direction, qkv, args, r):
    """(call, grad): what to time for one backend and direction, and the grad mode to time it
    in. fwd: the forward (its output checked by _compare_output into r); fwd_train: the same
    call with gradients recorded; bwd: the backward of one forward graph made here (a packed
    batch, cfg["docs"]: that forward's output kept in cfg["outs"] for _compare_varlen). Runs on
    the current stream; time the call under _backend_ctx(backend)."""
    import torch
    q, k, v = qkv
    if cfg.get("docs"):  # a packed batch (varlen suite)
        fwd, ctx, leaves, to_bshd = make_varlen_forward(backend, q, k, v, cfg["docs"],
                                                        cfg["causal"])
    else:
        fwd, ctx, leaves, to_bshd = make_forward(backend, q, k, v, cfg["causal"],
                                                 args.sdpa_layout)
    with ctx:
        if direction == "fwd":
            with torch.no_grad():
                _compare_output(cfg, backend, to_bshd(fwd()), r)
            return fwd, False
        if direction == "fwd_train":
            return fwd, True
        o = fwd()
        dout = torch.randn_like(o)
    if cfg.get("docs"):  # kept for _compare_varlen (after every backend is prepared)
        cfg.setdefault("outs", {})[backend] = to_bshd(o.detach())

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
    """The shape's q, k, v, drawn on the current (default) stream and complete when this returns:
    the backends run on the bench's own stream, a non-blocking one that nothing orders after the
    default stream. Without the synchronize, the first backend's first call (the reference output
    of _compare_output) could read the inputs before torch.randn wrote them: memory the caching
    allocator had just freed from the previous shape, of the same size in the FA3 and dims
    suites (16k tokens), i.e. the previous shape's inputs (session 29: a 5.36 max abs
    difference at one dims shape, cudadent against a wrong FA2 reference). The synchronize before
    the draw keeps the previous shape's work on the bench stream from overlapping the reuse of its
    freed memory."""
    import torch
    B, H, S, D, causal = (cfg[k] for k in ("B", "H", "S", "D", "causal"))
    tdtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    torch.cuda.synchronize()
    qkv = _inputs(B, H, S, D, tdtype, True, seed=1234 + S + D + int(causal), Hkv=cfg.get("Hkv"),
                  Dv=cfg.get("Dv"))
    torch.cuda.synchronize()
    return qkv


def _base(cfg):
    keys = ("suite", "B", "H") + (("Hkv",) if "Hkv" in cfg else ()) + ("S", "D") \
        + (("Dv",) if "Dv" in cfg else ()) + ("causal", "dtype") + (("docs",) if "docs" in cfg
                                                                     else ())
    return {k: (list(cfg[k]) if k == "docs" else cfg[k]) for k in keys}


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
            r["tflops"] = shape_flops(cfg, direction) / (r["ms"] * 1e-3) / 1e12
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
    qkv = _shape_inputs(cfg)
    results, entries = [], []
    for backend in backends:
        results += _prepare_entries(cfg, backend, qkv, args, stream, entries)
    _time_in_rounds(entries, args, stream)
    return results


def _prepare_entries(cfg, backend, qkv, args, stream, entries):
    """Result dicts of one shape and backend, one a direction; each direction that prepares and
    warms up (args.warmup calls) is appended to entries as (result dict, cfg, backend, grad mode,
    call), the others carry their error (n/a)."""
    import torch
    results = []
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
            entries.append((r, cfg, backend, grad, call))
        except Exception as e:  # n/a in the table; the reason listed under it
            _record_error(r, e, args)
    return results


def _time_in_rounds(entries, args, stream, deadline=None, bar=None):
    """Time prepared entries (_prepare_entries) in args.rounds rounds, each in its own shuffled
    order (random.Random(round)), args.iters calls an entry in all (an untimed call before each
    round's share); r["ms"] and r["tflops"]: the median of the pooled calls. deadline (a
    time.time()): no round starts after it once one round is done (r["rounds"] then says how
    many ran)."""
    import torch
    rounds = max(1, args.rounds)
    share = max(1, -(-args.iters // rounds))
    samples = {id(e[0]): [] for e in entries}
    done = 0
    for rnd in range(rounds):
        if deadline is not None and done and time.time() > deadline:
            break
        order = list(range(len(entries)))
        random.Random(rnd).shuffle(order)
        for i in order:
            r, cfg, backend, grad, call = entries[i]
            if "error" in r:
                continue
            try:
                with torch.cuda.stream(stream), _backend_ctx(backend), \
                        torch.set_grad_enabled(grad):
                    call()
                    samples[id(r)] += time_event_samples(call, share)
            except Exception as e:
                _record_error(r, e, args)
        done += 1
        if bar is not None:
            bar.update(1)
    for r, cfg, *_ in entries:
        if "error" not in r:
            r["ms"] = statistics.median(samples[id(r)])
            r["tflops"] = shape_flops(cfg, r["direction"]) / (r["ms"] * 1e-3) / 1e12
            if done < rounds:
                r["rounds"] = done


def measure_varlen(cfgs, args, stream, t0):
    """Result dicts of the varlen suite: every (shape, backend, direction) of the packed batch and
    of the dense shape beside it, timed together in the same shuffled rounds (_time_in_rounds),
    so that both of the issue's ratios (cudadent against flex on the packed batch, cudadent
    packed against cudadent dense) are taken under the same clock conditions. FlexAttention
    (a compile per direction) is prepared last: past --time-limit it is skipped, and no round
    starts past it once one is done."""
    deadline = t0 + args.time_limit if args.time_limit is not None else None
    plan = [(cfg, b) for cfg in cfgs for b in backends_for(cfg, args)]
    plan.sort(key=lambda cb: cb[1] == "flex")  # stable: the order of backends_for otherwise
    bar = _progress(len(plan) + max(1, args.rounds), "cudadent.bench varlen")
    results, entries, inputs = [], [], {}
    for cfg, backend in plan:
        bar.set_postfix_str(f"prepare {backend} {'packed' if cfg.get('docs') else 'dense'}")
        if deadline is not None and time.time() > deadline:
            results += [dict(_base(cfg), backend=backend, direction=d,
                             error=f"skipped: --time-limit {args.time_limit:g} s reached")
                        for d in DIRECTIONS[cfg["suite"]]]
        else:
            if id(cfg) not in inputs:
                inputs[id(cfg)] = _shape_inputs(cfg)
            results += _prepare_entries(cfg, backend, inputs[id(cfg)], args, stream, entries)
        bar.update(1)
    for cfg in cfgs:
        _compare_varlen(cfg, results)
    bar.set_postfix_str("rounds")
    _time_in_rounds(entries, args, stream, deadline, bar)
    bar.close()
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
    if args.suite == "varlen":  # the packed batch, and the dense shape of the second goal
        cfgs.append(dict(suite="varlen", B=1, H=VARLEN_HEADS, S=VARLEN_TOKENS, D=VARLEN_HEAD_DIM,
                         causal=True, dtype="bf16", docs=varlen_doc_lengths()))
        B, H, S, D = VARLEN_DENSE
        cfgs.append(dict(suite="varlen", B=B, H=H, S=S, D=D, causal=True, dtype="bf16"))
    if args.suite in ("small", "all"):
        for B, H, S, D, causal in (QUICK_SMALL if args.quick else SMALL_SHAPES):
            cfgs.append(dict(suite="small", B=B, H=H, S=S, D=D, causal=causal, dtype="fp16"))
    return cfgs


def backends_for(cfg, args):
    if cfg["suite"] == "varlen":
        return _varlen_backends_for(cfg, args)
    out = []
    for b in args.backends:
        if b in VARLEN_ONLY_BACKENDS:
            continue
        if b == "flex":
            if args.no_flex:
                continue
            if args.quick and (cfg["suite"] == "small" or cfg["S"] < max(QUICK_SEQLENS)
                               or cfg["D"] != 128):
                continue  # --quick: flex (a compile per shape) only at head_dim 128, seqlen 8k
        out.append(b)
    # SDPA first: its output is the reference the cudadent output is compared with.
    return sorted(out, key=lambda b: (b == "flex", b == "cudadent"))


def _varlen_backends_for(cfg, args):
    """The varlen suite: the packed batch runs cudadent, flash_attn and flex (SDPA cannot mask
    documents short of a dense total x total mask: not run); the dense shape (the second goal's
    denominator) runs cudadent and SDPA's backends (context), not flex or flash_attn. In the
    order of --backends (measure_varlen prepares flex last)."""
    if cfg.get("docs"):
        return [b for b in args.backends if b in ("flash_attn", "flex", "cudadent")
                and not (b == "flex" and args.no_flex)]
    return [b for b in args.backends if b == "cudadent" or b in SDPA_BACKENDS]


def run(args):
    import torch
    if not torch.cuda.is_available():
        raise SystemExit("cudadent.bench: no CUDA device")
    torch.backends.cuda.matmul.allow_tf32 = True
    env = environment()
    cfgs = shapes(args)
    if args.suite == "varlen":
        env["varlen_seed"] = VARLEN_SEED  # the documents' seed, for the report
        t0 = time.time()
        results = measure_varlen(cfgs, args, torch.cuda.Stream(), t0)
        env["elapsed_s"] = round(time.time() - t0, 1)
        return env, results
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
    p.add_argument("--suite", choices=("fa3", "gqa", "small", "dims", "varlen", "all"),
                   default="all",
                   help="all: the FA3 suite, the GQA suite (not with --quick) and the small shapes; "
                   "dims (alone): head dims 96, 256 and 192 with V's 128, as the FA3 suite; "
                   "varlen (alone): issue 28's packed batch of documents beside cudadent's "
                   "dense causal 8 x 2048")
    p.add_argument("--out", default=None, help="folder for the .md/.png/.json (default: "
                   "bench/results of the checkout, else ./cudadent-bench-results); the files are "
                   "named by GPU, <gpu>[-quick][-partial], and replace that GPU's previous ones")
    p.add_argument("--backends", default=None,
                   help=f"comma-separated subset of {','.join(ALL_BACKENDS)} (default: "
                   f"{','.join(BACKENDS)}, and with --suite varlen also "
                   f"{','.join(VARLEN_ONLY_BACKENDS)}: flash-attn's flash_attn_varlen_func, used "
                   f"by the varlen suite only)")
    p.add_argument("--seqlens", default=None, help="FA3 suite seqlens, comma-separated")
    p.add_argument("--head-dims", default="64,128", help="FA3 suite head dims (64,128)")
    p.add_argument("--causal", choices=("both", "yes", "no"), default="both",
                   help="FA3 suite: causal configs, non-causal, or both")
    p.add_argument("--iters", type=int, default=None, help="timed calls per measurement (30)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=6,
                   help="FA3, GQA, dims suites: rounds over every (backend, direction) of a shape, "
                   "each in its own shuffled order; --iters calls in all (varlen suite: over "
                   "every (shape, backend, direction), flex included)")
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
    if args.backends is None:
        args.backends = ",".join(ALL_BACKENDS if args.suite == "varlen" else BACKENDS)
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in args.backends:
        if b not in ALL_BACKENDS:
            p.error(f"unknown backend {b!r}; choose from {', '.join(ALL_BACKENDS)}")
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
