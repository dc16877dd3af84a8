"""The benchmark suites of python -m cudadent.bench (bench.py): backends, shapes, directions.
Shared by the runs (bench.py) and the report (bench_report.py). No torch needed."""
import math
import random

SDPA_BACKENDS = ("cudnn", "flash", "efficient")
BACKENDS = ("cudadent",) + SDPA_BACKENDS + ("flex",)
# flash-attn's own flash_attn_varlen_func (package flash_attn): only in the varlen suite, where
# it is a default backend (n/a when flash_attn does not import); ignored by the other suites.
VARLEN_ONLY_BACKENDS = ("flash_attn",)
ALL_BACKENDS = BACKENDS + VARLEN_ONLY_BACKENDS

FA3_SEQLENS = (512, 1024, 2048, 4096, 8192, 16384)
QUICK_SEQLENS = (1024, 8192)
SMALL_SHAPES = (  # B, H, S, D, causal
    (1, 1, 32, 64, False), (1, 1, 128, 64, False), (1, 8, 512, 64, False),
    (2, 8, 128, 64, False), (8, 8, 128, 64, True), (16, 8, 512, 64, True))
QUICK_SMALL = ((1, 1, 128, 64, False), (1, 8, 512, 64, False), (8, 8, 128, 64, True),
               (16, 8, 512, 64, True))
GQA_SHAPES = ((4, 32, 8, 4096, 128, True), (2, 32, 8, 8192, 128, True))  # B, Hq, Hkv, S, D, causal
# issue 27's widths, as the FA3 suite (16k tokens, hidden 2048: heads = 2048 // head_dim), bf16:
# (Q/K head dim, V head dim). Only with --suite dims (not in "all").
DIMS_PAIRS = ((96, 96), (256, 256), (192, 128))
# issue 28's varlen suite (--suite varlen, only alone): a packed batch of VARLEN_TOKENS tokens,
# documents of lengths drawn log-uniformly from VARLEN_DOC_MIN to VARLEN_DOC_MAX with the fixed
# seed VARLEN_SEED (varlen_doc_lengths), causal within each document, VARLEN_HEADS heads (q and
# kv) of head_dim VARLEN_HEAD_DIM, bf16; beside it, in the same process and the same rounds,
# cudadent's dense causal shape VARLEN_DENSE (B, H, S, D) that the second goal divides by.
VARLEN_TOKENS = 16384
VARLEN_DOC_MIN, VARLEN_DOC_MAX = 64, 8192
VARLEN_SEED = 28  # the number; chosen before seeing what it draws, and never re-chosen
VARLEN_HEADS, VARLEN_HEAD_DIM = 16, 128
VARLEN_DENSE = (8, 16, 2048, 128)
# issue 28's goals, fwd+bwd TFLOP/s of cudadent on the packed batch against ...
VARLEN_GOAL_FLEX = 1.5    # ... FlexAttention with a document block mask, same packed batch
VARLEN_GOAL_DENSE = 0.85  # ... cudadent on the dense causal shape VARLEN_DENSE
GRAPH_CALLS = 100
# directions measured per suite: fwd (no grad), fwd_train (grad recorded, LSE saved), bwd
DIRECTIONS = {"fa3": ("fwd", "fwd_train", "bwd"), "gqa": ("fwd", "fwd_train", "bwd"),
              "dims": ("fwd", "fwd_train", "bwd"), "small": ("fwd", "bwd"),
              "varlen": ("fwd_train", "bwd")}
TIMED_IN_ROUNDS = ("fa3", "gqa", "dims")  # suites whose shapes are timed by measure_fa3_interleaved


def varlen_doc_lengths(total=VARLEN_TOKENS, lo=VARLEN_DOC_MIN, hi=VARLEN_DOC_MAX,
                       seed=VARLEN_SEED):
    """Document lengths of a packed batch of `total` tokens: each drawn log-uniformly from [lo, hi]
    (exp of a uniform draw between log lo and log hi, rounded) by random.Random(seed) until the
    total is reached; the last document is cut so that the lengths sum to exactly `total` (it
    alone may be shorter than lo). Deterministic: Python's Mersenne Twister and random.uniform
    give the same draws on every platform and version."""
    rng = random.Random(seed)
    lengths, used = [], 0
    while used < total:
        n = int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        n = min(max(lo, min(hi, n)), total - used)
        lengths.append(n)
        used += n
    return tuple(lengths)
