"""The backends of python -m cudadent.bench (bench.py): one forward call of cudadent, SDPA's
cudnn / flash / efficient (under sdpa_kernel) or FlexAttention (compiled) on a shape's inputs
(make_forward), and the context each runs under (_backend_ctx)."""
from .bench_suites import SDPA_BACKENDS


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

