"""Ragged batches: cudadent.flash_attn_varlen_func, cudadent.attention(..., cu_seqlens_q=...),
the ops cudadent::attn_varlen_fwd / attn_varlen_bwd (cudadent/varlen.py).

Each sequence is compared on its own with the float64 reference of the dense tests (helpers.py
attention_ref: masks bottom-right aligned within the sequence) and the criterion of
docs/DESIGN.md, forward (out, lse) and backward (dq, dk, dv); outputs are NaN-poisoned before each
call. The tests without a GPU check the signature, the refusals and the fake implementations.
"""
import ctypes
import inspect

import pytest

from helpers import attention_ref, check_criterion, randn, requires_cuda, skip_if_kernel_missing
from helpers import torch

import cudadent

from torch._subclasses.fake_tensor import FakeTensorMode


# ---- without a GPU ------------------------------------------------------------------------------

def test_signature_matches_flash_attn():
    params = list(inspect.signature(cudadent.flash_attn_varlen_func).parameters.items())
    assert [n for n, _ in params[:7]] == ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k",
                                          "max_seqlen_q", "max_seqlen_k"]
    assert [(n, p.default) for n, p in params[7:]] == [
        ("dropout_p", 0.0), ("softmax_scale", None), ("causal", False), ("window_size", (-1, -1)),
        ("softcap", 0.0), ("alibi_slopes", None), ("deterministic", False),
        ("return_attn_probs", False), ("block_table", None), ("seqused_k", None)]


@pytest.mark.parametrize("kwargs,name", [
    (dict(dropout_p=0.1), "dropout_p"),
    (dict(alibi_slopes=torch.ones(4)), "alibi_slopes"),
    (dict(block_table=torch.zeros(2, 4, dtype=torch.int32)), "block_table"),
])
def test_unsupported_arguments_raise_naming_the_argument(kwargs, name):
    q = torch.randn(10, 4, 64, dtype=torch.bfloat16)  # refused before anything runs: no GPU
    cu = torch.tensor([0, 4, 10], dtype=torch.int32)
    with pytest.raises(NotImplementedError, match=rf"flash_attn_varlen_func: {name}="):
        cudadent.flash_attn_varlen_func(q, q, q, cu, cu, 6, 6, **kwargs)


def test_attention_varlen_arguments_come_together():
    q = torch.randn(10, 4, 64, dtype=torch.bfloat16)
    cu = torch.tensor([0, 4, 10], dtype=torch.int32)
    with pytest.raises(ValueError, match="cu_seqlens_q, cu_seqlens_k, max_seqlen_q and "):
        cudadent.attention(q, q, q, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=6)
    with pytest.raises(ValueError, match="for ragged batches"):
        cudadent.attention(q[None], q[None], q[None], max_seqlen_q=6)
    with pytest.raises(cudadent.BadSizeError, match="max_seqlen_k is a tensor"):
        cudadent.flash_attn_varlen_func(q, q, q, cu, cu, 6, torch.tensor(6))


def test_fake_shapes_without_gpu():
    """The fake implementations give flash-attn's varlen shapes (torch.compile traces them)."""
    with FakeTensorMode():
        q = torch.empty(300, 8, 192, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(250, 2, 192, dtype=torch.bfloat16, device="cuda")
        v = torch.empty(250, 2, 128, dtype=torch.bfloat16, device="cuda")
        cu = torch.empty(5, dtype=torch.int32, device="cuda")
        out, lse = torch.ops.cudadent.attn_varlen_fwd(q, k, v, cu, cu, 100, 90, 0.07, True)
        assert out.shape == (300, 8, 128) and lse.shape == (8, 300)
        assert lse.dtype == torch.float32 and out.dtype == q.dtype
        dq, dk, dv = torch.ops.cudadent.attn_varlen_bwd(out, q, k, v, out, lse, cu, cu, 100, 90,
                                                        0.07, True)
        assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape


def test_export_has_no_graph_break_without_gpu():
    """torch.export (dynamo, fullgraph) traces flash_attn_varlen_func to the custom op."""
    class M(torch.nn.Module):
        def forward(self, q, k, v, cu_q, cu_k):
            return cudadent.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 64, 64, causal=True) * 2

    with FakeTensorMode(allow_non_fake_inputs=True):
        q = torch.empty(100, 4, 64, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(90, 2, 64, dtype=torch.bfloat16, device="cuda")
        cu = torch.empty(3, dtype=torch.int32, device="cuda")
        ep = torch.export.export(M(), (q, k, k, cu, cu))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert "cudadent.attn_varlen_fwd.default" in targets


def test_transformers_unpad_helpers_without_gpu():
    """The arrays the transformers integration derives (cudadent/_transformers.py): from a 2-D
    padding mask, and from position_ids restarting at 0 (packed documents, batch 1)."""
    from cudadent._transformers import _packed_from_position_ids, _unpad
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0]])
    idx, cu, max_len = _unpad(mask)
    assert idx.tolist() == [2, 3, 4, 5, 6, 7] and cu.tolist() == [0, 3, 6, 6] and max_len == 3
    assert cu.dtype == torch.int32
    pos = torch.tensor([[0, 1, 2, 0, 1, 0, 1, 2, 3]])
    cu, max_len = _packed_from_position_ids(pos, 9)
    assert cu.tolist() == [0, 3, 5, 9] and max_len == 4 and cu.dtype == torch.int32
    assert _packed_from_position_ids(torch.arange(9)[None], 9) is None  # one sequence
    assert _packed_from_position_ids(pos.expand(2, 9), 9) is None      # batch 2: not packing
    assert _packed_from_position_ids(torch.tensor([[3, 4, 0, 1]]), 4) is None  # a cache's


