"""python -m cudadent.bench --train: a training step of Llama models, cudadent against SDPA.

For each model config (CONFIGS; transformers' LlamaForCausalLM from a LlamaConfig, random weights
from a fixed seed, bf16, fused AdamW): tokens/s of a whole training step (forward with the
lm head and loss, backward, optimizer step) with attn_implementation "cudadent", "sdpa" (SDPA's
default: cuDNN on Hopper) and "sdpa" forced to SDPA's flash backend ("sdpa_flash"), alternated
in shuffled rounds in one process; the attention share of the step's GPU time (torch.profiler);
the peak memory. Then (first, as it is the cheap one) the loss check: the same initial weights
trained for 100 steps with each attention on sequences from a fixed random Markov chain
(train_data.py), the curves compared by train_report.loss_agreement.

CLI flags are added to bench.py's parser by add_arguments (python -m cudadent.bench --help).
The report (train_report.write_report) goes where bench.py writes its own: bench/results of
the checkout, or --out.
"""
import contextlib
import gc
import random
import statistics
import sys
import time
import traceback

from . import train_report
from .gpu_monitor import GpuMonitor
from .train_data import MarkovChain
from .train_report import ATTENTIONS

# Model configs. intermediate 5632 = 2.75 x 2048 (TinyLlama's ratio); vocab 32000 (Llama 2's).
_BASE = dict(layers=8, hidden=2048, heads=16, kv_heads=8, head_dim=128, intermediate=5632,
             vocab=32000)
CONFIGS = {
    "d128-s4k": dict(_BASE, seqlen=4096, batch=4),
    "d128-s16k": dict(_BASE, seqlen=16384, batch=1),
    # head_dim 64: 32 query heads over 16 KV heads (2:1, as d128's 16 over 8), 16k tokens a step
    "d64-s2k": dict(_BASE, heads=32, kv_heads=16, head_dim=64, seqlen=2048, batch=8),
    # GQA 4:1 at hidden 4096 (1.7B parameters; ~45 GB at its peak, estimated)
    "gqa4-s4k": dict(_BASE, hidden=4096, heads=32, kv_heads=8, intermediate=11008,
                     seqlen=4096, batch=4),
    # the loss check's model (55M parameters): 3 attentions x 100 steps in ~10 s on an H200, per seed
    "loss": dict(layers=4, hidden=1024, heads=8, kv_heads=4, head_dim=128, intermediate=2816,
                 vocab=4096, seqlen=2048, batch=4),
    # a smoke test (tests/python/test_train_bench.py)
    "tiny": dict(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, intermediate=512,
                 vocab=1024, seqlen=256, batch=2),
}
FULL = ("d128-s4k", "d128-s16k", "d64-s2k", "gqa4-s4k")
QUICK = ("d128-s4k",)
SEED = 0
THROUGHPUT_LR = 1e-4
# The loss check trains as pretraining does (GPT-3 small's peak lr 6e-4, gradient norm clipped at
# 1.0). Session 16 (H200): at lr 1e-3 without clipping the runs were chaotic: SDPA's own curves
# differed by up to 0.6 between two runs of one backend at step 40, and one cudadent run and one
# flash run spiked near step 20-30 (cudadent's never recovered), so the check measured chaos.
LOSS_LR, LOSS_WARMUP, LOSS_CLIP = 6e-4, 10, 1.0
# Data seeds of the loss check: each attention trains the common initialization once per seed
# (other batches each), and the criterion pools every (seed, step): train_report.loss_agreement
# says why one run's maximum was not enough. 3 x 3 x 100 steps: 29 s on an H100 (session 18).
LOSS_SEEDS = 3
BRANCHING = 4  # successors a token in the Markov chain: loss floor <= log 4 = 1.39 nats
PROFILE_PASSES = 2  # profiled steps of each attention a config, in alternating orders
DEFAULT_TIME_LIMIT = 450.0  # seconds: configs (and rounds) left after it are skipped, reported
DEVICE = "cuda"


