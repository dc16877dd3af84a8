"""cudadent.flash_attn_func: flash-attn 2's signature and semantics."""
import inspect

import pytest

from conftest import portable_has_issue27
from helpers import randn, requires_cuda, skip_if_kernel_missing, torch

import cudadent
from cudadent import ops


def test_signature_matches_flash_attn():
    params = list(inspect.signature(cudadent.flash_attn_func).parameters.items())
    assert [(n, p.default) for n, p in params[3:]] == [
        ("dropout_p", 0.0), ("softmax_scale", None), ("causal", False), ("window_size", (-1, -1)),
        ("softcap", 0.0), ("alibi_slopes", None), ("deterministic", False),
        ("return_attn_probs", False)]


@pytest.mark.parametrize("kwargs,name", [
    (dict(dropout_p=0.1), "dropout_p"),
    (dict(alibi_slopes=torch.ones(4)), "alibi_slopes"),
])
def test_unsupported_arguments_raise_naming_the_argument(kwargs, name):
    q = torch.randn(1, 8, 4, 64, dtype=torch.bfloat16)  # checked before anything else: no GPU
    with pytest.raises(NotImplementedError, match=rf"flash_attn_func: {name}="):
        cudadent.flash_attn_func(q, q, q, **kwargs)


class _Recorder:
    """Stands in for ops.attention_fwd (no GPU): records its arguments, returns zeros."""

    def __init__(self):
        self.calls = []

    def __call__(self, q, k, v, scale, causal, left, right, deterministic, softcap=0.0,
                 need_lse=True):
        self.calls.append(dict(q=q.shape, k=k.shape, v=v.shape, scale=scale, softcap=softcap,
                               causal=causal, window=(left, right)))
        B, Sq, Hq, _ = q.shape
        return (q.new_zeros((B, Sq, Hq, v.shape[-1])),
                q.new_zeros((B, Hq, Sq), dtype=torch.float32))


def test_softcap_is_passed_to_the_kernels(monkeypatch):
    """softcap is no longer refused in Python: flash_attn_func and attention pass it on (a
    library without a kernel for it refuses the call: test_softcap_refused_only_without_a_kernel)."""
    rec = _Recorder()
    monkeypatch.setattr(ops, "attention_fwd", rec)
    q = torch.randn(1, 8, 4, 64, dtype=torch.bfloat16)
    cudadent.flash_attn_func(q, q, q, softcap=30.0, causal=True)
    cudadent.flash_attn_func(q, q, q, softcap=30.0, return_attn_probs=True)
    cudadent.attention(q, q, q, softcap=5)
    cudadent.flash_attn_func(q, q, q)
    assert [c["softcap"] for c in rec.calls] == [30.0, 30.0, 5.0, 0.0]
    assert rec.calls[0]["causal"] is True


@pytest.mark.parametrize("D,Dv", [(59, 59), (111, 111), (72, 59), (59, 128), (8, 8), (1, 3)])
def test_head_dims_not_a_multiple_of_8_are_padded(monkeypatch, D, Dv):
    """q, k (D) and v (Dv) are padded with zeros to the next multiple of 8 (a copy), the output
    sliced back to Dv (contiguous); the default scale is 1/sqrt of the real D."""
    rec = _Recorder()
    monkeypatch.setattr(ops, "attention_fwd", rec)
    monkeypatch.setattr(ops, "check_qkv", lambda q, k, v: None)  # CPU tensors: no GPU here
    q = torch.randn(2, 8, 4, D, dtype=torch.float16)
    k = torch.randn(2, 9, 2, D, dtype=torch.float16)
    v = torch.randn(2, 9, 2, Dv, dtype=torch.float16)
    out, lse, _ = cudadent.flash_attn_func(q, k, v, return_attn_probs=True)
    (c,) = rec.calls
    pad, pad_v = -D % 8, -Dv % 8
    assert c["q"] == (2, 8, 4, D + pad) and c["k"] == (2, 9, 2, D + pad)
    assert c["v"] == (2, 9, 2, Dv + pad_v)
    assert c["scale"] == pytest.approx(D ** -0.5)
    assert out.shape == (2, 8, 4, Dv) and out.is_contiguous() and lse.shape == (2, 4, 8)