# ---- the launch-parameter cache, without a GPU -------------------------------------------------
# CPU tensors and a stand-in library that records the params struct of each call: the impls'
# cached path (varlen.py, ops.py's "launch-parameter cache") against their full path.

class _RecordingLibrary:
    """Stands in for libcudadent: each entry point records what it was given and succeeds.
    queries: a copy of each workspace query's struct; launches: (the struct object launched, a
    copy of it as launched, workspace bytes)."""
    def __init__(self):
        self.queries, self.launches, self.checks = [], [], 0

    def _query(self, params_ref, nbytes_ref):
        params = params_ref._obj
        self.queries.append(type(params).from_buffer_copy(params))
        nbytes_ref._obj.value = 256 * params.batch
        return 0

    def _launch(self, params_ref, workspace, nbytes, stream):
        params = params_ref._obj
        self.launches.append((params, type(params).from_buffer_copy(params), nbytes))
        return 0

    cudadent_attn_fwd_workspace_size = cudadent_attn_bwd_workspace_size = _query
    cudadent_attn_fwd = cudadent_attn_bwd = _launch


@pytest.fixture
def recording_library(monkeypatch):
    """The varlen impls run on CPU tensors against a _RecordingLibrary; lib.checks counts the
    calls that took the full path (check_varlen, replaced: the real one wants CUDA tensors)."""
    from cudadent import _library, ops, varlen
    lib = _RecordingLibrary()

    def counted_check(*args):
        lib.checks += 1
    monkeypatch.setattr(_library, "load", lambda: lib)
    monkeypatch.setattr(ops, "_get_device", lambda: None)  # a CPU device's index: no guard
    monkeypatch.setattr(ops, "_stream", lambda device: None)
    monkeypatch.setattr(varlen, "check_varlen", counted_check)
    ops.clear_launch_caches()
    yield lib
    ops.clear_launch_caches()


def _prefix_sums(lens, dtype=torch.int32, device="cpu"):
    """cu_seqlens of sequences of lengths lens: (0, lens[0], lens[0] + lens[1], ...)."""
    return torch.tensor((0,) + tuple(torch.tensor(lens).cumsum(0).tolist()), dtype=dtype,
                        device=device)


def _cpu_args(direction, lens_q=(10, 0, 20), lens_k=(15, 5, 20), used=None, Hq=4, Hkv=2, D=64,
              Dv=64, dtype=torch.bfloat16, cu_q_dtype=torch.int32, cu_k_dtype=torch.int32,
              wide_q=False, **scalars):
    """Keyword arguments of varlen_fwd_impl / varlen_bwd_impl (direction) on CPU tensors: fresh
    data and arrays on each call. wide_q: q is the first Hq heads of a tensor of 2 * Hq heads
    (other strides)."""
    tq, tk = sum(lens_q), sum(lens_k)
    q = torch.randn(tq, 2 * Hq if wide_q else Hq, D).to(dtype)[:, :Hq]
    args = dict(q=q, k=torch.randn(tk, Hkv, D).to(dtype), v=torch.randn(tk, Hkv, Dv).to(dtype),
                cu_q=_prefix_sums(lens_q, cu_q_dtype), cu_k=_prefix_sums(lens_k, cu_k_dtype),
                max_q=max(lens_q), max_k=max(lens_k), scale=0.125, causal=True, wl=-1, wr=-1,
                det=False, softcap=0.0,
                used=None if used is None else torch.tensor(used, dtype=torch.int32))
    args.update(scalars)
    if direction == "bwd":
        args.update(out=torch.randn(tq, Hq, Dv).to(dtype), dout=torch.randn(tq, Hq, Dv).to(dtype),
                    lse=torch.randn(Hq, tq))
    return args


