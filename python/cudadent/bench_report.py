"""The report of python -m cudadent.bench (bench.py): markdown tables, the method text, the
compact JSON (one line per row) and the plot, under stable per-GPU names (report_stem). No torch
needed: a saved .json renders again (bench.render)."""
import json
import os
import re
import sys

from .bench_suites import (ALL_BACKENDS, BACKENDS, DIRECTIONS, GRAPH_CALLS, SDPA_BACKENDS,
                           VARLEN_DENSE, VARLEN_DOC_MAX, VARLEN_DOC_MIN, VARLEN_GOAL_DENSE,
                           VARLEN_GOAL_FLEX, VARLEN_SEED, VARLEN_TOKENS)
from .bench_timing import shape_flops


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
                f"{r['suite']}{' packed' if r.get('docs') else ''} B{r['B']} H{r['H']}"
                f"{'/' + str(r['Hkv']) if r.get('Hkv', r['H']) != r['H'] else ''}"
                f" S{r['S']} D{r['D']}"
                f"{' causal' if r['causal'] else ''} {r['direction']}")
    varlen = [r for r in results if r["suite"] == "varlen"]
    if varlen:
        lines += varlen_section(env, varlen, backends)
    if errors:
        lines.append("### n/a: why\n")
        for (b, e), where in sorted(errors.items()):
            more = f" (+{len(where) - 3} more)" if len(where) > 3 else ""
            lines.append(f"- **{b}** ({len(where)} runs: {'; '.join(where[:3])}{more}): `{e}`")
        lines.append("")
    return "\n".join(lines)


def _fwd_bwd(f, b):
    """The fwd+bwd figure of a shape and backend from its fwd_train and bwd rows: the FLOPs of
    both over the sum of both median times (None unless both were measured)."""
    if not f or not b or "error" in f or "error" in b:
        return None
    ms = f["ms"] + b["ms"]
    return {"ms": ms, "tflops": (shape_flops(f, "fwd_train") + shape_flops(b, "bwd"))
            / (ms * 1e-3) / 1e12}


def _goal(name, num, den, goal):
    if num is None or den is None:
        return f"- {name}: not measured (a side is n/a or was not run); goal >= {goal:g}"
    ratio = num["tflops"] / den["tflops"]
    return (f"- {name}: {num['tflops']:.1f} / {den['tflops']:.1f} = **{ratio:.2f}** (goal >= "
            f"{goal:g}): **{'met' if ratio >= goal else 'not met'}**")


