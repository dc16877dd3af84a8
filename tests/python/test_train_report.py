"""The training bench's analysis and report (cudadent.train_report): the kernel-name classifier,
the attention share, the loss criterion and the report writer. Needs neither torch nor a GPU."""
import json
import math

import pytest

from cudadent import train_report
from cudadent.train_report import attention_kernel_family, kernel_summary, loss_agreement

# Kernel names as torch.profiler reports them (demangled), by family.
NAMES = {
    "cudadent": [
        "void sm90_fwd_kernel<sm90_fwd_cfg<128, 128, true, true> >(CUtensorMap, CUtensorMap, "
        "CUtensorMap, CUtensorMap, sm90_fwd_args, sm90_tile_tail)",
        "void cd_sm80_fwd_kernel<128, 64, 4, true>(cd_fwd_args_t)",
        "void sm80_bwd_pre<128>(sm80_bwd_args_t)",
        "void sm80_bwd_dq<64>(sm80_bwd_args_t)",
        "void sm80_bwd_main<128>(sm80_bwd_args_t)",
        "void sm90_bwd_kernel<128>(sm90_bwd_args)",
        "fill_zero_kernel(unsigned short*, long, long, long, int, int, int, long)",
    ],
    "cudnn": [
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_"
        "kernel0_0",
        "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x1x1_"
        "cga1x1x1_kernel0_0",
    ],
    "flash": [
        "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, "
        "false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >"
        ", false, true, false, false, false, true, false, false>(pytorch_flash::Flash_fwd_params)",
        "void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits"
        "<128, 64, 128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t>, false, true, false, "
        "false, false, true, true, false>(pytorch_flash::Flash_bwd_params)",
        "void pytorch_flash::flash_bwd_convert_dq_kernel<Flash_bwd_kernel_traits<128>>("
        "pytorch_flash::Flash_bwd_params, int)",
    ],
    "efficient": [
        "fmha_cutlassF_bf16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
        "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 128, 128, true, true>::Params)",
        "fmha_cutlassB_bf16_aligned_128x64_k128_sm80(PyTorchMemEffAttention::"
        "AttentionBackwardKernel<cutlass::arch::Sm80, cutlass::bfloat16_t, true, false, true, "
        "128, 64, 128, false>::Params)",
    ],
    None: [
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
        "segment_k_off_kernel__5x_cublas",
        "nvjet_tst_192x192_64x3_2x1_v_bz_coopB_TNT",
        "cutlass3x_sm90_tensorop_s64x128x16gemm_bf16_bf16_f32_bf16_bf16_128x128x64_1x2x1_0_tnn_"
        "align8_warpspecialized_cooperative_epi_tma",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::BFloat16>"
        ", std::array<char*, 1ul> >(int, at::native::FillFunctor<c10::BFloat16>, "
        "std::array<char*, 1ul>)",
        "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
        "at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
        "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
        "(anonymous namespace)::FusedAdamMathFunctor<c10::BFloat16, 4, 1, 1>>(...)",
        "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MeanOps"
        "<float, float, float, float>, unsigned int, float, 4> >(...)",
        "Memcpy DtoD (Device -> Device)",
        "Memset (Device)",
    ],
}


@pytest.mark.parametrize("family,name", [(f, n) for f, ns in NAMES.items() for n in ns])
def test_kernel_family(family, name):
    assert attention_kernel_family(name) == family