def _impl_call(direction, args):
    from cudadent import varlen
    impl = varlen.varlen_fwd_impl if direction == "fwd" else varlen.varlen_bwd_impl
    return impl(**args)


# the struct's fields that hold the outputs of each direction (the call's return values, in order)
_OUTPUT_FIELDS = {"fwd": ("o.data", "lse"), "bwd": ("dq.data", "dk.data", "dv.data")}


def _fields(params):
    """A params struct as {field: value}; a tensor descriptor's as 'q.data', 'q.stride_seq'..."""
    fields = {}
    for name, _ in params._fields_:
        value = getattr(params, name)
        if isinstance(value, ctypes.Structure):
            fields.update({f"{name}.{f}": getattr(value, f) for f, _ in value._fields_})
        else:
            fields[name] = value
    return fields


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
@pytest.mark.parametrize("used", [None, ((9, 1, 20), (30, 0, 3))], ids=["all-keys", "seqused_k"])
def test_launch_cache_launches_the_full_paths_struct_without_gpu(recording_library, direction,
                                                                 used):
    """A second call of a signature with other arrays (other contents at other addresses) and
    other data takes the cache: no checks, no workspace query, the first call's struct object
    launched again with the first call's workspace size. The struct it launches is, field for
    field, the one the full path builds for the same call (after clear_launch_caches(), which
    must clear the varlen caches), with the second call's pointers."""
    lib = recording_library
    used_1, used_2 = (None, None) if used is None else used
    first = _cpu_args(direction, lens_q=(10, 0, 20), lens_k=(15, 5, 20), used=used_1)
    second = _cpu_args(direction, lens_q=(1, 25, 4), lens_k=(30, 2, 8), used=used_2,
                       max_q=20, max_k=20)  # lengths above max_seqlen: nothing reads them here
    _impl_call(direction, first)
    cached_outputs = _impl_call(direction, second)
    assert (lib.checks, len(lib.queries), len(lib.launches)) == (1, 1, 2)
    (struct_1, launched_1, nbytes_1), (struct_2, launched_2, nbytes_2) = lib.launches
    assert struct_2 is struct_1 and nbytes_1 == nbytes_2 == 256 * 3
    cached = _fields(launched_2)
    assert cached["cu_seqlens_q"] != _fields(launched_1)["cu_seqlens_q"]  # other arrays
    from cudadent import ops
    ops.clear_launch_caches()
    full_outputs = _impl_call(direction, second)
    assert (lib.checks, len(lib.queries), len(lib.launches)) == (2, 2, 3)
    full = _fields(lib.launches[2][1])
    for name, got, want in zip(_OUTPUT_FIELDS[direction], cached_outputs, full_outputs):
        assert cached.pop(name) == got.data_ptr() and full.pop(name) == want.data_ptr(), name
    assert cached == full
    assert cached["cu_seqlens_q"] == second["cu_q"].data_ptr()
    assert cached["cu_seqlens_k"] == second["cu_k"].data_ptr()
    assert cached["seqused_k"] == (None if used is None else second["used"].data_ptr())
    assert cached["q.data"] == second["q"].data_ptr() and cached["v.data"] == second["v"].data_ptr()


