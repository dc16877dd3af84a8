/*
 * fwd.cu - launchers of the portable (mma.sync, sm_80+) attention forward, and its tile table.
 *
 * The kernel is fwd_kernel.cuh (what it computes, warp roles, shared-memory layout, pipeline).
 * This file picks the tile shape for the head_dim from cd_sm80_fwd_tile (the one table), fills
 * the kernel's argument struct from the normalized params (api.c validated them; nothing is
 * checked again here) and launches on the caller's stream. Instantiated: {fp16, bf16} x
 * {64, 128} x {large, small tiles}; masking is decided per key tile at run time, so no mask
 * variants are compiled.
 */
#include <cuda_runtime.h>
#include "dispatch.h"
#include "kernels/dev.h"
#include "kernels/sm80/fwd_kernel.cuh"

/* ---- the tile table: per head_dim, large tiles and small tiles -----------------------------
 * BLOCK_M query rows and BLOCK_N keys per tile, WARPS warps of BLOCK_M / WARPS rows each.
 * Large tiles (grids that fill the GPU): 4 warps of 32 rows, so each K/V fragment read from
 * shared memory feeds two m16 tiles. Registers: O (32 * D / 32) + S (32 * BLOCK_N / 32) fp32 per
 * thread, 255 with __launch_bounds__(128, 2). Shared memory (BLOCK_M + 4 * BLOCK_N) * D * 2 bytes:
 * 80 KiB (d64), 96 KiB (d128): two CTAs per SM on sm_90; on sm_80 (164 KiB) d128 gets one.
 * Small tiles: 64-row tiles of 4 warps of 16 rows, 64-key tiles: twice the CTAs, a quarter of the
 * work per key tile, for grids too small to fill the GPU (docs/kernels/sm80_fwd.md section 2):
 * unmasked, when the small-tile grid fits in one CTA per SM (large CTAs <= SMs / 2); masked
 * (causal / window: uneven query tiles), when there are fewer than 2 large CTAs per SM. */
template <int D, bool SMALL> struct cd_sm80_fwd_tile;
template <> struct cd_sm80_fwd_tile<64, false> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 128, WARPS = 4;
};
/* Built for sm_90 (not sm_80 / sm_89), this row's kernel makes ptxas warn of a spill (8 bytes
 * stored, 48 loaded): one 64-bit value (the query tile's first row m0 as int64) is stored once
 * before the loop, loaded once per key tile, issued among the S = Q K^T mma.sync and used by the
 * mask test after them, and five times in the epilogue (SASS of CUDA 13.0). One L1-resident load
 * in a key tile's ~1300 instructions (256 HMMA) is below 0.1% of them and hidden behind the
 * mma.sync; keeping it in a register would take more than the 255 that two CTAs per SM
 * (__launch_bounds__(128, 2)) leave. So the two spill warnings of a clean build are expected. */
template <> struct cd_sm80_fwd_tile<128, false> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 64, WARPS = 4;
};
template <> struct cd_sm80_fwd_tile<64, true> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 4;
};
template <> struct cd_sm80_fwd_tile<128, true> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 4;
};

template <typename T, int D>
static cudaError_t cd_sm80_fwd_launch(const cudadent_attn_fwd_params_t *p, int small,
                                      cudaStream_t stream) {
  typedef cd_sm80_fwd_tile<D, false> L;
  typedef cd_sm80_fwd_tile<D, true> S;
  return small ? cd_sm80_fwd_run<T, D, S::BLOCK_M, S::BLOCK_N, S::WARPS>(p, stream)
               : cd_sm80_fwd_run<T, D, L::BLOCK_M, L::BLOCK_N, L::WARPS>(p, stream);
}

/* small: -1 decide from the grid size, 0 large tiles, 1 small tiles */
static cudaError_t cd_sm80_fwd_dispatch(const cudadent_attn_fwd_params_t *p, int small,
                                        cudaStream_t stream) {
  if (small < 0) {
    int dev = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err != cudaSuccess) return err;
    if ((err = cudadent_device_sm_count(dev, &sms)) != cudaSuccess) return err; /* cached */
    constexpr int LM = cd_sm80_fwd_tile<64, false>::BLOCK_M;
    static_assert(LM == cd_sm80_fwd_tile<128, false>::BLOCK_M, "one large BLOCK_M assumed");
    const int64_t large_ctas = (int64_t)p->batch * p->heads_q * ((p->seqlen_q + LM - 1) / LM);
    const int masked = p->window_left >= 0 || p->window_right >= 0;
    small = masked ? large_ctas < 2 * (int64_t)sms : 2 * large_ctas <= (int64_t)sms;
  }
  const int bf16 = p->dtype == CUDADENT_DTYPE_BF16;
  switch (p->head_dim) {
    case 64:
      return bf16 ? cd_sm80_fwd_launch<__nv_bfloat16, 64>(p, small, stream)
                  : cd_sm80_fwd_launch<__half, 64>(p, small, stream);
    case 128:
      return bf16 ? cd_sm80_fwd_launch<__nv_bfloat16, 128>(p, small, stream)
                  : cd_sm80_fwd_launch<__half, 128>(p, small, stream);
    default:
      return cudaErrorInvalidValue; /* unreachable: dispatch asked cudadent_sm80_fwd_supports */
  }
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
  return cd_sm80_fwd_dispatch(p, -1, stream);
}

#ifdef CUDADENT_DEV
/* the dev-only entry point (src/kernels/dev.h): the tile size forced */
extern "C" cudaError_t cudadent_dev_sm80_fwd_tiles(const cudadent_attn_fwd_params_t *p, int small,
                                                   cudaStream_t stream) {
  return cd_sm80_fwd_dispatch(p, small < 0 ? -1 : small != 0, stream);
}
#endif
