"""Errors: Python-side checks name the tensor and what was expected (these run without a GPU,
through fake tensors or CPU tensors); C statuses become exception classes carrying .status and
the library's own message (GPU tests)."""
import pytest

from helpers import randn, requires_cuda, skip_if_kernel_missing, torch

import cudadent
from cudadent import Status

from torch._subclasses.fake_tensor import FakeTensorMode


def _t(*shape, dtype=torch.bfloat16, device="cuda"):
    return torch.empty(*shape, dtype=dtype, device=device)


def test_cpu_tensor_names_the_tensor():
    q = torch.randn(1, 8, 2, 64, dtype=torch.bfloat16)
    with pytest.raises(cudadent.DeviceMismatchError, match=r"^q is on device 'cpu'; expected a CUDA"):
        cudadent.attention(q, q, q)
    with pytest.raises(ValueError):  # also a ValueError
        cudadent.attention(q, q, q)


@pytest.mark.parametrize("make,exc,pattern", [
    (lambda: (_t(1, 8, 2, 64, dtype=torch.float32),) * 3, cudadent.UnsupportedDtypeError,
     r"q has dtype torch.float32; expected torch.float16 or torch.bfloat16"),
    (lambda: (_t(1, 8, 2, 64), _t(1, 8, 2, 64, dtype=torch.float16), _t(1, 8, 2, 64)),
     cudadent.UnsupportedDtypeError, r"k has dtype torch.float16; expected q's dtype"),
    (lambda: (_t(1, 8, 2, 64), _t(2, 8, 2, 64), _t(2, 8, 2, 64)), cudadent.ShapeError,
     r"k has batch 2 but q has batch 1"),
    (lambda: (_t(1, 8, 2, 64), _t(1, 8, 2, 128), _t(1, 8, 2, 128)), cudadent.ShapeError,
     r"k has head_dim 128 but q has head_dim 64"),
    (lambda: (_t(1, 8, 2, 64), _t(1, 8, 2, 64), _t(1, 9, 2, 64)), cudadent.ShapeError,
     r"v has shape \(1, 9, 2, 64\); expected k's shape \(1, 8, 2, 64\)"),
    (lambda: (_t(1, 8, 2, 192), _t(1, 8, 2, 192), _t(1, 8, 2, 128)),
     cudadent.HeadDimVNotImplementedError,
     r"v has head_dim 128 but q and k have head_dim 192 .*\(head_dim_v\).* not implemented by any "
     r"kernel yet"),
    (lambda: (_t(1, 8, 6, 64), _t(1, 8, 4, 64), _t(1, 8, 4, 64)), cudadent.BadHeadsError,
     r"q has 6 heads, which is not a multiple of the 4 heads of k and v"),
    (lambda: (_t(8, 2, 64), _t(8, 2, 64), _t(8, 2, 64)), cudadent.ShapeError,
     r"q has shape \(8, 2, 64\); expected a 4-d tensor \(batch, seqlen, heads, head_dim\)"),
], ids=["dtype", "dtype-mismatch", "batch", "head_dim", "v-shape", "head_dim_v", "heads", "ndim"])
def test_python_checks_name_the_tensor(make, exc, pattern):
    with FakeTensorMode():  # the same checks run in the real and the fake implementation
        q, k, v = make()
        with pytest.raises(exc, match=pattern) as info:
            cudadent.attention(q, k, v)
    assert isinstance(info.value, cudadent.CudadentError)


def test_head_dim_v_is_not_implemented_yet():
    """head_dim_v != head_dim: a NotImplementedError (and an UnsupportedHeadDimError, the C
    status of such a call) naming what is missing."""
    assert issubclass(cudadent.HeadDimVNotImplementedError, NotImplementedError)
    assert issubclass(cudadent.HeadDimVNotImplementedError, cudadent.UnsupportedHeadDimError)
    with FakeTensorMode():
        q, v = _t(1, 8, 2, 128), _t(1, 8, 2, 64)
        with pytest.raises(NotImplementedError, match="head_dim_v"):
            cudadent.flash_attn_func(q, q, v)


def test_status_classes():
    assert cudadent.BadScaleError.status == Status.BAD_SCALE
    assert issubclass(cudadent.UnsupportedArchError, NotImplementedError)
    assert issubclass(cudadent.UnsupportedDtypeError, TypeError)
    e = cudadent.errors.error_for_status(11, "softmax_scale = -1 must be finite and > 0", "f")
    assert isinstance(e, cudadent.BadScaleError) and e.status == Status.BAD_SCALE
    assert "CUDADENT_STATUS_BAD_SCALE" in str(e) and "softmax_scale = -1" in str(e)


def test_bad_window_argument():
    q = torch.randn(1, 8, 2, 64, dtype=torch.bfloat16)
    with pytest.raises(cudadent.BadWindowError, match=r"window = \(-2, 0\)"):
        cudadent.attention(q, q, q, window=(-2, 0))


@requires_cuda
@pytest.mark.parametrize("kwargs,exc,status,pattern", [
    (dict(softmax_scale=-1.0), cudadent.BadScaleError, Status.BAD_SCALE, "softmax_scale"),
    (dict(softmax_scale=float("nan")), cudadent.BadScaleError, Status.BAD_SCALE, "softmax_scale"),
], ids=["negative-scale", "nan-scale"])
def test_library_errors_carry_status_and_message(kwargs, exc, status, pattern):
    q = randn((1, 16, 2, 64), torch.bfloat16, 1)
    with pytest.raises(exc, match=pattern) as info:
        cudadent.attention(q, q, q, **kwargs)
    assert info.value.status == status
    assert info.value.message  # the library's detailed message, not only the status name


@requires_cuda
def test_unsupported_head_dim_from_library():
    q = randn((1, 16, 2, 40), torch.bfloat16, 1)
    try:
        cudadent.attention(q, q, q)
    except cudadent.UnsupportedHeadDimError as e:
        assert e.status == Status.UNSUPPORTED_HEAD_DIM and "head_dim" in e.message
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    else:
        pytest.skip("head_dim 40 is supported by this build")


@requires_cuda
def test_tensors_on_different_devices():
    q = randn((1, 16, 2, 64), torch.bfloat16, 1)
    with pytest.raises(cudadent.DeviceMismatchError, match=r"k is on device 'cpu'; expected a CUDA tensor"):
        cudadent.attention(q, q.cpu(), q)