# (what changes, _cpu_args's arguments of the second call): each changes the struct or the
# checks' verdict, so the second call must miss the cache
_MISSES = [
    ("max_seqlen_q", dict(max_q=21)),
    ("max_seqlen_k", dict(max_k=30)),
    ("window_left", dict(wl=8)),
    ("window_right", dict(wr=0)),
    ("causal", dict(causal=False)),
    ("softcap", dict(softcap=30.0)),
    ("softmax_scale", dict(scale=0.1)),
    ("deterministic", dict(det=True)),
    ("seqused_k", dict(used=(15, 5, 20))),
    ("batch", dict(lens_q=(10, 20), lens_k=(15, 25))),
    ("total_q", dict(lens_q=(10, 0, 21))),
    ("total_k", dict(lens_k=(15, 5, 21))),
    ("heads_kv", dict(Hkv=1)),
    ("head_dim_v", dict(Dv=32)),
    ("dtype", dict(dtype=torch.float16)),
    ("q_strides", dict(wide_q=True)),
    ("cu_seqlens_q_dtype", dict(cu_q_dtype=torch.int64)),
    ("cu_seqlens_k_dtype", dict(cu_k_dtype=torch.int64)),
]


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
@pytest.mark.parametrize("change", [m[1] for m in _MISSES], ids=[m[0] for m in _MISSES])
def test_launch_cache_misses_when_the_signature_changes_without_gpu(recording_library, direction,
                                                                    change):
    lib = recording_library
    _impl_call(direction, _cpu_args(direction))
    _impl_call(direction, _cpu_args(direction))  # the same signature: a hit
    _impl_call(direction, _cpu_args(direction, **change))
    assert (lib.checks, len(lib.queries), len(lib.launches)) == (2, 2, 3)
    assert lib.launches[2][0] is not lib.launches[0][0]


def test_launch_cache_key_refuses_max_seqlen_that_is_not_an_int_without_gpu():
    """max_seqlen 64.0 or True would find the key of 64 or 1 (equal, same hash) and skip
    check_varlen's refusal: such calls get no key, so they take the full path."""
    from cudadent import varlen
    q, cu = torch.empty(10, 2, 64, dtype=torch.bfloat16), torch.zeros(3, dtype=torch.int32)
    scalars = (0.125, True, -1, -1, False, 0.0)
    assert varlen._signature((q, q, q), cu, cu, None, 64, 1, scalars) is not None
    for max_q, max_k in ((64.0, 1), (64, True)):
        assert varlen._signature((q, q, q), cu, cu, None, max_q, max_k, scalars) is None


@pytest.mark.parametrize("direction", ["fwd", "bwd"])
@pytest.mark.parametrize("array", ["cu_q", "cu_k", "used"])
def test_launch_cache_keeps_no_call_that_copied_an_array_without_gpu(recording_library,
                                                                     direction, array):
    """A strided array is copied before the call; such a signature is not kept (the struct
    holds the copy's pointer), so every call of it takes the full path."""
    lib = recording_library
    field = {"cu_q": "cu_seqlens_q", "cu_k": "cu_seqlens_k", "used": "seqused_k"}[array]
    for _ in range(2):
        args = _cpu_args(direction, used=(9, 1, 20))
        args[array] = torch.stack((args[array], torch.full_like(args[array], -7)), 1)[:, 0]
        _impl_call(direction, args)
        assert getattr(lib.launches[-1][1], field) != args[array].data_ptr()
    assert (lib.checks, len(lib.queries)) == (2, 2)


# ---- on a GPU -----------------------------------------------------------------------------------

def _pack(lens_q, lens_k, Hq, Hkv, D, Dv, dtype, seed):
    """Packed q, k, v of the sequences and their int32 prefix sums on the GPU."""
    tq, tk = sum(lens_q), sum(lens_k)
    q = randn((tq, Hq, D), dtype, seed)
    k = randn((tk, Hkv, D), dtype, seed + 1)
    v = randn((tk, Hkv, Dv), dtype, seed + 2)
    cu_q = torch.tensor([0] + list(torch.tensor(lens_q).cumsum(0).tolist()), dtype=torch.int32,
                        device="cuda")
    cu_k = torch.tensor([0] + list(torch.tensor(lens_k).cumsum(0).tolist()), dtype=torch.int32,
                        device="cuda")
    return q, k, v, cu_q, cu_k


