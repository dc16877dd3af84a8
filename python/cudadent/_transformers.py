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
passes None when there is no padding and else the 2-D (batch, seq_k) padding mask: then, as
transformers' flash-attention integration does, the tokens are unpadded (the mask's nonzeros),
run as a ragged batch (cudadent.varlen: causal masks bottom-right aligned per sequence, so left
padding with a cache works) and padded back with zeros; packed batches arrive either as
cu_seq_lens_q / cu_seq_lens_k with max_length_q / max_length_k (DataCollatorWithFlattening with
return_flash_attn_kwargs) or as position_ids restarting at 0 within one row (batch 1), and run as
ragged batches too. Deriving the arrays from a mask or position_ids reads the longest length on
the host (one synchronization, as transformers' flash path). A mask of another shape (a static
cache's), dropout during training and attention sinks raise NotImplementedError.
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


def _cu_seqlens(lengths):
    """int32 prefix sums (batch + 1,) of lengths (a 1-d tensor)."""
    return torch.nn.functional.pad(lengths.cumsum(0, dtype=torch.int32), (1, 0))


def _unpad(mask):
    """(indices of the kept tokens in the flattened (batch, seq), cu_seqlens, max length) of a
    2-D padding mask (nonzero: a token)."""
    keep = mask.bool()
    lengths = keep.sum(-1, dtype=torch.int32)
    indices = torch.nonzero(keep.flatten(), as_tuple=False).flatten()
    return indices, _cu_seqlens(lengths), int(lengths.max().item()) if lengths.numel() else 0


def _packed_from_position_ids(position_ids, seqlen):
    """(cu_seqlens, max length) of a batch-1 row of packed sequences whose position_ids restart
    at 0, or None when the row is one sequence (0, 1, 2, ...)."""
    if position_ids is None or position_ids.dim() != 2 or position_ids.shape[0] != 1 or \
            position_ids.shape[1] != seqlen:
        return None
    pos = position_ids[0]
    starts = torch.nonzero(pos == 0, as_tuple=False).flatten()
    if starts.numel() <= 1:
        return None
    bounds = torch.cat([starts, starts.new_tensor([seqlen])]).to(torch.int32)
    if int(bounds[0].item()) != 0:
        return None
    return bounds, int((bounds[1:] - bounds[:-1]).max().item())


def _varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal, scaling, window, softcap):
    from .functional import attention
    return attention(q, k, v, causal=causal, softmax_scale=scaling, window=window,
                     softcap=softcap, cu_seqlens_q=cu_q, cu_seqlens_k=cu_k,
                     max_seqlen_q=int(max_q), max_seqlen_k=int(max_k))


def _padded_attention(q, k, v, mask, causal, scaling, window, softcap):
    """transformers' flash path with a padding mask: unpad q (its rows of the mask: the last Sq
    columns when Sq < Sk, a cache), k, v; a ragged batch; out padded back with zeros."""
    B, Sq, H = q.shape[:3]
    Sk = k.shape[1]
    if mask.dim() != 2 or tuple(mask.shape) != (B, Sk):
        raise NotImplementedError(
            f"cudadent attention: an attention_mask of shape {tuple(mask.shape)} is not "
            f"supported: a 2-D padding mask (batch, seq_k) = {(B, Sk)} is (flash_attention_mask)")
    idx_k, cu_k, max_k = _unpad(mask)
    idx_q, cu_q, max_q = (idx_k, cu_k, max_k) if Sq == Sk else _unpad(mask[:, -Sq:])
    flat = lambda t: t.reshape((t.shape[0] * t.shape[1],) + tuple(t.shape[2:]))  # noqa: E731
    out = _varlen(flat(q)[idx_q], flat(k)[idx_k], flat(v)[idx_k], cu_q, cu_k, max_q, max_k,
                  causal, scaling, window, softcap)
    full = out.new_zeros((B * Sq,) + tuple(out.shape[1:]))
    full[idx_q] = out
    return full.view(B, Sq, H, out.shape[-1])


def cudadent_attention_forward(module, query, key, value, attention_mask, dropout=0.0,
                               scaling=None, sliding_window=None, softcap=None, is_causal=None,
                               **kwargs):
    """transformers AttentionInterface function; returns (attn_output [B, S, H, Dv], None)."""
    from .functional import attention

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
    causal, softcap = bool(is_causal), float(softcap) if softcap else 0.0
    cu_q, cu_k = kwargs.get("cu_seq_lens_q"), kwargs.get("cu_seq_lens_k")
    if cu_q is not None or cu_k is not None:  # packed sequences (DataCollatorWithFlattening)
        max_q, max_k = kwargs.get("max_length_q"), kwargs.get("max_length_k")
        if cu_q is None or cu_k is None or max_q is None or max_k is None or q.shape[0] != 1:
            raise NotImplementedError(
                "cudadent attention: packed sequences need cu_seq_lens_q, cu_seq_lens_k, "
                "max_length_q and max_length_k together, in a batch of one row")
        if isinstance(max_q, torch.Tensor):
            max_q = int(max_q.item())
        if isinstance(max_k, torch.Tensor):
            max_k = int(max_k.item())
        out = _varlen(q[0], k[0], v[0], cu_q.to(torch.int32), cu_k.to(torch.int32), max_q,
                      max_k, causal, scaling, window, softcap)
        return out[None], None
    if attention_mask is not None:
        return _padded_attention(q, k, v, attention_mask, causal, scaling, window, softcap), None
    packed = _packed_from_position_ids(kwargs.get("position_ids"), q.shape[1])
    if packed is not None and q.shape[1] == k.shape[1]:
        cu, max_len = packed
        out = _varlen(q[0], k[0], v[0], cu, cu, max_len, max_len, causal, scaling, window,
                      softcap)
        return out[None], None
    out = attention(q, k, v, causal=causal, softmax_scale=scaling, window=window,
                    softcap=softcap)
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
