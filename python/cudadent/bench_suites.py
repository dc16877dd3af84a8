"""The benchmark suites of python -m cudadent.bench (bench.py): backends, shapes, directions.
Shared by the runs (bench.py) and the report (bench_report.py)."""

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
# issue 27's widths, as the FA3 suite (16k tokens, hidden 2048: heads = 2048 // head_dim), bf16:
# (Q/K head dim, V head dim). Only with --suite dims (not in "all").
DIMS_PAIRS = ((96, 96), (256, 256), (192, 128))
GRAPH_CALLS = 100
# directions measured per suite: fwd (no grad), fwd_train (grad recorded, LSE saved), bwd
DIRECTIONS = {"fa3": ("fwd", "fwd_train", "bwd"), "gqa": ("fwd", "fwd_train", "bwd"),
              "dims": ("fwd", "fwd_train", "bwd"), "small": ("fwd", "bwd")}
TIMED_IN_ROUNDS = ("fa3", "gqa", "dims")  # suites whose shapes are timed by measure_fa3_interleaved