def varlen_section(env, rows, backends):
    """The varlen suite's table (TFLOP/s within documents, ms in brackets; fwd_train, bwd and
    their sum fwd+bwd), issue 28's two goals as lines, and the document list."""
    packed = [r for r in rows if r.get("docs")]
    dense = [r for r in rows if not r.get("docs")]
    docs = packed[0]["docs"] if packed else None
    H, D = rows[0]["H"], rows[0]["D"]
    lines = [f"### Varlen suite (issue 28): causal within each document, {H} heads (q and kv), "
             f"head_dim {D}, bf16; TFLOP/s counting only FLOPs within documents, milliseconds "
             f"in brackets (higher TFLOP/s is better)\n",
             "| shape | dir | " + " | ".join(backends) + " | cudadent max abs diff |",
             "|" + "---|" * (2 + len(backends) + 1)]
    fb = {}  # (packed?, backend) -> fwd+bwd figure
    for label, group in ((f"packed {packed[0]['S'] if packed else VARLEN_TOKENS} tokens, "
                          f"{len(docs) if docs else '?'} docs", packed),
                         (f"dense {dense[0]['B'] if dense else VARLEN_DENSE[0]} x "
                          f"{dense[0]['S'] if dense else VARLEN_DENSE[2]}", dense)):
        if not group:
            continue
        by = {(r["backend"], r["direction"]): r for r in group}
        for b in backends:
            fb[(group is packed, b)] = _fwd_bwd(by.get((b, "fwd_train")), by.get((b, "bwd")))
        for d in ("fwd_train", "bwd", "fwd+bwd"):
            cells = []
            for b in backends:
                r = fb[(group is packed, b)] if d == "fwd+bwd" else by.get((b, d))
                if r is None and d == "fwd+bwd" and any((b, x) in by for x in DIRECTIONS["varlen"]):
                    cells.append("n/a")
                else:
                    cells.append(_cell(r) + ("" if r is None or "error" in r
                                             else f" ({r['ms']:.3f})"))
            c = by.get(("cudadent", "bwd"))
            diff = ""
            if d == "bwd" and c and c.get("max_abs_diff_vs_sdpa") is not None:
                diff = f"{c['max_abs_diff_vs_sdpa']:.2e} vs {c.get('diff_vs', 'SDPA')}"
            lines.append(f"| {label} | {d} | " + " | ".join(cells) + f" | {diff} |")
    lines.append("")
    cut = {}
    for r in rows:
        if "rounds" in r:
            cut.setdefault(r["rounds"], set()).add(
                f"{r['backend']} {'packed' if r.get('docs') else 'dense'}")
    for n, which in sorted(cut.items()):
        lines.append(f"Only {n} round{'s' if n != 1 else ''} ran (--time-limit reached) for: "
                     f"{', '.join(sorted(which))}.\n")
    lines.append("Issue 28's goals, forward (with LSE) plus backward TFLOP/s:\n")
    lines.append(_goal("cudadent packed / FlexAttention packed (document block mask)",
                       fb.get((True, "cudadent")), fb.get((True, "flex")), VARLEN_GOAL_FLEX))
    dn = (f"{dense[0]['B']} x {dense[0]['S']}" if dense else
          f"{VARLEN_DENSE[0]} x {VARLEN_DENSE[2]}")
    lines.append(_goal(f"cudadent packed / cudadent dense causal {dn}",
                       fb.get((True, "cudadent")), fb.get((False, "cudadent")),
                       VARLEN_GOAL_DENSE))
    lines.append("")
    if docs:
        f_doc = shape_flops(packed[0], "fwd_train")
        f_dense = shape_flops(dense[0], "fwd_train") if dense else None
        seed = env.get("varlen_seed", VARLEN_SEED)
        lines.append(f"Documents of the packed batch ({len(docs)}, seed {seed}: lengths drawn "
                     f"log-uniformly from {VARLEN_DOC_MIN} to {VARLEN_DOC_MAX}, the last cut so "
                     f"that they sum to {sum(docs)}; bench_suites.varlen_doc_lengths): "
                     + ", ".join(str(n) for n in docs) + ".")
        lines.append(f"FLOPs within documents (4·H·L²·D/2 a document forward, backward 2.5x): "
                     f"forward {f_doc / 1e9:.1f} GFLOP"
                     + (f"; the dense causal shape's forward {f_dense / 1e9:.1f} GFLOP"
                        if f_dense else "") + ".")
        lines.append("")
    return lines


def method_text(args):
    if getattr(args, "suite", None) == "varlen":
        return _varlen_method(args)
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


