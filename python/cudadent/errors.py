"""Exceptions: one class per cudadent_status_t, and the checks made in Python before a call.

Every exception derives from CudadentError, which carries ``status`` (a ``Status``, or None for a
failure found before any C call, such as a tensor on the wrong device) and ``message`` (for C
failures: the library's own detailed message from cudadent_get_last_error_message(), naming the
field and value at fault). Classes also derive from the matching builtin (ValueError, TypeError,
NotImplementedError, RuntimeError) so generic handlers keep working.
"""
from ._abi import Status

__all__ = [
    "CudadentError", "LibraryNotFoundError", "AbiMismatchError", "NullPointerError",
    "BadStructSizeError", "BadSizeError", "SizeOverflowError", "BadHeadsError",
    "UnsupportedHeadDimError", "UnsupportedDtypeError", "MisalignedError", "NotContiguousError",
    "BadWindowError", "BadScaleError", "WorkspaceTooSmallError", "NoDeviceError",
    "UnsupportedArchError", "UnsupportedFeatureError", "CudaError", "InternalError",
    "DeviceMismatchError", "ShapeError", "HeadDimVNotImplementedError", "error_for_status",
]


class CudadentError(RuntimeError):
    """Base of every cudadent error. ``status``: Status or None; ``message``: the detail."""

    status = None

    def __init__(self, message="", status=None, function=None):
        if status is not None:
            self.status = Status(status)
        self.message = message
        self.function = function
        parts = []
        if function:
            parts.append(f"{function}")
        if self.status is not None:
            parts.append(f"CUDADENT_STATUS_{self.status.name}")
        parts.append(message or "(no detail)")
        super().__init__(": ".join(parts))


class LibraryNotFoundError(CudadentError, OSError):
    """libcudadent could not be found or loaded."""


class AbiMismatchError(CudadentError, ImportError):
    """The loaded library was built from another version of include/cudadent.h."""


class NullPointerError(CudadentError, ValueError):
    status = Status.NULL_POINTER


class BadStructSizeError(CudadentError):
    status = Status.BAD_STRUCT_SIZE


class BadSizeError(CudadentError, ValueError):
    status = Status.BAD_SIZE


class SizeOverflowError(CudadentError, ValueError):
    status = Status.SIZE_OVERFLOW


class BadHeadsError(CudadentError, ValueError):
    status = Status.BAD_HEADS


class UnsupportedHeadDimError(CudadentError, ValueError):
    status = Status.UNSUPPORTED_HEAD_DIM


class HeadDimVNotImplementedError(UnsupportedHeadDimError, NotImplementedError):
    """v's head dim differs from q and k's (head_dim_v != head_dim) and the loaded library has
    no kernel for that (its UNSUPPORTED_HEAD_DIM saying head_dim_v is not implemented yet: a
    build from before issue 27, or a device without such a kernel). Libraries with the kernels
    run such calls."""


class UnsupportedDtypeError(CudadentError, TypeError):
    status = Status.UNSUPPORTED_DTYPE


class MisalignedError(CudadentError, ValueError):
    status = Status.MISALIGNED


class NotContiguousError(CudadentError, ValueError):
    status = Status.NOT_CONTIGUOUS


class BadWindowError(CudadentError, ValueError):
    status = Status.BAD_WINDOW


class BadScaleError(CudadentError, ValueError):
    status = Status.BAD_SCALE


class WorkspaceTooSmallError(CudadentError):
    status = Status.WORKSPACE_TOO_SMALL


class NoDeviceError(CudadentError):
    status = Status.NO_DEVICE


class UnsupportedArchError(CudadentError, NotImplementedError):
    status = Status.UNSUPPORTED_ARCH


class UnsupportedFeatureError(CudadentError, NotImplementedError):
    status = Status.UNSUPPORTED_FEATURE


class CudaError(CudadentError):
    status = Status.CUDA_ERROR


class InternalError(CudadentError):
    status = Status.INTERNAL_ERROR


class DeviceMismatchError(CudadentError, ValueError):
    """A tensor is not on a CUDA device, or not on the same device as q (found in Python)."""


class ShapeError(CudadentError, ValueError):
    """Tensor shapes do not agree with each other (found in Python); status BAD_SIZE."""
    status = Status.BAD_SIZE


_BY_STATUS = {cls.status: cls for cls in (
    NullPointerError, BadStructSizeError, BadSizeError, SizeOverflowError, BadHeadsError,
    UnsupportedHeadDimError, UnsupportedDtypeError, MisalignedError, NotContiguousError,
    BadWindowError, BadScaleError, WorkspaceTooSmallError, NoDeviceError, UnsupportedArchError,
    UnsupportedFeatureError, CudaError, InternalError)}


def error_for_status(status, message, function=None):
    """The exception (not raised) for a non-success cudadent_status_t. UNSUPPORTED_HEAD_DIM
    refusing head_dim_v != head_dim as not implemented is a HeadDimVNotImplementedError (also
    an UnsupportedHeadDimError and a NotImplementedError)."""
    try:
        status = Status(status)
    except ValueError:
        return CudadentError(f"unknown status {int(status)}: {message}", None, function)
    cls = _BY_STATUS.get(status, CudadentError)
    if cls is UnsupportedHeadDimError and "head_dim_v" in message and \
            "not implemented" in message:
        cls = HeadDimVNotImplementedError
    return cls(message, status, function)
