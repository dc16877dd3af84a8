"""Errors: Python-side checks name the tensor and what was expected (these run without a GPU,
through fake tensors or CPU tensors); C statuses become exception classes carrying .status and
the library's own message (GPU tests)."""
import pytest

from conftest import portable_has_issue27
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
     r"v has shape \(1, 9, 2, 64\); expected k's \(batch, seqlen, heads\) \(1, 8, 2\)"),
    # head dims past 256: refused in Python, naming the supported set (a head_dim_v other than
    # head_dim is no error: test_head_dim_v_refused_only_without_a_kernel)
    (lambda: (_t(1, 8, 2, 264), _t(1, 8, 2, 264), _t(1, 8, 2, 264)),
     cudadent.UnsupportedHeadDimError,
     r"head_dim \(q and k's last dimension\) = 264 is above 256, the largest head dim cudadent "
     r"runs \(supported: "),
    (lambda: (_t(1, 8, 2, 192), _t(1, 8, 2, 192), _t(1, 8, 2, 320)),
     cudadent.UnsupportedHeadDimError, r"head_dim_v \(v's last dimension\) = 320 is above 256"),
    (lambda: (_t(1, 8, 2, 300), _t(1, 8, 2, 300), _t(1, 8, 2, 64)),
     cudadent.UnsupportedHeadDimError, r"head_dim .* = 300 is above 256"),  # not padded first
    (lambda: (_t(1, 8, 6, 64), _t(1, 8, 4, 64), _t(1, 8, 4, 64)), cudadent.BadHeadsError,
     r"q has 6 heads, which is not a multiple of the 4 heads of k and v"),
    (lambda: (_t(8, 2, 64), _t(8, 2, 64), _t(8, 2, 64)), cudadent.ShapeError,
     r"q has shape \(8, 2, 64\); expected a 4-d tensor \(batch, seqlen, heads, head_dim\)"),
], ids=["dtype", "dtype-mismatch", "batch", "head_dim", "v-shape", "head_dim-264", "head_dim_v-320",
        "head_dim-300", "heads", "ndim"])
def test_python_checks_name_the_tensor(make, exc, pattern):
    with FakeTensorMode():  # the same checks run in the real and the fake implementation
        q, k, v = make()
        with pytest.raises(exc, match=pattern) as info:
            cudadent.attention(q, k, v)
    assert isinstance(info.value, cudadent.CudadentError)


def test_head_dim_v_refused_only_without_a_kernel():
    """head_dim_v != head_dim: the package takes it (out has v's head dim); a library without a
    kernel for it refuses the call with UNSUPPORTED_HEAD_DIM, which Python raises as a
    HeadDimVNotImplementedError (a NotImplementedError and an UnsupportedHeadDimError) naming
    head_dim_v; issue 27's kernels run it (test_abi.py: test_head_dim_v_through_ctypes)."""
    assert issubclass(cudadent.HeadDimVNotImplementedError, NotImplementedError)
    assert issubclass(cudadent.HeadDimVNotImplementedError, cudadent.UnsupportedHeadDimError)
    with FakeTensorMode():
        q, v = _t(1, 8, 2, 128), _t(1, 8, 2, 64)
        out = cudadent.flash_attn_func(q, q, v)
        assert out.shape == (1, 8, 2, 64)
        out, lse = cudadent.attention(_t(1, 8, 4, 192), _t(1, 8, 2, 192), _t(1, 8, 2, 128),
                                      return_lse=True)
        assert out.shape == (1, 8, 4, 128) and lse.shape == (1, 4, 8)
    # the library's refusal (its message as the C API words it) becomes that class
    e = cudadent.errors.error_for_status(
        Status.UNSUPPORTED_HEAD_DIM, "head_dim_v = 64 != head_dim = 128 is not implemented yet: "
        "no forward kernel takes a V head dim other than Q and K's (set head_dim_v to 0)", "f")
    assert isinstance(e, cudadent.HeadDimVNotImplementedError) and "head_dim_v" in str(e)
    # other head-dim refusals stay UnsupportedHeadDimError
    e = cudadent.errors.error_for_status(Status.UNSUPPORTED_HEAD_DIM, "head_dim = 264 has no "
                                         "forward kernel (supported: 64, 128)", "f")
    assert type(e) is cudadent.UnsupportedHeadDimError


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
    """A multiple of 8 up to 256 that this device's kernels do not list (the query's answer;
    none with issue 27's kernels) is refused by the library, naming the supported set; past 256
    the package refuses it, naming the same set."""
    supported = cudadent.supported_head_dims("fwd", "bf16")
    unlisted = [d for d in range(8, 257, 8) if d not in supported]
    if unlisted:
        q = randn((1, 16, 2, unlisted[0]), torch.bfloat16, 1)
        with pytest.raises(cudadent.UnsupportedHeadDimError) as info:
            cudadent.attention(q, q, q)
        assert info.value.status == Status.UNSUPPORTED_HEAD_DIM
        assert f"head_dim = {unlisted[0]}" in info.value.message
    else:
        assert portable_has_issue27("fwd")
    q = randn((1, 16, 2, 264), torch.bfloat16, 1)
    listed = ", ".join(map(str, supported))
    with pytest.raises(cudadent.UnsupportedHeadDimError, match=f"supported: {listed} "):
        cudadent.attention(q, q, q)


@requires_cuda
def test_tensors_on_different_devices():
    q = randn((1, 16, 2, 64), torch.bfloat16, 1)
    with pytest.raises(cudadent.DeviceMismatchError, match=r"k is on device 'cpu'; expected a CUDA tensor"):
        cudadent.attention(q, q.cpu(), q)
