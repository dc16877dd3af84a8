"""cudadent: attention kernels for LLM pretraining, as PyTorch ops.

    import cudadent
    out = cudadent.attention(q, k, v, causal=True)          # (batch, seqlen, heads, head_dim)
    out = cudadent.flash_attn_func(q, k, v, causal=True)    # flash-attn 2 drop-in
    out = cudadent.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max_q, max_k, causal=True)

The C library (libcudadent) is loaded through ctypes on first use: the copy installed beside this
package by `pip install .`, or the file named by $CUDADENT_LIBRARY (see _library.py for the whole
search order). The torch ops are torch.ops.cudadent.attn_fwd / attn_bwd (and attn_varlen_fwd /
attn_varlen_bwd for ragged batches, cudadent/varlen.py), with autograd, fake
tensors (torch.compile) and CUDA graph capture. With Hugging Face transformers installed,
attn_implementation="cudadent" is registered. Without torch, the package still imports: the
ctypes layer (cudadent._abi, cudadent._library) and the exceptions work, attention() does not.
"""
from ._abi import Status
from .errors import *  # noqa: F401,F403
from .errors import __all__ as _errors_all
from ._library import library_path, library_version, supported_head_dims

__version__ = "0.1.0"

try:
    import torch as _torch  # noqa: F401
except ImportError:  # pragma: no cover - exercised only without torch
    _torch = None

if _torch is not None:
    from . import ops  # registers torch.ops.cudadent.attn_fwd / attn_bwd
    from .functional import attention, flash_attn_func
    from . import varlen  # registers torch.ops.cudadent.attn_varlen_fwd / attn_varlen_bwd
    from .varlen import flash_attn_varlen_func
    from . import _transformers

    def register_transformers():
        """Register attn_implementation="cudadent" with transformers (done automatically)."""
        return _transformers.register()

    _transformers.install_hook()
else:
    def _needs_torch(*args, **kwargs):
        raise ImportError("cudadent.attention, flash_attn_func and flash_attn_varlen_func need "
                          "PyTorch (pip install torch)")

    attention = flash_attn_func = flash_attn_varlen_func = register_transformers = _needs_torch

__all__ = ["attention", "flash_attn_func", "flash_attn_varlen_func", "Status", "library_path",
           "library_version", "supported_head_dims",
           "register_transformers", "__version__"] + list(_errors_all)
