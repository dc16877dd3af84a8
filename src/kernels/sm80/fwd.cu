/*
 * fwd.cu - launchers of the portable (mma.sync, sm_80+) attention forward, and its tile table.
 *
 * The kernel is fwd_kernel.cuh (what it computes, warp roles, shared-memory layout, pipeline).
 * This file picks the tile shape for the head_dim from cd_sm80_fwd_tile (the one table), fills
 * the kernel's argument struct from the normalized params (api.c validated them; nothing is
 * checked again here) and launches on the caller's stream. Instantiated: {fp16, bf16} x
 * {64, 128}; masking is decided per key tile at run time, so no mask variants are compiled.
 */
#include <cuda_runtime.h>
#include "dispatch.h"
#include "kernels/sm80/fwd_kernel.cuh"

/* ---- the tile table: one row per head_dim ---------------------------------------------------
 * BLOCK_M query rows and BLOCK_N keys per tile, WARPS warps of BLOCK_M / WARPS rows each.
 * Registers: the O slab is (BLOCK_M / WARPS) * D / 32 fp32 per thread and the S slab
 * (BLOCK_M / WARPS) * BLOCK_N / 32, both within __launch_bounds__(., 2) (<= 255 registers).
 * Shared memory (BLOCK_M + 4 * BLOCK_N) * D * 2 bytes: 80 KiB (d64), 96 KiB (d128), so two CTAs
 * per SM on sm_90 (228 KiB) and sm_80 (164 KiB) for d64, one for d128 on sm_80. */
template <int D> struct cd_sm80_fwd_tile;
template <> struct cd_sm80_fwd_tile<64> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 128, WARPS = 4;
  static constexpr bool ONE_BARRIER = true;
};
template <> struct cd_sm80_fwd_tile<128> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 64, WARPS = 4;
  static constexpr bool ONE_BARRIER = true;
};

template <typename T, int D>
static cudaError_t cd_sm80_fwd_launch(const cudadent_attn_fwd_params_t *p, cudaStream_t stream) {
  typedef cd_sm80_fwd_tile<D> tile;
  return cd_sm80_fwd_run<T, D, tile::BLOCK_M, tile::BLOCK_N, tile::WARPS, tile::ONE_BARRIER>(
      p, stream);
}

extern "C" int cudadent_sm80_fwd_supports(const cudadent_attn_fwd_params_t *p) {
  const int dtype_ok = p->dtype == CUDADENT_DTYPE_FP16 || p->dtype == CUDADENT_DTYPE_BF16;
  const int dim_ok = p->head_dim == 64 || p->head_dim == 128;
  return dtype_ok && dim_ok;
}

extern "C" size_t cudadent_sm80_fwd_workspace_size(const cudadent_attn_fwd_params_t *p) {
  (void)p;
  return 0;
}

extern "C" cudaError_t cudadent_sm80_fwd(const cudadent_attn_fwd_params_t *p, void *workspace,
                                         cudaStream_t stream) {
  (void)workspace;
  const int bf16 = p->dtype == CUDADENT_DTYPE_BF16;
  switch (p->head_dim) {
    case 64:
      return bf16 ? cd_sm80_fwd_launch<__nv_bfloat16, 64>(p, stream)
                  : cd_sm80_fwd_launch<__half, 64>(p, stream);
    case 128:
      return bf16 ? cd_sm80_fwd_launch<__nv_bfloat16, 128>(p, stream)
                  : cd_sm80_fwd_launch<__half, 128>(p, stream);
    default:
      return cudaErrorInvalidValue; /* unreachable: dispatch asked cudadent_sm80_fwd_supports */
  }
}
