"""Hugging Face transformers integration: attn_implementation="cudadent".

Registered lazily and defensively: if transformers is already imported when cudadent is, at once;
otherwise an import hook registers it right after transformers.modeling_utils finishes loading.
Nothing here imports transformers by itself, and any failure only disables the integration (with
a warning). cudadent.register_transformers() registers explicitly; CUDADENT_NO_TRANSFORMERS=1
disables the automatic registration.

The attention function follows transformers' flash-attention integration: q/k/v arrive as
(batch, heads, seq, head_dim) and are transposed (a view, no copy); is_causal comes from the call
or else module.is_causal; sliding_window=W becomes window (W-1, W-1) like flash-attn's, with the
right bound folded into causal; softcap (Gemma 2's attn_logit_softcapping, which its attention
passes to the interface as the `softcap` keyword, None when the config has none) goes to the
kernels' logit soft-capping; V's head dim is the value tensor's own (DeepSeek's 192/128 needs no
padding). The mask function registered with it is transformers' own flash_attention_mask, which
passes None when there is no padding; a real padding mask (or a static cache's slicing mask)
raises NotImplementedError, as do dropout during training and attention sinks.
"""
import importlib.abc
import os
import sys
import warnings

import torch

NAME = "cudadent"
_registered = False


def _target_dtype(query, module):
    # As transformers' flash integration: fp32 queries (e.g. after an fp32 norm) go to the
    # autocast dtype, else to the dtype of the module's first Linear weight.
    if query.dtype != torch.float32:
        return None
    if torch.is_autocast_enabled(query.device.type):
        return torch.get_autocast_dtype(query.device.type)
    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear) and layer.weight.dtype in (torch.float16,
                                                                         torch.bfloat16):
            return layer.weight.dtype
    return None


def cudadent_attention_forward(module, query, key, value, attention_mask, dropout=0.0,
                               scaling=None, sliding_window=None, softcap=None, is_causal=None,
                               **kwargs):
    """transformers AttentionInterface function; returns (attn_output [B, S, H, Dv], None)."""
    from .functional import attention

    if attention_mask is not None:
        raise NotImplementedError(
            "cudadent attention: attention_mask (padding, or a static cache's mask) is not "
            "supported: ragged batches are in the C API (cu_seqlens, params layout v2) but no "
            "kernel implements them yet; use unpadded batches")
    if kwargs.get("cu_seq_lens_q") is not None or kwargs.get("cu_seq_lens_k") is not None:
        raise NotImplementedError(
            "cudadent attention: packed sequences (cu_seq_lens_q / cu_seq_lens_k) are not "
            "supported: ragged batches are in the C API (params layout v2) but no kernel "
            "implements them yet")
    if dropout and module.training:
        raise NotImplementedError(f"cudadent attention: dropout={dropout} is not supported")
    if kwargs.get("s_aux") is not None:
        raise NotImplementedError("cudadent attention: attention sinks (s_aux) are not supported")
    if is_causal is None:
        is_causal = getattr(module, "is_causal", True)
    q, k, v = query.transpose(1, 2), key.transpose(1, 2), value.transpose(1, 2)
    dtype = _target_dtype(q, module)
    if dtype is not None:
        q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    window = (-1, -1)
    if sliding_window is not None and k.shape[1] > sliding_window:
        window = (sliding_window - 1, sliding_window - 1)
    out = attention(q, k, v, causal=bool(is_causal), softmax_scale=scaling, window=window,
                    softcap=float(softcap) if softcap else 0.0)
    return out, None


def register():
    """Register attn_implementation="cudadent" with transformers. Returns True on success."""
    global _registered
    if _registered:
        return True
    from transformers.modeling_utils import AttentionInterface
    AttentionInterface.register(NAME, cudadent_attention_forward)
    try:
        from transformers.masking_utils import AttentionMaskInterface, flash_attention_mask
        AttentionMaskInterface.register(NAME, flash_attention_mask)
    except ImportError:
        pass  # older transformers: masks are not dispatched by implementation name
    _registered = True
    return True


def _register_quietly():
    try:
        register()
    except Exception as e:  # never break the user's transformers import
        warnings.warn(f"cudadent: could not register with transformers: {e!r}")


class _AfterModelingUtils(importlib.abc.MetaPathFinder):
    """Wraps the loader of transformers.modeling_utils to register once it has run."""

    TARGET = "transformers.modeling_utils"

    def find_spec(self, fullname, path, target=None):
        if fullname != self.TARGET:
            return None
        spec = None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        original = loader.exec_module
        finder = self

        def exec_module(module):
            original(module)
            try:
                sys.meta_path.remove(finder)
            except ValueError:
                pass
            _register_quietly()

        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            return spec
        return spec


def install_hook():
    """Register now if transformers.modeling_utils is loaded, else when it loads."""
    if os.environ.get("CUDADENT_NO_TRANSFORMERS", "0") not in ("", "0"):
        return
    if "transformers.modeling_utils" in sys.modules:
        _register_quietly()
        return
    try:
        import importlib.util
        if importlib.util.find_spec("transformers") is None:
            return
    except (ImportError, ValueError):
        return
    if not any(isinstance(f, _AfterModelingUtils) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterModelingUtils())
