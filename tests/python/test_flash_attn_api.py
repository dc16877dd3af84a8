"""cudadent.flash_attn_func: flash-attn 2's signature and semantics."""
import inspect

import pytest

from helpers import randn, requires_cuda, skip_if_kernel_missing, torch

import cudadent


def test_signature_matches_flash_attn():
    params = list(inspect.signature(cudadent.flash_attn_func).parameters.items())
    assert [(n, p.default) for n, p in params[3:]] == [
        ("dropout_p", 0.0), ("softmax_scale", None), ("causal", False), ("window_size", (-1, -1)),
        ("softcap", 0.0), ("alibi_slopes", None), ("deterministic", False),
        ("return_attn_probs", False)]


@pytest.mark.parametrize("kwargs,name", [
    (dict(dropout_p=0.1), "dropout_p"),
    (dict(softcap=30.0), "softcap"),
    (dict(alibi_slopes=torch.ones(4)), "alibi_slopes"),
])
def test_unsupported_arguments_raise_naming_the_argument(kwargs, name):
    q = torch.randn(1, 8, 4, 64, dtype=torch.bfloat16)  # checked before anything else: no GPU
    with pytest.raises(NotImplementedError, match=rf"flash_attn_func: {name}="):
        cudadent.flash_attn_func(q, q, q, **kwargs)


def test_softcap_says_not_implemented_yet():
    q = torch.randn(1, 8, 4, 64, dtype=torch.bfloat16)
    with pytest.raises(NotImplementedError, match=r"softcap=30.0 .*not implemented by any kernel yet"):
        cudadent.flash_attn_func(q, q, q, softcap=30.0)


def test_no_varlen_func_until_a_kernel_implements_it():
    # code that detects flash-attn's varlen function by its presence must not find one that
    # cannot run
    assert not hasattr(cudadent, "flash_attn_varlen_func")


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