def _varlen_method(args):
    rounds = max(1, getattr(args, "rounds", 1))
    share = max(1, -(-args.iters // rounds))
    return f"""### Method

- One process, one GPU. The packed batch: (1, total, heads, head_dim) tensors of fresh
  `torch.randn`; cudadent (`cudadent.flash_attn_varlen_func`) and flash_attn
  (`flash_attn.flash_attn_varlen_func`, n/a where flash_attn does not import) get (total, heads,
  head_dim) views of them with int32 cu_seqlens and max_seqlen made before timing; FlexAttention
  gets (1, heads, total, head_dim) views and a `create_block_mask` made before timing, whose
  mask_mod is causal within documents (the tokens' document indices equal, q_idx >= kv_idx),
  through `torch.compile(flex_attention, dynamic=False)` (compile time excluded). SDPA cannot
  express documents short of a dense total x total mask: not run on the packed batch. Beside it,
  in the same process, the dense causal shape of the second goal ((batch, seqlen, heads,
  head_dim) randn; cudadent through `cudadent.attention`, SDPA's backends for context).
- Directions: fwd_train, the forward with gradients recorded (every backend computes and saves
  its log-sum-exp, as in training); bwd, the backward alone, `torch.autograd.grad(out, (q, k, v),
  dout, retain_graph=True)` on one forward graph made before timing. fwd+bwd: the FLOPs of both
  over the sum of the two median times.
- Timing: CUDA events around each call; every (shape, backend, direction), FlexAttention
  included, after {args.warmup} warm-up calls, timed in {rounds} rounds of {share} calls (plus one
  untimed), each round in its own shuffled order (at the power limit the clock falls under
  sustained load: what follows lighter work reads high); the median of the pooled calls. Past
  --time-limit FlexAttention (prepared last) is skipped and no further round starts (a row's
  "rounds" in the .json then says how many ran).
- FLOPs count only attention within documents: per document of length L, 4·H·L²·D halved for
  causal (FlashAttention's convention applied to each document); backward 2.5x forward. The
  dense shape: 4·B·H·S²·D / 2. Total time of the batch, never divided by its documents.
- "cudadent max abs diff": cudadent's packed output (of the forward made for its backward)
  against flash_attn's, else flex's: a sanity check only (the correctness criterion is in
  tests/python/test_varlen.py).
"""


def is_partial(args):
    """True where the run measured part of what a full run measures (see report_stem)."""
    g = lambda k, d=None: getattr(args, k, d)  # noqa: E731 (args of an older saved .json too)
    if g("suite") == "varlen":  # partial: without a side of the goals (cudadent, flex)
        return bool(g("no_flex") or not {"cudadent", "flex"} <= set(g("backends", None) or ()))
    if g("suite") == "dims":  # its own file: partial with part of its configs or backends
        return bool(g("seqlens") or g("no_flex") or g("causal", "both") != "both"
                    or set(g("backends", None) or BACKENDS) != set(BACKENDS))
    return bool(g("suite", "all") != "all" or g("seqlens") or g("no_flex")
                or tuple(g("head_dims", None) or (64, 128)) != (64, 128)
                or g("causal", "both") != "both"
                or set(g("backends", None) or BACKENDS) != set(BACKENDS))


def report_stem(gpu, args):
    """The file name (without extension) of a run's report: stable per GPU, so the next run
    replaces it. <gpu>[-quick][-partial]: a --quick or partial run never replaces a full one."""
    slug = re.sub(r"[^a-z0-9]+", "-", str(gpu).lower()).strip("-") or "gpu"
    if getattr(args, "suite", None) in ("varlen", "dims"):  # own files: never part of a full run
        slug += "-" + args.suite
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
    backends = [b for b in ALL_BACKENDS if b in args.backends]
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
        varlen = [r for r in results if r["suite"] == "varlen"]
        return plot_varlen(varlen, backends, path, env, plt) if varlen else None
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


def plot_varlen(rows, backends, path, env, plt):
    """Bars of the varlen suite: TFLOP/s within documents per backend, for the packed batch and
    the dense shape, fwd_train / bwd / fwd+bwd."""
    colors = {"cudadent": "#d62728", "cudnn": "#1f77b4", "flash": "#2ca02c",
              "efficient": "#9467bd", "flex": "#ff7f0e", "flash_attn": "#8c564b"}
    groups = []
    for packed in (True, False):
        group = [r for r in rows if bool(r.get("docs")) == packed]
        by = {(r["backend"], r["direction"]): r for r in group}
        for d in ("fwd_train", "bwd", "fwd+bwd"):
            vals = {}
            for b in backends:
                r = (_fwd_bwd(by.get((b, "fwd_train")), by.get((b, "bwd"))) if d == "fwd+bwd"
                     else by.get((b, d)))
                if r and "error" not in r:
                    vals[b] = r["tflops"]
            if vals:
                groups.append((f"{'packed' if packed else 'dense'}\n{d}", vals))
    if not groups:
        return None
    shown = [b for b in backends if any(b in v for _, v in groups)]
    width = 0.8 / max(1, len(shown))
    fig, ax = plt.subplots(figsize=(12, 5))
    for j, b in enumerate(shown):
        xs = [i + (j - (len(shown) - 1) / 2) * width for i, (_, v) in enumerate(groups) if b in v]
        ys = [v[b] for _, v in groups if b in v]
        bars = ax.bar(xs, ys, width, label=b, color=colors.get(b))
        ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g for g, _ in groups])
    ax.set_ylabel("TFLOP/s (FLOPs within documents)")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend()
    docs = next((r["docs"] for r in rows if r.get("docs")), ())
    dense = next((r for r in rows if not r.get("docs")), None)
    ax.set_title(f"varlen suite: {sum(docs)} tokens in {len(docs)} documents, causal, "
                 f"H{rows[0]['H']} d{rows[0]['D']} bf16"
                 + (f" (dense: causal {dense['B']} x {dense['S']})" if dense else "")
                 + f"\n{env['gpu']} · torch {env['torch']} · commit {env['commit']}",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