def add_arguments(p):
    g = p.add_argument_group("training bench (--train)")
    g.add_argument("--train", action="store_true",
                   help="a training step of Llama models (transformers) with cudadent vs SDPA: "
                   "tokens/s, attention share, peak memory, loss curves; full: ~2 min on an "
                   "H200, --quick: ~25 s")
    g.add_argument("--train-configs", default=None,
                   help=f"comma-separated, of {', '.join(CONFIGS)} (default {','.join(FULL)}; "
                   f"--quick {','.join(QUICK)}); 'none': the loss check alone")
    g.add_argument("--train-attentions", default=",".join(ATTENTIONS),
                   help="comma-separated subset of " + ",".join(ATTENTIONS))
    g.add_argument("--train-rounds", type=int, default=None,
                   help="rounds over the attentions, each in a shuffled order (8; --quick 4)")
    g.add_argument("--train-steps", type=int, default=None,
                   help="timed steps per attention per round, after one untimed (3; --quick 2)")
    g.add_argument("--train-warmup", type=int, default=2, help="warm-up steps per attention (2)")
    g.add_argument("--train-loss-steps", type=int, default=100,
                   help="steps of the loss check per attention (100); 0 skips it")
    g.add_argument("--train-loss-config", default="loss", help="model of the loss check (loss)")
    g.add_argument("--train-loss-seeds", type=int, default=LOSS_SEEDS,
                   help=f"data seeds of the loss check, each a run per attention ({LOSS_SEEDS})")
    g.add_argument("--train-loss-lr", type=float, default=LOSS_LR,
                   help=f"peak learning rate of the loss check ({LOSS_LR:g})")
    g.add_argument("--train-loss-clip", type=float, default=LOSS_CLIP,
                   help=f"gradient norm clip of the loss check ({LOSS_CLIP:g}; 0: none)")
    g.add_argument("--train-no-profile", action="store_true",
                   help="skip the profiled steps (no attention share)")


def finish_args(args, p):
    """Defaults and checks of the --train flags (p: the parser, for errors)."""
    if args.train_configs is None:
        args.train_configs = list(QUICK if args.quick else FULL)
    elif args.train_configs.strip() in ("", "none"):
        args.train_configs = []
    else:
        args.train_configs = [c.strip() for c in args.train_configs.split(",") if c.strip()]
    for c in args.train_configs + [args.train_loss_config]:
        if c not in CONFIGS:
            p.error(f"unknown training config {c!r}; choose from {', '.join(CONFIGS)}")
    args.train_attentions = [a.strip() for a in args.train_attentions.split(",") if a.strip()]
    for a in args.train_attentions:
        if a not in ATTENTIONS:
            p.error(f"unknown attention {a!r}; choose from {', '.join(ATTENTIONS)}")
    if args.train_rounds is None:
        args.train_rounds = 4 if args.quick else 8
    if args.train_steps is None:
        args.train_steps = 2 if args.quick else 3
    if min(args.train_rounds, args.train_steps) < 1 or args.train_warmup < 0 or \
            args.train_loss_steps < 0 or args.train_loss_seeds < 1:
        p.error("--train-rounds, --train-steps and --train-loss-seeds must be >= 1, the others >= 0")
    if args.time_limit is None:
        args.time_limit = DEFAULT_TIME_LIMIT


# ---- model, step ------------------------------------------------------------------------------

def step_flops(c):
    """Matrix-product FLOPs of one training step (6 x tokens x weights of the products, lm head
    included; causal attention 4·B·H·S²·D/2 forward, 2.5x that backward)."""
    qd, kvd = c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"]
    layer = c["hidden"] * (2 * qd + 2 * kvd) + 3 * c["hidden"] * c["intermediate"]
    dense = c["layers"] * layer + c["hidden"] * c["vocab"]
    attn = c["layers"] * 2.0 * c["batch"] * c["heads"] * c["seqlen"] ** 2 * c["head_dim"] * 3.5
    return 6.0 * c["batch"] * c["seqlen"] * dense + attn