def test_padding_copies_zeros_and_gradients_flow_back(monkeypatch):
    """The padded columns are zeros (they add nothing to q.k) and the gradients of the real
    columns come back through the copy."""
    seen = {}

    def fake(q, k, v, scale, *args, **kwargs):
        seen["q"], seen["v"] = q, v
        return (q[..., :v.shape[-1]] * 2 + v.sum() * 0, q.new_zeros(q.shape[0], q.shape[2],
                                                                     q.shape[1]))
    monkeypatch.setattr(ops, "attention_fwd", fake)
    monkeypatch.setattr(ops, "check_qkv", lambda q, k, v: None)  # CPU tensors: no GPU here
    q = torch.randn(1, 4, 2, 59, requires_grad=True)
    v = torch.randn(1, 4, 2, 59, requires_grad=True)
    out = cudadent.attention(q, q, v)
    assert torch.count_nonzero(seen["q"][..., 59:]) == 0 and seen["q"].shape[-1] == 64
    assert torch.count_nonzero(seen["v"][..., 59:]) == 0 and seen["v"].shape[-1] == 64
    (g,) = torch.autograd.grad(out.sum(), (q,))
    assert g.shape == q.shape and torch.equal(g, torch.full_like(q, 2.0))


def test_head_dims_past_256_name_the_supported_set():
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():  # no GPU needed
        q = torch.empty(1, 8, 4, 264, dtype=torch.bfloat16, device="cuda")
        with pytest.raises(cudadent.UnsupportedHeadDimError,
                           match=r"head_dim \(q and k's last dimension\) = 264 is above 256.*"
                                 r"supported: .*cudadent.supported_head_dims"):
            cudadent.flash_attn_func(q, q, q)
        k = torch.empty(1, 8, 4, 64, dtype=torch.bfloat16, device="cuda")
        v = torch.empty(1, 8, 4, 257, dtype=torch.bfloat16, device="cuda")
        with pytest.raises(cudadent.UnsupportedHeadDimError,
                           match=r"head_dim_v .* = 257 is above 256"):
            cudadent.flash_attn_func(k, k, v)


@requires_cuda
def test_softcap_refused_only_without_a_kernel():
    """A library whose kernels are from before issue 27 refuses softcap (UnsupportedFeatureError,
    a NotImplementedError, naming softcap); issue 27's run it (test_correctness.py checks the
    values)."""
    q = randn((1, 64, 4, 64), torch.bfloat16, 1)
    if portable_has_issue27("fwd"):
        out = cudadent.flash_attn_func(q, q, q, softcap=30.0)
        assert out.shape == q.shape and torch.isfinite(out).all()
        return
    with pytest.raises(NotImplementedError, match=r"softcap = 30 is not implemented yet") as info:
        cudadent.flash_attn_func(q, q, q, softcap=30.0)
    assert isinstance(info.value, cudadent.UnsupportedFeatureError)


def test_varlen_func_is_exported():
    # the portable kernels implement ragged batches both ways (issue 28): code that detects
    # flash-attn's varlen function by its presence finds it (tests/python/test_varlen.py)
    from cudadent import varlen
    assert cudadent.flash_attn_varlen_func is varlen.flash_attn_varlen_func
    assert "flash_attn_varlen_func" in cudadent.__all__


@requires_cuda
def test_return_attn_probs_and_semantics():
    q = randn((2, 64, 4, 64), torch.bfloat16, 1)
    k = randn((2, 96, 2, 64), torch.bfloat16, 2)
    v = randn((2, 96, 2, 64), torch.bfloat16, 3)
    try:
        out, lse, probs = cudadent.flash_attn_func(q, k, v, causal=True, window_size=(32, -1),
                                                   return_attn_probs=True)
        ref = cudadent.attention(q, k, v, causal=True, window=(32, -1))
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    assert probs is None and lse.shape == (2, 4, 64) and lse.dtype == torch.float32
    assert torch.equal(out, ref)
    assert torch.equal(cudadent.flash_attn_func(q, k, v, causal=True, window_size=(32, -1)), ref)
