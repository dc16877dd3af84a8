"""W 96 forward mismatch repro (run by dev/sm80_fwd/w96_repro.sh; env: PYTHONPATH=python, CUDADENT_LIBRARY,
CUDADENT_KERNEL_FWD=sm80). Parts:
  A  kernel: cudadent (no LSE / LSE) vs an fp32 reference on the bench's exact inputs (seeds
     1234+S+D+causal, (B,S,H,D) bf16, inputs synchronized), repeated; run-to-run bit identity.
  B  the bench's own prepare path (cudadent.bench._shape_inputs / _prepare_entries, as committed),
     repeated: the bench's diff, and which side (flash's ref or cudadent) is off the fp32 ref.
  C  the same with the default stream delayed (torch.cuda._sleep) before the inputs are drawn
     the way the bench drew them before session 29 (no synchronize): shows whether the bench's
     side-stream reference can read inputs not yet written; then the same through the bench's
     synchronized draw (the fix).
Prints one line per measurement; 'WRONG' marks an error > 0.05 (bf16 rounding is ~4e-3)."""
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import cudadent
from cudadent import _library
import cudadent.bench as cb

BAD = 0.05
H, D = 21, 96
t_start = time.time()
lib = _library.load()
print(f"library: {_library._lib_path}; torch {torch.__version__}; "
      f"{torch.cuda.get_device_name()} sms={torch.cuda.get_device_properties(0).multi_processor_count}; "
      f"CUDADENT_KERNEL_FWD={os.environ.get('CUDADENT_KERNEL_FWD')}", flush=True)


def ref_fp32(q, k, v, causal):
    """fp32 attention (memory-efficient SDPA in fp32, no TF32), (B,S,H,D) out."""
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    qt, kt, vt = (t.detach().float().transpose(1, 2) for t in (q, k, v))
    with torch.no_grad(), sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        o = F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    torch.backends.cuda.matmul.allow_tf32 = old
    return o.transpose(1, 2)