def build_model(c, device, dtype=None, seed=SEED):
    """LlamaForCausalLM for config dict c, weights drawn from `seed` on `device`."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=c["vocab"], hidden_size=c["hidden"],
                         intermediate_size=c["intermediate"], num_hidden_layers=c["layers"],
                         num_attention_heads=c["heads"], num_key_value_heads=c["kv_heads"],
                         head_dim=c["head_dim"], max_position_embeddings=c["seqlen"],
                         tie_word_embeddings=False, attention_dropout=0.0, use_cache=False)
    torch.manual_seed(seed)
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, attn_implementation="sdpa",
                                              dtype=dtype or torch.bfloat16)
    return model.to(device).train()


def make_optimizer(model, lr):
    import torch
    fused = next(model.parameters()).is_cuda or None  # fused on the GPU; the CPU's default else
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.1,
                             fused=fused)


def set_attention(model, attention):
    """attn_implementation for `attention` ('sdpa_flash' runs 'sdpa'; see attention_context)."""
    impl = "sdpa" if attention in ("sdpa", "sdpa_flash") else attention
    if model.config._attn_implementation != impl:
        model.set_attn_implementation(impl)
    if model.config._attn_implementation != impl:
        raise RuntimeError(f"transformers kept attn_implementation="
                           f"{model.config._attn_implementation!r}, not {impl!r}")


def attention_context(attention):
    if attention == "sdpa_flash":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel([SDPBackend.FLASH_ATTENTION])
    return contextlib.nullcontext()


def train_step(model, opt, ids, attention, clip=None):
    """Forward (loss over the vocabulary), backward, gradient norm clipped to `clip` (if given),
    optimizer step; the loss, detached."""
    import torch
    with attention_context(attention):
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    opt.zero_grad(set_to_none=True)
    return loss.detach()


def timed_steps(model, opt, ids, attention, n):
    """Milliseconds of each of n steps, CUDA events around each on the current stream."""
    import torch
    stream = torch.cuda.current_stream()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(n)]
    for start, end in events:
        start.record(stream)
        train_step(model, opt, ids, attention)
        end.record(stream)
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def profile_step(step):
    """Run step() under torch.profiler; train_report.kernel_summary of its GPU activity."""
    return train_report.kernel_summary(profile_kernels(step))


def profile_kernels(step):
    """Run step() under torch.profiler; (name, microseconds) of its GPU activity."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = [(e.name, e.time_range.elapsed_us()) for e in prof.events()
               if e.device_type == DeviceType.CUDA]
    if not kernels:
        raise RuntimeError("the profiler recorded no GPU activity")
    return kernels


# ---- failures ---------------------------------------------------------------------------------

def _short(e):
    lines = f"{type(e).__name__}: {e}".strip().splitlines()
    return (lines[0] if lines else type(e).__name__)[:300]


def _fail(row, e, verbose):
    row["error"] = _short(e)
    row["error_type"] = type(e).__name__
    if verbose:
        traceback.print_exc()


def _free():
    import torch
    gc.collect()
    if torch.cuda.is_available():
        try:
            torch.cuda.synchronize()
        except Exception:  # a sticky CUDA error: every later call reports it
            pass
        torch.cuda.empty_cache()


# ---- the loss check ---------------------------------------------------------------------------

def loss_check(name, attentions, steps, device=None, dtype=None, profile=True, tick=None,
               verbose=False, lr=LOSS_LR, clip=LOSS_CLIP, seeds=LOSS_SEEDS):
    """Train config `name` for `steps` steps with each attention from one initialization, once
    per data seed (`seeds` of them; each seed other Markov-chain batches, the same for every
    attention). Returns the loss section of the result (seed 0's curves, the later seeds' curves,
    agreement, kernel families of each attention's first step, errors)."""
    import torch
    device = device or DEVICE
    c = CONFIGS[name]
    chain = MarkovChain(c["vocab"], branching=BRANCHING, seed=SEED)
    out = {"config": dict(c, name=name), "steps": steps, "seeds": seeds, "lr": lr, "clip": clip,
           "warmup_steps": LOSS_WARMUP, "data": chain.describe(), "log_vocab": chain.log_vocab,
           "optimal_loss": chain.optimal_loss(c["seqlen"]), "curves": {}, "seed_curves": {},
           "kernels": {}, "errors": {}}
    if steps < 1 or seeds < 1:
        return out
    try:
        model = build_model(c, device, dtype)
    except Exception as e:
        row = {}
        _fail(row, e, verbose)
        out["errors"] = {a: row["error"] for a in attentions}
        out["agreement"] = train_report.loss_agreement({})
        return out
    out["config"]["params_m"] = sum(p.numel() for p in model.parameters()) / 1e6
    init = {k: v.detach().clone() for k, v in model.state_dict().items()}
    for r in range(seeds):
        data = chain.sample(steps * c["batch"], c["seqlen"], seed=SEED + 1 + r)
        data = data.view(steps, c["batch"], c["seqlen"]).to(device)
        for a in attentions:
            if a in out["errors"]:  # failed on an earlier seed
                if tick:
                    tick(steps)
                continue
            done = 0
            try:
                model.load_state_dict(init)
                set_attention(model, a)
                opt = make_optimizer(model, lr)
                sched = torch.optim.lr_scheduler.LambdaLR(
                    opt, lambda s: min(1.0, (s + 1) / LOSS_WARMUP))
                losses = []
                for s in range(steps):
                    if s == 0 and r == 0 and profile:  # which kernels ran: informative, not fatal
                        try:
                            out["kernels"][a] = profile_step(
                                lambda: losses.append(train_step(model, opt, data[s], a, clip)))["families"]
                        except Exception as e:
                            if not losses:  # the step itself failed, not the profiler
                                raise
                            out["kernels"][a] = {"profiler failed": _short(e)}
                    else:
                        losses.append(train_step(model, opt, data[s], a, clip))
                    sched.step()
                    done += 1
                    if tick:
                        tick(1)
                curve = torch.stack(losses).float().cpu().tolist()
                if r == 0:
                    out["curves"][a] = curve
                else:
                    out["seed_curves"].setdefault(a, []).append(curve)
            except Exception as e:
                row = {}
                _fail(row, e, verbose)
                out["errors"][a] = row["error"]
            opt = sched = losses = None
            if tick:
                tick(steps - done)
            _free()
        del data
    del model, init
    _free()
    out["agreement"] = train_report.loss_agreement(out["curves"], out["seed_curves"])
    return out


