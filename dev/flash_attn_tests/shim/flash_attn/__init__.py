"""Shim of flash-attn 2's `flash_attn` package for running flash-attn's own tests against cudadent
(dev/flash_attn_tests). The attention functions come from flash_attn_interface.py beside this
file (mapped onto cudadent.flash_attn_func; what cudadent lacks raises ShimRefusal). Pure-Python
helpers the tests import (bert_padding, layers.rotary, ops.triton.rotary) are flash-attn's own,
loaded from the pinned copy that prepare.sh put in build-fa/src ($FA_TESTS_SRC): that folder's
flash_attn/ is appended to this package's __path__, after this shim's own folder."""
import os

_src = os.environ.get("FA_TESTS_SRC")
if _src:
    __path__.append(os.path.join(_src, "flash_attn"))  # noqa: F821

__version__ = "2.8.4+cudadent-shim"

from flash_attn.flash_attn_interface import (  # noqa: E402
    flash_attn_func,
    flash_attn_kvpacked_func,
    flash_attn_qkvpacked_func,
    flash_attn_varlen_func,
    flash_attn_varlen_kvpacked_func,
    flash_attn_varlen_qkvpacked_func,
    flash_attn_with_kvcache,
)
