"""The report of python -m cudadent.bench (bench.py): markdown tables, the method text, the
compact JSON (one line per row) and the plot, under stable per-GPU names (report_stem). No torch
needed: a saved .json renders again (bench.render)."""
import json
import os
import re
import sys

from .bench_suites import BACKENDS, DIRECTIONS, GRAPH_CALLS, SDPA_BACKENDS


def _short_error(e):
    msg = f"{type(e).__name__}: {e}".strip().splitlines()[0]
    return msg[:300]


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
    return {(r["suite"], r["B"], r["H"], r.get("Hkv", r["H"]), r["S"], r["D"], r.get("Dv", r["D"]),
             r["causal"], r["direction"], r["backend"]): r for r in results}


def _tflops_rows(idx, shapes, suite, backends, lines):
    """Rows of a TFLOP/s table (FA3, GQA or dims suite): one per shape and direction."""
    for (_, D, causal, S, B, H, Hkv, Dv) in shapes:
        for d in DIRECTIONS[suite]:
            rs = {b: idx.get((suite, B, H, Hkv, S, D, Dv, causal, d, b)) for b in backends}
            best = max((r["tflops"] for b, r in rs.items()
                        if b in SDPA_BACKENDS and r and "error" not in r), default=None)
            c = rs.get("cudadent")
            ratio = f"{c['tflops'] / best:.2f}" if c and "error" not in c and best else "-"
            diff = c.get("max_abs_diff_vs_sdpa") if c else None
            heads = f"{H}" if Hkv == H else f"{H}/{Hkv}"
            dims = f"{D}" if Dv == D else f"{D}/{Dv}"
            lines.append(f"| {dims} | {'yes' if causal else 'no'} | {S} | {B} x {heads} | {d} | "
                         + " | ".join(_cell(rs[b]) for b in backends)
                         + f" | {ratio} | {'' if diff is None else f'{diff:.2e}'} |")
    lines.append("")


def tables(env, results, backends):
    idx = _index(results)
    lines = []
    keys = sorted({(r["suite"], r["D"], r["causal"], r["S"], r["B"], r["H"],
                    r.get("Hkv", r["H"]), r.get("Dv", r["D"])) for r in results},
                  key=lambda t: (t[0] != "fa3", t[0] != "gqa", t[1], -t[7], t[2], t[3], t[4]))
    fa3 = [t for t in keys if t[0] == "fa3"]
    gqa = [t for t in keys if t[0] == "gqa"]
    dims = [t for t in keys if t[0] == "dims"]
    small = [t for t in keys if t[0] == "small"]
    for suite, shapes, title in (
            ("fa3", fa3, "### FA3 suite: bf16, TFLOP/s (higher is better)\n"),
            ("gqa", gqa, "### GQA suite: bf16, query heads / KV heads, TFLOP/s (higher is "
                         "better)\n"),
            ("dims", dims, "### Head-dim suite: bf16, head_dim (/ V's head_dim), heads = 2048 / "
                           "head_dim, TFLOP/s (higher is better)\n")):
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
        for (_, D, causal, S, B, H, Hkv, _Dv) in small:
            for d in ("fwd", "bwd"):
                rs = {b: idx.get(("small", B, H, Hkv, S, D, D, causal, d, b)) for b in backends}
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