def err(o, ref):
    d = torch.nan_to_num((o.float() - ref).abs(), nan=float("inf"))  # NaN counts as wrong
    m = float(d.max())
    idx = int(d.argmax())
    B, S, Hh, Dd = d.shape
    where = (idx // (S * Hh * Dd), idx // (Hh * Dd) % S, idx // Dd % Hh, idx % Dd)
    return m, where


def flag(x):
    return "ok" if x <= BAD else "WRONG"  # NaN: WRONG


# ---- A: the kernel on the bench's inputs -------------------------------------------------------
print("== A: cudadent (W 96, forced sm80) vs fp32 reference, inputs synchronized", flush=True)
shapes_a = []
for S in (512, 2048, 8192):
    for causal in (False, True):
        shapes_a.append((16384 // S, H, S, D, causal, 12 if (S == 2048 and causal) else 3))
# extra: small-tile rule (1 x 8 heads, 2k causal), ragged length, d80 (W 96 PAD)
shapes_a += [(1, 8, 2048, 96, True, 3), (2, 21, 2000, 96, True, 3), (8, 21, 2048, 80, True, 3)]
any_bad = False
for B, Hh, S, Dd, causal, reps in shapes_a:
    q, k, v = cb._inputs(B, Hh, S, Dd, torch.bfloat16, True, seed=1234 + S + Dd + int(causal))
    torch.cuda.synchronize()
    ref = ref_fp32(q, k, v, causal)
    worst, where, first, identical = 0.0, None, None, True
    with torch.no_grad():
        for i in range(reps):
            o = cudadent.attention(q, k, v, causal=causal)  # no LSE (as the bench's fwd)
            torch.cuda.synchronize()
            m, w = err(o, ref)
            if m > worst:
                worst, where = m, w
            if first is None:
                first = o.clone()
            elif not torch.equal(o, first):
                identical = False
        o2, lse = cudadent.attention(q, k, v, causal=causal, return_lse=True)
        m_lse, _ = err(o2, ref)
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            of = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in (q, k, v)),
                                                is_causal=causal).transpose(1, 2)
        m_fl, _ = err(of, ref)
        m_vs_fl = err(first, of.float())[0]
    bad = worst > BAD or m_lse > BAD or not identical
    any_bad |= bad
    print(f"A B{B} H{Hh} S{S} D{Dd} {'causal' if causal else 'full  '}: cudadent noLSE max {worst:.3e} "
          f"({reps} runs, worst at b,s,h,d={where}, bit-identical={identical}) | LSE {m_lse:.3e} | "
          f"flash {m_fl:.3e} | cudadent-vs-flash {m_vs_fl:.3e}  {'WRONG' if bad else 'ok'}",
          flush=True)
    del q, k, v, ref, o, o2, lse, of, first
torch.cuda.empty_cache()
print(f"A: {'a WRONG kernel result' if any_bad else 'all ok'} ({time.time() - t_start:.0f} s)",
      flush=True)


# ---- B / C: the bench's own prepare path -------------------------------------------------------
args = cb.parse_args(["--suite", "dims", "--backends", "cudadent,flash", "--no-flex",
                      "--seqlens", "512,2048,8192", "--warmup", "2"])
torch.backends.cuda.matmul.allow_tf32 = True  # as cb.run()
cfgs = [c for c in cb.shapes(args) if c["D"] == 96]
stream = torch.cuda.Stream()
orig_inputs = cb._shape_inputs


def bench_shape(cfg0, tag):
    """measure_fa3_interleaved's preparation (no timing rounds) of one shape: the bench's diff,
    then flash's ref and cudadent's output each against the fp32 reference."""
    cfg = dict(cfg0)
    qkv = cb._shape_inputs(cfg)
    results, entries = [], []
    for b in cb.backends_for(cfg, args):
        results += cb._prepare_entries(cfg, b, qkv, args, stream, entries)
    torch.cuda.synchronize()
    r = next(r for r in results if r["backend"] == "cudadent" and r["direction"] == "fwd")
    errs = [f"{x['backend']}/{x['direction']}: {x['error']}" for x in results if "error" in x]
    ref = ref_fp32(*qkv, cfg["causal"])
    fl = err(cfg["ref"], ref)[0] if cfg.get("ref") is not None else float("nan")
    with torch.no_grad():
        o = cudadent.attention(*qkv, causal=cfg["causal"])
    cu = err(o, ref)[0]
    diff = r.get("max_abs_diff_vs_sdpa", float("nan"))
    print(f"{tag} B{cfg['B']} S{cfg['S']} {'causal' if cfg['causal'] else 'full  '}: "
          f"bench diff {diff:.3e} [{flag(diff)}] | flash ref vs fp32 {fl:.3e} [{flag(fl)}] | "
          f"cudadent vs fp32 {cu:.3e} [{flag(cu)}]" + (f" errors: {errs}" if errs else ""),
          flush=True)
    del entries, results, qkv, ref, o
    cfg.pop("ref", None)
    return diff, fl, cu


print("== B: the bench's prepare path (synchronized inputs), 3 passes over the 6 d96 shapes", flush=True)
hits = 0
for rep in range(3):
    for cfg in cfgs:
        diff, fl, cu = bench_shape(cfg, f"B{rep}")
        hits += not diff <= BAD
print(f"B: {hits} large bench diffs in {3 * len(cfgs)} ({time.time() - t_start:.0f} s)", flush=True)

print("== C: default stream delayed ~50 ms before the inputs (race forced), then with a sync",
      flush=True)
c512 = next(c for c in cfgs if c["S"] == 512 and c["causal"])
c2k = next(c for c in cfgs if c["S"] == 2048 and c["causal"])


def delayed(cfg):
    """the bench's draw before session 29's fix (no synchronize), behind ~50 ms of the default
    stream: the side stream's first call can read the inputs before randn writes them"""
    torch.cuda._sleep(100_000_000)
    tdtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[cfg["dtype"]]
    return cb._inputs(cfg["B"], cfg["H"], cfg["S"], cfg["D"], tdtype, True,
                      seed=1234 + cfg["S"] + cfg["D"] + int(cfg["causal"]), Dv=cfg.get("Dv"))


def delayed_synced(cfg):
    torch.cuda._sleep(100_000_000)
    return orig_inputs(cfg)  # the bench's draw since the fix: synchronized before and after


for name, fn in (("C-race", delayed), ("C-fixed", delayed_synced)):
    bench_shape(c512, name + "-prev")  # the previous shape's blocks, for the allocator to reuse
    cb._shape_inputs = fn
    bench_shape(c2k, name)
    cb._shape_inputs = orig_inputs
print(f"done ({time.time() - t_start:.0f} s)", flush=True)
