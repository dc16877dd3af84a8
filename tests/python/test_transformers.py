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


@requires_cuda
def test_padding_mask_runs_as_a_ragged_batch():
    """A left- and right-padded batch (flash_attention_mask's 2-D mask: unpad, varlen, pad as
    transformers' flash integration): the logits of the real tokens equal each row run alone
    without padding (bf16, within 2x SDPA's error against the fp32 eager model + 1e-2), the padded
    positions' attention output is zero (no NaN), and the backward runs."""
    ours = _tiny_llama("cudadent", torch.bfloat16)
    ref = _tiny_llama("eager", torch.float32)
    sdpa = _tiny_llama("sdpa", torch.bfloat16)
    ids = torch.randint(0, 512, (3, 48), device="cuda", generator=torch.Generator("cuda")
                        .manual_seed(1))
    mask = torch.ones_like(ids)
    mask[0, :7] = 0    # left padding
    mask[1, 40:] = 0   # right padding
    pos = (mask.cumsum(-1) - 1).clamp(min=0)  # each row's real tokens at 0, 1, ... (as generate)
    try:
        logits = ours(ids, attention_mask=mask, position_ids=pos).logits
        logits.float()[mask.bool()].logsumexp(-1).mean().backward()
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    assert torch.isfinite(logits[mask.bool()]).all()
    for b in range(3):
        keep = mask[b].bool()
        row = ids[b][keep][None]
        with torch.no_grad():
            want = ref(row).logits[0]
            base = sdpa(row).logits[0]
        err, err_sdpa = max_err(logits[b][keep], want), max_err(base, want)
        assert err <= 2 * err_sdpa + 1e-2, f"row {b}: cudadent {err:.3e} vs sdpa {err_sdpa:.3e}"


@requires_cuda
def test_packed_position_ids_run_as_a_ragged_batch():
    """One row of three packed documents with position_ids restarting at 0
    (DataCollatorWithFlattening): each document's logits equal the document run alone."""
    ours = _tiny_llama("cudadent", torch.bfloat16)
    ids = torch.randint(0, 512, (1, 90), device="cuda", generator=torch.Generator("cuda")
                        .manual_seed(2))
    lens = (30, 17, 43)
    pos = torch.cat([torch.arange(n, device="cuda") for n in lens])[None]
    try:
        with torch.no_grad():
            packed = ours(ids, position_ids=pos).logits[0]
            start = 0
            for n in lens:
                alone = ours(ids[:, start:start + n]).logits[0]
                torch.testing.assert_close(packed[start:start + n], alone, atol=3e-2, rtol=3e-2)
                start += n
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)


def test_static_cache_mask_shape_is_refused():
    """A mask of another shape than (batch, seq_k) is refused before any device work."""
    from cudadent._transformers import cudadent_attention_forward
    q = torch.zeros(2, 4, 10, 64, dtype=torch.bfloat16)  # (batch, heads, seq, head_dim)
    mask = torch.ones(2, 1, 10, 16, dtype=torch.bool)
    with pytest.raises(NotImplementedError, match="attention_mask of shape"):
        cudadent_attention_forward(_Attn(), q, q, q, mask)


class _Attn(torch.nn.Module):
    is_causal = True


def test_softcap_and_head_dim_v_reach_the_kernels(monkeypatch):
    """The attention interface passes the model's softcap (Gemma 2's attn_logit_softcapping
    arrives as the `softcap` keyword, None without one) and v's own head dim (DeepSeek's 192/128)
    on; no GPU needed."""
    import cudadent.functional
    from cudadent._transformers import cudadent_attention_forward
    seen = []

    def fake_attention(q, k, v, **kwargs):
        seen.append(dict(kwargs, v=tuple(v.shape), q=tuple(q.shape)))
        return q.new_zeros(q.shape[:3] + (v.shape[-1],))
    monkeypatch.setattr(cudadent.functional, "attention", fake_attention)
    q = torch.zeros(2, 4, 10, 192, dtype=torch.bfloat16)  # (batch, heads, seq, head_dim)
    k = torch.zeros(2, 2, 10, 192, dtype=torch.bfloat16)
    v = torch.zeros(2, 2, 10, 128, dtype=torch.bfloat16)
    out, _ = cudadent_attention_forward(_Attn(), q, k, v, None, scaling=0.07, softcap=50.0)
    assert out.shape == (2, 10, 4, 128)
    assert seen[0]["softcap"] == 50.0 and seen[0]["v"] == (2, 10, 2, 128)
    assert seen[0]["softmax_scale"] == 0.07 and seen[0]["causal"] is True
    cudadent_attention_forward(_Attn(), q, k, v, None, softcap=None)
    assert seen[1]["softcap"] == 0.0


def test_gemma2_passes_softcap_as_a_keyword():
    """transformers' Gemma 2 attention hands attn_logit_softcapping to the attention interface
    as `softcap=` (what cudadent_attention_forward reads)."""
    import inspect
    try:
        from transformers.models.gemma2 import modeling_gemma2
    except ImportError:
        pytest.skip("this transformers has no Gemma 2")
    assert "softcap=self.attn_logit_softcapping" in inspect.getsource(modeling_gemma2)


def _tiny_gemma2(attn_implementation, dtype, device="cuda"):
    from transformers import Gemma2Config, Gemma2ForCausalLM
    config = Gemma2Config(vocab_size=512, hidden_size=256, intermediate_size=512,
                          num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                          head_dim=64, max_position_embeddings=512, attn_logit_softcapping=5.0,
                          final_logit_softcapping=None, query_pre_attn_scalar=64)
    torch.manual_seed(0)
    model = Gemma2ForCausalLM(config)
    sd = model.state_dict()
    for name in list(sd):  # larger q/k weights: scores of several units, where the cap binds
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            sd[name] = sd[name] * 6
    m = Gemma2ForCausalLM._from_config(config, attn_implementation=attn_implementation)
    m.load_state_dict(sd)
    return m.to(device=device, dtype=dtype)


@requires_cuda
def test_gemma2_softcap_logits_and_backward_match():
    """Gemma 2 (softcap 5) in bf16 through cudadent against the fp32 eager model: within 2x the
    error of the bf16 eager model (+1e-2), and the backward runs. (transformers' SDPA path
    ignores the softcap, so eager is the comparison.)"""
    ids = torch.randint(0, 512, (2, 200), device="cuda", generator=torch.Generator("cuda")
                        .manual_seed(0))
    ref = _tiny_gemma2("eager", torch.float32)
    with torch.no_grad():
        ref_logits = ref(ids).logits
    eager16 = _tiny_gemma2("eager", torch.bfloat16)
    with torch.no_grad():
        eager16_logits = eager16(ids).logits
    ours = _tiny_gemma2("cudadent", torch.bfloat16)
    try:
        logits = ours(ids).logits
        logits.float().logsumexp(-1).mean().backward()
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)
    err, err_eager = max_err(logits, ref_logits), max_err(eager16_logits, ref_logits)
    assert err <= 2 * err_eager + 1e-2, f"cudadent {err:.3e} vs bf16 eager {err_eager:.3e}"
    assert all(p.grad is not None for p in ours.parameters() if p.requires_grad)