# ---- throughput -------------------------------------------------------------------------------

def _planned_steps(args):
    return len(args.train_attentions) * (args.train_warmup + 1 + args.train_rounds *
                                         (1 + args.train_steps) + (0 if args.train_no_profile
                                                                   else 2 * PROFILE_PASSES))


def measure_config(name, args, tick, say, deadline, monitor=None):
    """Result rows (one per attention) of model config `name`; with a started GpuMonitor, each
    row's gpu_clocks summarizes the clocks and power sampled during its timed steps."""
    import torch
    c = CONFIGS[name]
    tokens = c["batch"] * c["seqlen"]
    rows = {a: dict(config=name, **c, tokens=tokens, attention=a)
            for a in args.train_attentions}
    planned, done = _planned_steps(args), [0]

    def step_done(k=1):
        done[0] += k
        tick(k)

    try:
        model = build_model(c, DEVICE)
        opt = make_optimizer(model, THROUGHPUT_LR)
        ids = MarkovChain(c["vocab"], branching=BRANCHING, seed=SEED).sample(
            c["batch"], c["seqlen"], seed=SEED + 2).to(DEVICE)
    except Exception as e:
        for r in rows.values():
            _fail(r, e, args.verbose)
        model = opt = ids = None
        _free()
        tick(planned)
        return list(rows.values())
    params_m = sum(p.numel() for p in model.parameters()) / 1e6
    live, step_s = [], {}
    for a in args.train_attentions:
        r = rows[a]
        r["params_m"] = params_m
        try:
            set_attention(model, a)
            for _ in range(args.train_warmup):
                train_step(model, opt, ids, a)
                step_done()
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            t = time.perf_counter()
            train_step(model, opt, ids, a)
            torch.cuda.synchronize()
            step_s[a] = time.perf_counter() - t
            r["peak_gib"] = torch.cuda.max_memory_allocated() / 2 ** 30
            step_done()
            live.append(a)
        except Exception as e:
            _fail(r, e, args.verbose)
        if "error" in r:
            opt.zero_grad(set_to_none=True)
            _free()
    if step_s:
        per_round = sum(step_s.values()) * (1 + args.train_steps)
        say(f"{name}: one step (measured, after warm-up): " + ", ".join(
            f"{a} {s * 1e3:.0f} ms" for a, s in step_s.items()) + f"; its {args.train_rounds} "
            f"rounds: ~{per_round * args.train_rounds:.0f} s (estimate)")
    samples = {a: [] for a in live}
    for rnd in range(args.train_rounds):
        if deadline is not None and time.time() > deadline:
            for a in live:
                rows[a]["note"] = f"{rnd} of {args.train_rounds} rounds: time limit reached"
            break
        order = list(live)
        random.Random(rnd).shuffle(order)
        for a in order:
            r = rows[a]
            if "error" in r:
                continue
            try:
                set_attention(model, a)
                train_step(model, opt, ids, a)  # untimed: what ran before is the same for all
                if monitor is not None:
                    monitor.tag = (name, a)
                try:
                    ms = timed_steps(model, opt, ids, a, args.train_steps)
                finally:
                    if monitor is not None:
                        monitor.tag = None
                samples[a].append(sum(ms) / len(ms))
                r.setdefault("step_samples_ms", []).extend(round(x, 3) for x in ms)
            except Exception as e:
                _fail(r, e, args.verbose)
            if "error" in r:
                opt.zero_grad(set_to_none=True)
                _free()
            step_done(1 + args.train_steps)
    if not args.train_no_profile:
        # PROFILE_PASSES profiled steps of each attention, in the order of `live` and then the
        # reverse, each right after an untimed step of its own: every attention's profiled steps
        # then start from its own sustained load, at the clock its timed steps ran at. (Until
        # session 22 one pass, each profiled step right after the previous attention's. On an
        # H200 the first one profiled, cudadent's, then spent 1.3-2.4% more time outside
        # attention than SDPA's (1.5-7.5 ms a step), more than its timed steps left room for:
        # at d128 16k they were 3.3 ms faster than SDPA's, its profiled one 0.2 ms slower.)
        kernels = {a: [] for a in live}
        for p in range(PROFILE_PASSES):
            for a in (live if p % 2 == 0 else live[::-1]):
                r = rows[a]
                if "error" in r or "profile_error" in r:
                    continue
                try:
                    set_attention(model, a)
                    train_step(model, opt, ids, a)
                    kernels[a] += profile_kernels(lambda: train_step(model, opt, ids, a))
                except Exception as e:
                    r["profile_error"] = _short(e)
                step_done(2)
        for a in live:
            r = rows[a]
            if kernels[a] and "error" not in r and "profile_error" not in r:
                s = train_report.kernel_summary(kernels[a], steps=PROFILE_PASSES)
                r.update(attn_share=s["attn_share"], attn_ms=s["attn_ms"], gpu_ms=s["gpu_ms"],
                         attn_kernels=s["families"], attn_top=s["top"], other=s["other"])
    for a in live:
        r = rows[a]
        if samples[a] and "error" not in r:
            r["round_ms"] = [round(x, 3) for x in samples[a]]
            r["step_ms"] = statistics.median(samples[a])
            r["tokens_per_s"] = tokens / (r["step_ms"] * 1e-3)
            r["model_tflops"] = step_flops(c) / (r["step_ms"] * 1e-3) / 1e12
        clocks = monitor.summary((name, a)) if monitor is not None else None
        if clocks:
            r["gpu_clocks"] = clocks
    ref = rows.get("sdpa", {}).get("tokens_per_s")
    for r in rows.values():
        if ref and "tokens_per_s" in r:
            r["vs_sdpa"] = r["tokens_per_s"] / ref
    tick(max(0, planned - done[0]))
    model = opt = ids = None
    _free()
    return [rows[a] for a in args.train_attentions]