def test_kernel_summary_share():
    kernels = [(NAMES["cudadent"][0], 300.0), (NAMES["cudadent"][4], 100.0),
               (NAMES[None][0], 1200.0), (NAMES[None][7], 400.0)]
    s = kernel_summary(kernels)
    assert s["gpu_ms"] == pytest.approx(2.0)
    assert s["attn_ms"] == pytest.approx(0.4)
    assert s["attn_share"] == pytest.approx(0.2)
    assert s["families"] == {"cudadent": pytest.approx(0.4)}
    assert s["top"][0][1] == pytest.approx(0.3)
    assert kernel_summary([])["attn_share"] is None
    two = kernel_summary(kernels + kernels, steps=2)  # two profiled steps: figures per step
    assert two["gpu_ms"] == pytest.approx(2.0) and two["attn_ms"] == pytest.approx(0.4)
    assert two["other"][NAMES[None][0][:train_report.OTHER_NAME_CHARS]] == [
        pytest.approx(1.2), 1.0]
    mixed = kernel_summary([(NAMES["cudnn"][0], 10.0), (NAMES["flash"][0], 30.0)])
    assert mixed["families"] == {"cudnn": pytest.approx(0.01), "flash": pytest.approx(0.03)}
    assert mixed["attn_share"] == pytest.approx(1.0)


def test_loss_agreement_pass_and_fail():
    ref = [5.0, 4.0, 3.0, 2.5]
    flash = [5.0, 4.01, 3.02, 2.49]          # SDPA's own spread: rms sqrt(6e-4 / 4)
    ours_ok = [5.0, 3.99, 3.03, 2.53]        # rms sqrt(1.9e-3 / 4) <= 2 x the above
    ours_bad = [5.0, 4.0, 3.05, 2.55]        # rms sqrt(5e-3 / 4) > 2 x sqrt(6e-4 / 4)
    ok = loss_agreement({"cudadent": ours_ok, "sdpa": ref, "sdpa_flash": flash})
    assert ok["passed"] is True and ok["steps"] == 4 and ok["runs"] == 1
    assert ok["rms_ours_vs_ref"] == pytest.approx(math.sqrt(1.9e-3 / 4))
    assert ok["rms_ref_vs_other"] == pytest.approx(math.sqrt(6e-4 / 4))
    assert ok["bound"] == pytest.approx(2 * math.sqrt(6e-4 / 4))
    assert ok["ours_vs_ref"] == pytest.approx(0.03) and ok["ref_vs_other"] == pytest.approx(0.02)
    assert ok["bias"] == pytest.approx((-0.01 + 0.03 + 0.03) / 4)
    bad = loss_agreement({"cudadent": ours_bad, "sdpa": ref, "sdpa_flash": flash})
    assert bad["passed"] is False and bad["ours_vs_ref"] == pytest.approx(0.05)


def test_loss_agreement_pools_seeds():
    """One spike in one run does not decide the check alone; a shift in every run does."""
    ref = [4.0] * 10
    flash = [[4.0 + (0.01 if s % 2 else -0.01) for s in range(10)] for _ in range(3)]
    spike = [4.0] * 9 + [4.04]                # max 0.04 = 4 x flash's max, rms 0.04 / sqrt(10)
    shifted = [4.025] * 10                    # max 0.025, rms 0.025 > 2 x 0.01
    ok = loss_agreement({"cudadent": spike, "sdpa": ref, "sdpa_flash": flash[0]},
                        {"cudadent": [ref, ref], "sdpa": [ref, ref], "sdpa_flash": flash[1:]})
    assert ok["runs"] == 3 and ok["steps"] == 10 and ok["passed"] is True
    assert ok["rms_ours_vs_ref"] == pytest.approx(0.04 / math.sqrt(30))
    assert ok["rms_ref_vs_other"] == pytest.approx(0.01)
    bad = loss_agreement({"cudadent": shifted, "sdpa": ref, "sdpa_flash": flash[0]},
                         {"cudadent": [shifted] * 2, "sdpa": [ref, ref], "sdpa_flash": flash[1:]})
    assert bad["passed"] is False and bad["bias"] == pytest.approx(0.025)
    # runs: the number every attention has
    two = loss_agreement({"cudadent": spike, "sdpa": ref, "sdpa_flash": flash[0]},
                         {"cudadent": [ref], "sdpa": [ref, ref], "sdpa_flash": flash[1:]})
    assert two["runs"] == 2