# (lengths q, lengths k, heads_q, heads_kv, head_dim, head_dim_v, causal, window, softcap)
CASES = [
    ((0, 1, 17, 300, 64, 129), (5, 1, 17, 400, 0, 129), 4, 2, 64, 64, False, (-1, -1), 0.0),
    ((0, 1, 17, 300, 64, 129), (5, 1, 17, 400, 0, 129), 4, 2, 64, 64, True, (-1, -1), 0.0),
    ((5, 1, 17, 400, 0, 129), (0, 1, 17, 300, 64, 129), 4, 1, 128, 128, True, (-1, -1), 0.0),
    ((33, 250, 7), (40, 200, 7), 6, 2, 96, 96, False, (33, 7), 0.0),
    ((33, 250, 7), (33, 250, 7), 2, 2, 192, 128, True, (-1, -1), 30.0),
    ((70, 3, 90), (70, 3, 90), 2, 1, 59, 59, True, (-1, -1), 0.0),  # padded to 64 in Python
]


def _case_id(c):
    lq, lk, Hq, Hkv, D, Dv, causal, w, cap = c
    return (f"n{len(lq)}-H{Hq}x{Hkv}-D{D}" + (f"v{Dv}" if Dv != D else "") +
            ("-causal" if causal else "") + (f"-w{w[0]}_{w[1]}" if w != (-1, -1) else "") +
            (f"-cap{cap:g}" if cap else ""))


@requires_cuda
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_varlen_forward_and_backward_per_sequence(case, poison_outputs):
    lq, lk, Hq, Hkv, D, Dv, causal, window, softcap = case
    dtype = torch.bfloat16
    q, k, v, cu_q, cu_k = _pack(lq, lk, Hq, Hkv, D, Dv, dtype, seed=sum(lq) + D)
    q, k, v = (t.requires_grad_(True) for t in (q, k, v))
    dout = randn((q.shape[0], Hq, Dv), dtype, 7)
    try:
        out, lse, probs = cudadent.flash_attn_varlen_func(
            q, k, v, cu_q, cu_k, max(lq), max(lk), causal=causal, window_size=window,
            softcap=softcap, return_attn_probs=True)
        dq, dk, dv = torch.autograd.grad(out, (q, k, v), dout)
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    torch.cuda.synchronize()
    assert probs is None and out.shape == (q.shape[0], Hq, Dv) and lse.shape == (Hq, q.shape[0])
    scale = D ** -0.5
    name = "varlen"
    for b in range(len(lq)):
        q0, q1 = int(cu_q[b]), int(cu_q[b + 1])
        k0, k1 = int(cu_k[b]), int(cu_k[b + 1])
        cid = _case_id(case) + f"-seq{b}({q1 - q0}x{k1 - k0})"
        if q1 == q0:
            continue
        sl = [t.detach()[None, a:z] for t, (a, z) in ((q, (q0, q1)), (k, (k0, k1)), (v, (k0, k1)))]
        l64 = [t.double().requires_grad_(True) for t in sl]
        llp = [t.clone().requires_grad_(True) for t in sl]
        ref, ref_lse = attention_ref(*l64, scale, causal, window, torch.float64, softcap)
        lowp, _ = attention_ref(*llp, scale, causal, window, dtype, softcap)
        check_criterion(name, cid, "out", out[q0:q1][None], ref, lowp)
        got_lse = lse[:, q0:q1]
        dead = torch.isinf(ref_lse[0])
        assert torch.equal(torch.isinf(got_lse) & (got_lse < 0), dead), f"{cid}: -inf rows"
        if (~dead).any():
            assert float((got_lse[~dead].double() - ref_lse[0][~dead]).abs().max()) < 1e-3
        g_out = dout[None, q0:q1]
        rg = torch.autograd.grad(ref, l64, g_out.double(), allow_unused=True)
        lg = torch.autograd.grad(lowp, llp, g_out, allow_unused=True)
        got = (dq[q0:q1], dk[k0:k1], dv[k0:k1])
        for qty, x, r, lp in zip(("dq", "dk", "dv"), got, rg, lg):
            if x.numel() == 0:
                continue
            r = torch.zeros_like(x[None], dtype=torch.float64) if r is None else r
            lp = torch.zeros_like(x[None]) if lp is None else lp
            check_criterion(name, cid, qty, x[None], r, lp)
    # tokens of empty-key sequences: O = 0 and zero dq; keys of empty-query sequences: dk = dv = 0
    for b in range(len(lq)):
        q0, q1, k0, k1 = int(cu_q[b]), int(cu_q[b + 1]), int(cu_k[b]), int(cu_k[b + 1])
        if k1 == k0 and q1 > q0:
            assert torch.count_nonzero(out[q0:q1]) == 0 and torch.count_nonzero(dq[q0:q1]) == 0
        if q1 == q0 and k1 > k0:
            assert torch.count_nonzero(dk[k0:k1]) == 0 and torch.count_nonzero(dv[k0:k1]) == 0


