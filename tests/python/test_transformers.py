"""Hugging Face transformers: attn_implementation="cudadent" (skips without transformers)."""
import pytest

from helpers import max_err, requires_cuda, skip_if_kernel_missing, torch

transformers = pytest.importorskip("transformers", reason="transformers is not installed")

import cudadent  # noqa: E402


def test_registered():
    from transformers.modeling_utils import AttentionInterface
    assert "cudadent" in AttentionInterface._global_mapping
    try:
        from transformers.masking_utils import AttentionMaskInterface
    except ImportError:
        return
    assert "cudadent" in AttentionMaskInterface._global_mapping


def _tiny_llama(attn_implementation, dtype, device="cuda"):
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)  # weights from the seed, in fp32
    sd = model.state_dict()
    m = LlamaForCausalLM._from_config(config, attn_implementation=attn_implementation)
    m.load_state_dict(sd)
    return m.to(device=device, dtype=dtype)


@requires_cuda
def test_llama_logits_and_backward_match():
    """bf16 logits of cudadent vs SDPA, both against an fp32 eager model: cudadent's error is
    within 2x SDPA's (+1e-2), and the backward runs."""
    ids = torch.randint(0, 512, (2, 200), device="cuda", generator=torch.Generator("cuda")
                        .manual_seed(0))
    ref = _tiny_llama("eager", torch.float32)
    with torch.no_grad():
        ref_logits = ref(ids).logits
    sdpa = _tiny_llama("sdpa", torch.bfloat16)
    with torch.no_grad():
        sdpa_logits = sdpa(ids).logits
    ours = _tiny_llama("cudadent", torch.bfloat16)
    assert ours.config._attn_implementation == "cudadent"
    try:
        logits = ours(ids).logits
        logits.float().logsumexp(-1).mean().backward()
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    err, err_sdpa = max_err(logits, ref_logits), max_err(sdpa_logits, ref_logits)
    assert err <= 2 * err_sdpa + 1e-2, f"cudadent {err:.3e} vs sdpa {err_sdpa:.3e}"
    assert all(p.grad is not None for p in ours.parameters() if p.requires_grad)


def test_padding_mask_is_refused():
    """Refused before any device work (runs on the CPU too)."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    ours = _tiny_llama("cudadent", torch.bfloat16, device)
    ids = torch.randint(0, 512, (2, 32), device=device)
    mask = torch.ones_like(ids)
    mask[0, :5] = 0  # left padding
    with pytest.raises(NotImplementedError, match="attention_mask"):
        ours(ids, attention_mask=mask)