def test_loss_agreement_edges():
    ref = [3.0, 2.0]
    # equal to the bound passes; identical SDPA curves leave no room
    assert loss_agreement({"cudadent": [3.0, 2.2], "sdpa": ref, "sdpa_flash": [3.0, 2.1]})[
        "passed"] is True
    assert loss_agreement({"cudadent": [3.0, 2.001], "sdpa": ref, "sdpa_flash": ref})[
        "passed"] is False
    missing = loss_agreement({"sdpa": ref, "sdpa_flash": ref})
    assert missing["passed"] is None and "cudadent" in missing["note"]
    nan = loss_agreement({"cudadent": [3.0, math.nan], "sdpa": ref, "sdpa_flash": ref})
    assert nan["passed"] is False and "cudadent" in nan["note"]
    late_nan = loss_agreement({"cudadent": [3.0, 2.0], "sdpa": ref, "sdpa_flash": ref},
                              {"cudadent": [[3.0, math.inf]], "sdpa": [ref], "sdpa_flash": [ref]})
    assert late_nan["passed"] is False
    short = loss_agreement({"cudadent": [3.0], "sdpa": ref, "sdpa_flash": [3.0, 9.0]})
    assert short["steps"] == 1 and short["passed"] is True


def _fixture_result():
    cfg = dict(layers=8, hidden=2048, heads=16, kv_heads=8, head_dim=128, intermediate=5632,
               vocab=32000, seqlen=4096, batch=4, tokens=16384, params_m=508.4)
    rows = [
        dict(cfg, config="d128-s4k", attention="cudadent", step_ms=130.0,
             round_ms=[129.0, 130.0, 133.0], tokens_per_s=126030.8, vs_sdpa=0.952,
             attn_share=0.141, attn_kernels={"cudadent": 18.0}, peak_gib=23.5),
        dict(cfg, config="d128-s4k", attention="sdpa", step_ms=123.8, round_ms=[123.8],
             tokens_per_s=132343.0, vs_sdpa=1.0, attn_share=0.11, attn_kernels={"cudnn": 13.0},
             peak_gib=23.4),
        dict(cfg, config="d128-s4k", attention="sdpa_flash", profile_error="RuntimeError: x",
             step_ms=140.0, round_ms=[140.0, 141.0], tokens_per_s=117028.6, vs_sdpa=0.884,
             peak_gib=23.6),
        dict(cfg, config="gqa4-s4k", attention="cudadent",
             error="OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
             error_type="OutOfMemoryError"),
        dict(cfg, config="gqa4-s4k", attention="sdpa",
             error="NotImplementedError: cudadent attention: softcap=50.0 is not supported",
             error_type="NotImplementedError"),
    ]
    curves = {"cudadent": [8.3, 7.0, 5.5], "sdpa": [8.3, 7.01, 5.49],
              "sdpa_flash": [8.3, 7.0, 5.48]}
    loss = {"config": dict(cfg, name="loss", batch=4, seqlen=2048, vocab=4096), "steps": 3,
            "lr": 1e-3, "warmup_steps": 10, "data": "Markov chain: vocab 4096",
            "log_vocab": math.log(4096), "optimal_loss": 1.1, "curves": curves,
            "kernels": {"cudadent": {"cudadent": 1.0}, "sdpa": {"cudnn": 1.0}},
            "errors": {}, "agreement": loss_agreement(curves)}
    return {"rows": rows, "loss": loss, "method": {"seed": 0, "rounds": 3, "steps": 2}}