@requires_cuda
def test_attention_with_cu_seqlens_equals_flash_attn_varlen_func():
    q, k, v, cu_q, cu_k = _pack((17, 0, 130), (20, 4, 130), 4, 2, 64, 64, torch.float16, 3)
    try:
        a, lse_a = cudadent.attention(q, k, v, causal=True, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                                      max_seqlen_q=130, max_seqlen_k=130, return_lse=True)
        b, lse_b, _ = cudadent.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 130, 130, causal=True,
                                                      return_attn_probs=True)
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    assert torch.equal(a, b) and torch.equal(lse_a, lse_b)
    # one sequence: the dense call of that shape (the same computation)
    one_q, one_k = q[147 - 130:], k[154 - 130:]
    cu1 = torch.tensor([0, 130], dtype=torch.int32, device="cuda")
    got = cudadent.flash_attn_varlen_func(one_q, one_k, v[154 - 130:], cu1, cu1, 130, 130,
                                          causal=True)
    dense = cudadent.attention(one_q[None], one_k[None], v[None, 154 - 130:], causal=True)[0]
    torch.testing.assert_close(got, dense, atol=2e-3, rtol=2e-2)


@requires_cuda
def test_seqused_k_equals_the_keys_cut_out():
    """seqused_k (FA3's keyword): sequence b attends to its first seqused_k[b] keys; the same
    call on k / v repacked to just those keys gives the same output and dq, and the unused keys
    get dk = dv = 0."""
    lq, lk, used = (40, 7, 130), (50, 9, 140), (33, 0, 140)
    q, k, v, cu_q, cu_k = _pack(lq, lk, 4, 2, 64, 64, torch.bfloat16, 11)
    keep = torch.cat([torch.arange(int(cu_k[b]), int(cu_k[b]) + u) for b, u in enumerate(used)])
    k2, v2 = k[keep.cuda()].clone(), v[keep.cuda()].clone()
    cu_k2 = torch.tensor([0, 33, 33, 173], dtype=torch.int32, device="cuda")
    seqused = torch.tensor(used, dtype=torch.int32, device="cuda")
    dout = randn((sum(lq), 4, 64), torch.bfloat16, 5)
    res = []
    try:
        for kk, vv, ck, su in ((k, v, cu_k, seqused), (k2, v2, cu_k2, None)):
            qq, kk, vv = (t.detach().clone().requires_grad_(True) for t in (q, kk, vv))
            out = cudadent.flash_attn_varlen_func(qq, kk, vv, cu_q, ck, max(lq), max(lk),
                                                  causal=True, seqused_k=su)
            res.append((out,) + torch.autograd.grad(out, (qq, kk, vv), dout))
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    (o1, dq1, dk1, dv1), (o2, dq2, dk2, dv2) = res
    torch.testing.assert_close(o1, o2, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(dq1, dq2, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(dk1[keep.cuda()], dk2, atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(dv1[keep.cuda()], dv2, atol=1e-2, rtol=1e-2)
    unused = torch.ones(sum(lk), dtype=torch.bool)
    unused[keep] = False
    assert torch.count_nonzero(dk1[unused.cuda()]) == 0
    assert torch.count_nonzero(dv1[unused.cuda()]) == 0
    assert torch.count_nonzero(o1[40:47]) == 0  # sequence 1 uses no key: O = 0


@requires_cuda
def test_compile_fullgraph_forward_and_backward():
    q, k, v, cu_q, cu_k = _pack((40, 0, 97), (40, 8, 97), 4, 2, 64, 64, torch.bfloat16, 11)
    q, k, v = (t.requires_grad_(True) for t in (q, k, v))

    def loss_fn(q, k, v):
        out = cudadent.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 97, 97, causal=True)
        return (out.float() ** 2).sum()

    try:
        eager = torch.autograd.grad(loss_fn(q, k, v), (q, k, v))
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    compiled = torch.compile(loss_fn, fullgraph=True)
    got = torch.autograd.grad(compiled(q, k, v), (q, k, v))
    for a, b in zip(got, eager):
        torch.testing.assert_close(a, b, atol=2e-3, rtol=2e-2)


@requires_cuda
def test_cuda_graph_capture_forward_and_backward():
    q, k, v, cu_q, cu_k = _pack((33, 5, 120), (40, 5, 100), 4, 1, 128, 128, torch.bfloat16, 21)
    q, k, v = (t.requires_grad_(True) for t in (q, k, v))
    dout = randn((q.shape[0], 4, 128), torch.bfloat16, 25)

    def step():
        out = cudadent.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 120, 100, causal=True,
                                              deterministic=True)
        return (out,) + torch.autograd.grad(out, (q, k, v), dout)

    try:
        step()
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static = step()
    with torch.no_grad():  # new inputs and new lengths in the same memory
        for t, seed in ((q, 30), (k, 31), (v, 32), (dout, 33)):
            t.copy_(randn(t.shape, t.dtype, seed))
        cu_q.copy_(torch.tensor([0, 100, 101, 158], dtype=torch.int32))
        cu_k.copy_(torch.tensor([0, 3, 45, 145], dtype=torch.int32))
    g.replay()
    torch.cuda.synchronize()
    eager = step()
    for a, b in zip(static, eager):
        assert torch.equal(a, b)


@requires_cuda
def test_deterministic_backward_is_bitwise_repeatable():
    q, k, v, cu_q, cu_k = _pack((300, 1, 77), (310, 9, 77), 8, 2, 64, 64, torch.bfloat16, 41)
    q, k, v = (t.requires_grad_(True) for t in (q, k, v))
    dout = randn((q.shape[0], 8, 64), torch.bfloat16, 45)
    runs = []
    for _ in range(3):
        try:
            out = cudadent.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 300, 310, causal=True,
                                                  deterministic=True)
            runs.append(torch.autograd.grad(out, (q, k, v), dout))
        except cudadent.CudadentError as e:
            skip_if_kernel_missing(e)
    for run in runs[1:]:
        for a, b in zip(run, runs[0]):
            assert torch.equal(a, b)


