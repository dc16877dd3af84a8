"""The backends of python -m cudadent.bench (bench.py): one forward call of cudadent, SDPA's
cudnn / flash / efficient (under sdpa_kernel) or FlexAttention (compiled) on a shape's inputs
(make_forward), and the context each runs under (_backend_ctx); for the varlen suite, one forward
of a packed batch of documents (make_varlen_forward): cudadent.flash_attn_varlen_func,
flash-attn's flash_attn_varlen_func, or FlexAttention with a document block mask."""
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



_VARLEN_MASKS = {}  # the packed batch's flex block mask, made once a process


def cu_seqlens(docs, device):
    """int32 (len(docs) + 1,) prefix sums of the document lengths, on `device`."""
    import itertools
    import torch
    return torch.tensor((0,) + tuple(itertools.accumulate(docs)), dtype=torch.int32,
                        device=device)


def document_ids(docs, device):
    """int32 (sum(docs),): the index of the document each token of the packed batch is in."""
    import torch
    return torch.repeat_interleave(torch.arange(len(docs), dtype=torch.int32, device=device),
                                   torch.tensor(docs, device=device))


def document_mask_mod(doc_id, causal):
    """FlexAttention mask_mod of a packed batch: a query sees the keys of its own document
    (doc_id: document_ids), and with causal only those at or before its position (positions
    of the packed row: within one document the same order as the document's own)."""
    def document_causal(b, h, q_idx, kv_idx):
        return (doc_id[q_idx] == doc_id[kv_idx]) & (q_idx >= kv_idx)

    def document(b, h, q_idx, kv_idx):
        return doc_id[q_idx] == doc_id[kv_idx]
    return document_causal if causal else document


def make_varlen_forward(backend, q, k, v, docs, causal):
    """(fn, ctx, leaves, to_bshd) as make_forward, for a packed batch: q, k, v are (1, total, H,
    D) tensors holding the documents of lengths `docs` one after another. cudadent and
    flash_attn get (total, H, D) views with cu_seqlens and max_seqlen (made here, outside any
    timing); flex gets (1, H, total, D) views and a document block mask (create_block_mask,
    made here). SDPA has no varlen form short of a dense (total x total) mask: ValueError."""
    import contextlib
    if backend in ("cudadent", "flash_attn"):
        if backend == "cudadent":
            from cudadent import flash_attn_varlen_func as varlen
        else:
            from flash_attn import flash_attn_varlen_func as varlen
        cu = cu_seqlens(docs, q.device)
        longest = max(docs)
        qp, kp, vp = q[0], k[0], v[0]
        return (lambda: varlen(qp, kp, vp, cu, cu, longest, longest, causal=causal)), \
            contextlib.nullcontext(), (q, k, v), (lambda o: o.unsqueeze(0))
    if backend == "flex":
        flex = _flex_compiled()
        from torch.nn.attention.flex_attention import create_block_mask
        total = q.shape[1]
        # One block mask (and mask_mod) for every direction: a new mask_mod object each time
        # would make dynamo compile flex again for each.
        key = ("flex", tuple(docs), causal, str(q.device))
        if key not in _VARLEN_MASKS:
            _VARLEN_MASKS.clear()
            _VARLEN_MASKS[key] = create_block_mask(
                document_mask_mod(document_ids(docs, q.device), causal), None, None, total, total,
                device=q.device)
        block_mask = _VARLEN_MASKS[key]
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        return (lambda: flex(qt, kt, vt, block_mask=block_mask)), contextlib.nullcontext(), \
            (q, k, v), (lambda o: o.transpose(1, 2))
    raise ValueError(f"{backend} has no varlen / document-mask form in this bench")
