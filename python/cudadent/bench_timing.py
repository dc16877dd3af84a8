"""How python -m cudadent.bench (bench.py) times a call: CUDA events around each call
(time_events, time_event_samples), a CUDA graph of many calls (time_graph), a Python loop of
eager calls (time_eager_loop); and the FLOPs by FlashAttention's convention (flops; varlen_flops
of a packed batch, counting only FLOPs within documents; shape_flops of either)."""
import statistics
import time

from .bench_suites import GRAPH_CALLS


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


def flops(B, H, S, D, causal, direction, Dv=None):
    """FlashAttention's convention: 2 B H S^2 (D + Dv) forward (4 B H S^2 D when Dv = D),
    halved for causal; backward 2.5x forward."""
    f = 2.0 * B * H * S * S * (D + (D if Dv is None else Dv))
    if causal:
        f /= 2
    return f * (2.5 if direction == "bwd" else 1.0)


def varlen_flops(docs, H, D, causal, direction, Dv=None):
    """FLOPs within documents of a packed batch: the sum over documents of flops() of one
    sequence of that document's length (causal: halved per document, as flops() halves a dense
    causal row); attention across documents is not work and is not counted."""
    return sum(flops(1, H, n, D, causal, direction, Dv) for n in docs)


def shape_flops(cfg, direction):
    """flops() of a bench shape (a dict of bench.shapes, or a result row); varlen_flops() where it
    is a packed batch (it has "docs")."""
    if cfg.get("docs"):
        return varlen_flops(cfg["docs"], cfg["H"], cfg["D"], cfg["causal"], direction,
                            cfg.get("Dv"))
    return flops(cfg["B"], cfg["H"], cfg["S"], cfg["D"], cfg["causal"], direction, cfg.get("Dv"))