@requires_cuda
@pytest.mark.parametrize("seqused", [False, True], ids=["all-keys", "seqused_k"])
def test_launch_cache_reads_new_arrays(seqused, poison_outputs, monkeypatch):
    """The ops' second call of a signature (the launch-parameter cache) with other arrays in
    other memory, and q, k, v copied to other memory: forward and backward equal, bit for bit,
    the full path's on the same call (deterministic backward); and differ from the first call's,
    so the arrays' contents were read."""
    from cudadent import ops, varlen
    full_paths = []
    check_varlen = varlen.check_varlen

    def counted_check_varlen(*args):
        full_paths.append(args)
        return check_varlen(*args)
    monkeypatch.setattr(varlen, "check_varlen", counted_check_varlen)
    # two ragged batches of 3 sequences with the same totals (177 queries, 199 keys):
    # (lengths q, lengths k, seqused_k)
    arrays = [((40, 7, 130), (50, 9, 140), (33, 0, 140)),
              ((100, 70, 7), (3, 146, 50), (3, 100, 21))]
    q, k, v, _, _ = _pack(arrays[0][0], arrays[0][1], 4, 2, 64, 64, torch.bfloat16, 61)
    dout = randn((q.shape[0], 4, 64), torch.bfloat16, 65)

    def run(lens_q, lens_k, used):
        cu_q, cu_k = (_prefix_sums(n, device="cuda") for n in (lens_q, lens_k))
        used = torch.tensor(used, dtype=torch.int32, device="cuda") if seqused else None
        qq, kk, vv, do = (t.clone() for t in (q, k, v, dout))
        args = (cu_q, cu_k, 130, 146, 0.125, True, -1, -1, True, 0.0, used)
        out, lse = torch.ops.cudadent.attn_varlen_fwd(qq, kk, vv, *args)
        return (out, lse) + torch.ops.cudadent.attn_varlen_bwd(do, qq, kk, vv, out, lse, *args)

    ops.clear_launch_caches()
    try:
        first = run(*arrays[0])
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    cached = run(*arrays[1])
    assert len(full_paths) == 2  # the first forward and backward; the second call's were cached
    ops.clear_launch_caches()
    full = run(*arrays[1])
    assert len(full_paths) == 4
    for name, a, b, c in zip(("out", "lse", "dq", "dk", "dv"), cached, full, first):
        assert torch.equal(a, b), f"{name}: the cached launch differs from the full path's"
        assert not torch.equal(a, c), f"{name}: the second arrays changed nothing"