def test_write_report(tmp_path):
    env = {"gpu": "NVIDIA H200", "date": "2026-11-25 10:00", "torch": "2.11.0+cu130",
           "cudnn": 91900, "transformers": "5.17.0", "driver": "580.00", "commit": "abc123",
           "command": "python -m cudadent.bench --train"}
    result = _fixture_result()
    md, png, text = train_report.write_report(env, {"quick": False}, result, str(tmp_path),
                                              no_plot=True)
    assert md.endswith("nvidia-h200-train.md") and png is None  # stable name: replaces the last
    assert open(md).read() == text
    for needle in ("| driver | `580.00` |", "| transformers | `5.17.0` |", "| commit | `abc123` |",
                   "| d128-s4k | 8L h2048 16q/8kv x128 ff5632 V32000 (508M) | 4 x 4096 | cudadent "
                   "| 130.0 (129.0-133.0) | 126,031 | 0.952 | 14.1% | cudadent | 23.5 |",
                   "| gqa4-s4k |", "| OOM |", "NotImplementedError: cudadent attention: softcap",
                   "| result | **pass** |", "| 3 | 5.5000 | 5.4900 | 5.4800 |",
                   "profiler: RuntimeError: x"):
        assert needle in text, needle
    # the JSON: valid, one line per row and per curve, and it renders again
    raw = open(md[:-3] + ".json").read()
    saved = json.loads(raw)
    assert saved["kind"] == "train" and len(saved["rows"]) == 5
    lines = raw.splitlines()
    assert sum(1 for line in lines if line.startswith('{') and '"attention"' in line) == 5
    assert sum(1 for line in lines if line.startswith('"sdpa')) == 2
    env2, args2, result2 = train_report.load(md[:-3] + ".json")
    assert result2["loss"]["curves"] == result["loss"]["curves"]
    assert train_report.markdown(env2, result2) == text


def test_write_report_png(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    env = {"gpu": "Test GPU", "date": "2026-11-25 10:00"}
    md, png, _ = train_report.write_report(env, {}, _fixture_result(), str(tmp_path), quick=True)
    assert md.endswith("-train-quick.md")
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_bench_render_dispatches_train_json(tmp_path):
    from cudadent import bench
    env = {"gpu": "Test GPU", "date": "2026-11-25 10:00"}
    md, _, text = train_report.write_report(env, {"no_plot": True}, _fixture_result(),
                                            str(tmp_path / "a"), no_plot=True)
    md2, _, text2 = bench.render(md[:-3] + ".json", str(tmp_path / "b"))
    assert text2 == text and md2.startswith(str(tmp_path / "b"))


def test_kernel_summary_keeps_the_kernels_outside_attention():
    kernels = [(NAMES["cudadent"][0], 300.0), (NAMES[None][0], 1200.0), (NAMES[None][0], 200.0),
               (NAMES[None][7], 400.0)]
    other = kernel_summary(kernels)["other"]
    assert other[NAMES[None][0][:160]] == [pytest.approx(1.4), 2]
    assert other[NAMES[None][7][:160]] == [pytest.approx(0.4), 1]
    assert all(attention_kernel_family(n) is None for n in other)


def test_outside_attention_section_names_the_kernels_that_differ():
    from cudadent.train_report import outside_attention_section
    rows = [{"config": "c", "attention": "cudadent", "gpu_ms": 10.0, "attn_ms": 2.0,
             "other": {"gemm_a": [6.0, 4], "copy_b": [2.0, 16]}},
            {"config": "c", "attention": "sdpa", "gpu_ms": 9.5, "attn_ms": 2.5,
             "other": {"gemm_a": [6.0, 4], "transpose_c": [1.0, 8]}},
            {"config": "d", "attention": "cudadent", "gpu_ms": 1.0, "attn_ms": 0.5}]
    lines = outside_attention_section(rows)
    row = [ln for ln in lines if ln.startswith("| c |")]
    assert len(row) == 1 and "| 8.00 | 7.00 | +1.00 |" in row[0]
    # the largest difference first: copy_b (2.0 against none), then transpose_c; gemm_a equal
    assert row[0].index("copy_b") < row[0].index("transpose_c") < row[0].index("gemm_a")
    assert "2.00 (16) / 0.00 (0)" in row[0]
    assert not any(ln.startswith("| d |") for ln in lines)  # no sdpa row to compare with
    assert outside_attention_section([]) == []