# ---- the run ----------------------------------------------------------------------------------

def _sayer(bar):
    def say(msg):
        if hasattr(bar, "write"):
            bar.write(msg, file=sys.stderr)
        else:
            sys.stderr.write("\n" + msg + "\n")
            sys.stderr.flush()
    return say


def run(args):
    try:
        import torch
    except ImportError as e:
        raise SystemExit(f"cudadent.bench --train needs torch: {e}")
    if not torch.cuda.is_available():
        raise SystemExit("cudadent.bench --train: no CUDA device")
    try:
        import transformers
    except ImportError as e:
        raise SystemExit(f"cudadent.bench --train needs transformers (pip install transformers): "
                         f"{e}")
    transformers.logging.set_verbosity_error()
    from . import bench
    env = bench.environment()
    env["transformers"] = transformers.__version__
    try:
        import cudadent
        cudadent.register_transformers()
    except Exception as e:  # its rows then fail with the reason; SDPA's are still measured
        env["note"] = f"attn_implementation='cudadent' not registered: {_short(e)}"
    method = dict(seed=SEED, warmup=args.train_warmup, rounds=args.train_rounds,
                  steps=args.train_steps, loss_steps=args.train_loss_steps,
                  throughput_lr=THROUGHPUT_LR, loss_lr=args.train_loss_lr,
                  loss_clip=args.train_loss_clip, loss_seeds=args.train_loss_seeds,
                  branching=BRANCHING)
    result = {"rows": [], "loss": None, "method": method}
    n_att = len(args.train_attentions)
    total = n_att * args.train_loss_steps * max(0, args.train_loss_seeds) \
        + len(args.train_configs) * _planned_steps(args)
    sys.stderr.write(f"cudadent.bench --train: loss check ({args.train_loss_config}, "
                     f"{args.train_loss_steps} steps x {args.train_loss_seeds} seeds x {n_att} "
                     f"attentions), then "
                     f"{', '.join(args.train_configs) or 'no throughput configs'}: {total} "
                     f"training steps in all; stops starting new work after "
                     f"{args.time_limit:g} s\n")
    bar = bench._progress(total, "cudadent.bench --train")
    say = _sayer(bar)
    t0 = time.time()
    deadline = t0 + args.time_limit if args.time_limit else None
    if args.train_loss_steps > 0:
        bar.set_postfix_str(f"loss check: {args.train_loss_config}")
        result["loss"] = loss_check(args.train_loss_config, args.train_attentions,
                                    args.train_loss_steps, profile=not args.train_no_profile,
                                    tick=bar.update, verbose=args.verbose,
                                    lr=args.train_loss_lr, clip=args.train_loss_clip,
                                    seeds=args.train_loss_seeds)
        ag = result["loss"].get("agreement", {})
        verdict = {True: "pass", False: "FAIL", None: "n/a"}[ag.get("passed")]
        say(f"loss check ({ag.get('runs', 0)} seeds): rms(cudadent - sdpa) "
            f"{ag.get('rms_ours_vs_ref', float('nan')):.4f}, rms(sdpa_flash - sdpa) "
            f"{ag.get('rms_ref_vs_other', float('nan')):.4f}, bound "
            f"{ag.get('bound', float('nan')):.4f}: {verdict}"
            f"{' (' + ag['note'] + ')' if ag.get('note') else ''}")
    s_per_flop = None
    monitor = GpuMonitor(_nvml_index(torch)).start()
    if monitor.error:
        env["gpu_monitor"] = f"not sampled: {monitor.error}"
    for i, name in enumerate(args.train_configs):
        if deadline is not None and time.time() > deadline:
            for a in args.train_attentions:
                result["rows"].append(dict(config=name, **CONFIGS[name], attention=a,
                                           tokens=CONFIGS[name]["batch"] *
                                           CONFIGS[name]["seqlen"],
                                           error=f"skipped: time limit {args.time_limit:g} s "
                                                 f"reached", error_type="skipped"))
            bar.update(_planned_steps(args))
            continue
        bar.set_postfix_str(name)
        t1 = time.time()
        result["rows"] += measure_config(name, args, bar.update, say, deadline, monitor)
        if s_per_flop is None:
            s_per_flop = (time.time() - t1) / step_flops(CONFIGS[name])
            rest = args.train_configs[i + 1:]
            if rest:
                say(f"estimate: the other configs ~"
                    f"{s_per_flop * sum(step_flops(CONFIGS[n]) for n in rest):.0f} s "
                    f"(this one's measured time, scaled by their FLOPs a step)")
    monitor.stop()
    bar.close()
    env["elapsed_s"] = round(time.time() - t0, 1)
    return env, result


def _nvml_index(torch):
    """NVML's index of the current CUDA device (they differ under CUDA_VISIBLE_DEVICES)."""
    dev = torch.cuda.current_device()
    try:
        return torch.cuda._get_nvml_device_index(dev)
    except Exception:
        return dev


def main(args):
    env, result = run(args)
    saved = {k: v for k, v in vars(args).items() if k.startswith("train") or k in (
        "quick", "out", "time_limit", "no_plot")}
    # a run of other configs or attentions than the default set is partial: its report must not
    # replace the GPU's full one (train_report.stem)
    saved["partial"] = (list(args.train_configs) != list(QUICK if args.quick else FULL)
                        or list(args.train_attentions) != list(ATTENTIONS))
    md, png, text = train_report.write_report(env, saved, result, args.out, quick=args.quick,
                                              no_plot=args.no_plot)
    print(text)
    print(f"wrote {md}, {md[:-3]}.json" + (f" and {png}" if png else ""))
    return 0
