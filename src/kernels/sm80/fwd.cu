/*
 * fwd.cu - launchers of the portable (mma.sync, sm_80+) attention forward, and its tile table.
 *
 * The kernel is fwd_kernel.cuh (what it computes, warp roles, shared-memory layout, pipeline).
 * This file picks the kernel's width W, the smallest of {64, 128, 192, 256} that holds
 * max(head_dim, head_dim_v) (head dims: multiples of 8 in [8, 256]), its variant and the tile
 * shape from cd_sm80_fwd_tile (the one table), fills the kernel's argument struct from the
 * normalized params (api.c validated them; nothing is checked again here) and launches on the
 * caller's stream. Instantiated, for {fp16, bf16}:
 *     W = 64, 128:   {large, small tiles} x {exact (head_dim = head_dim_v = W, no softcap),
 *                    PAD (any smaller head_dim / head_dim_v), PAD + SOFTCAP}        12 kernels
 *     W = 192, 256:  one tile x {PAD, PAD + SOFTCAP}                                 4 kernels
 * i.e. 32 kernels; with dispatch.h's CUDADENT_SM80_W96 at 1, W = 96 too (W 64 / 128's 12 more,
 * for calls with max(head_dim, head_dim_v) in (64, 96]); with CUDADENT_SM80_FWD_WIDE8 at 1, W 192 /
 * 256 have large (128 x 64, 8 warps) and small tiles as W 64 / 128 (8 more: 2 widths x {PAD,
 * PAD + SOFTCAP} x 2 dtypes), the large ones taken only where the device's shared memory holds
 * them (fwd_tiles.cuh); with CUDADENT_SM80_FWD_SINGLE_BUF also at 1, that large tile is 64 x 64
 * with 4 warps and K / V single buffered (fwd_single.cuh), taken where the device's shared memory
 * holds two of it. A softcap call with head_dim =
 * head_dim_v = W runs the PAD + SOFTCAP kernel (its column predicates are then all true).
 * Masking is decided per key tile at run time, so no mask variants are compiled; the LSE is written
 * where the pointer is not NULL (run time).
 * The tile table and the templates that pick an instantiation are in fwd_tiles.cuh; varlen calls
 * (cu_seqlens_q set) run the same 32 instantiations of cd_sm80_fwd_varlen_kernel, compiled in
 * fwd_varlen.cu (docs/kernels/sm80_fwd.md section 7), with the tile size decided here from the
 * grid's bound (batch * heads_q * tiles of max_seqlen_q).
 */
#include <cuda_runtime.h>
#ifdef CUDADENT_DEV
#include <stdlib.h>
#include <string.h>
#endif
#include "device_info.h"
#include "dispatch.h"
#include "kernels/dev.h"
#include "kernels/sm80/fwd_tiles.cuh"

/* small: -1 decide from the grid size, 0 large tiles, 1 small tiles (W 192 / 256: one tile,
 * unless CUDADENT_SM80_FWD_WIDE8 is 1) */
static cudaError_t cd_sm80_fwd_dispatch(const cudadent_attn_fwd_params_t *p, int small,
                                        cudaStream_t stream) {
  if (small < 0) {
    int dev = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err != cudaSuccess) return err;
    if ((err = cudadent_device_sm_count(dev, &sms)) != cudaSuccess) return err; /* cached */
    constexpr int LM = cd_sm80_fwd_tile<64, false>::BLOCK_M;
    static_assert(LM == cd_sm80_fwd_tile<128, false>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<64, false, true>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<96, false>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<96, false, true>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<128, false, true>::BLOCK_M,
                  "one large BLOCK_M assumed");
#if CUDADENT_SM80_FWD_WIDE8 && !CUDADENT_SM80_FWD_SINGLE_BUF
    /* (with CUDADENT_SM80_FWD_SINGLE_BUF, W 192 / 256's large tile has 64 rows as the small
     * one: the rule then only sizes the grid in LM-row tiles, and picks 64 x 32 for small grids
     * as it did at gate 0) */
    static_assert(LM == cd_sm80_fwd_tile<192, false>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<192, false, true>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<256, false>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<256, false, true>::BLOCK_M,
                  "one large BLOCK_M assumed (W 192 / 256's 8-warp tiles too)");
#endif
    const int64_t large_ctas = (int64_t)p->batch * p->heads_q * ((p->seqlen_q + LM - 1) / LM);
    const int masked = p->window_left >= 0 || p->window_right >= 0;
    small = masked ? large_ctas < 2 * (int64_t)sms : 2 * large_ctas <= (int64_t)sms;
#ifdef CUDADENT_DEV
    /* dev builds: CUDADENT_SM80_FWD_TILE=large / small forces the tile size of every call, so
     * that the C suite's small shapes run the large tiles too (session 29's W 192 / 256 runs:
     * git show ad0acc3:dev/sm80_fwd/w256_run.sh) */
    const char *force = getenv("CUDADENT_SM80_FWD_TILE");
    if (force != NULL && !strcmp(force, "large")) small = 0;
    if (force != NULL && !strcmp(force, "small")) small = 1;
#endif
  }
  if (p->cu_seqlens_q != NULL) return cd_sm80_fwd_varlen_launch(p, small, stream);
  return p->dtype == CUDADENT_DTYPE_BF16
             ? cd_sm80_fwd_width_switch<__nv_bfloat16, false>(p, small, stream)
             : cd_sm80_fwd_width_switch<__half, false>(p, small, stream);
}

/* Head dims: multiples of 8 in [8, 256], head_dim_v likewise (dispatch's row lists head_dim;
 * head_dim_v is checked here); and the device's opt-in shared memory per block must hold the
 * width's tiles (every width fits sm_80 / sm_86 / sm_89 / sm_90 today; the check keeps a future
 * tile row honest; CUDADENT_SM80_FWD_WIDE8's W 192 / 256 large tiles are checked at launch and
 * fall back to the small ones, so only those count here: cd_sm80_fwd_smem_need). */
extern "C" int cudadent_sm80_fwd_supports(const cudadent_attn_fwd_params_t *p) {
  if (p->dtype != CUDADENT_DTYPE_FP16 && p->dtype != CUDADENT_DTYPE_BF16) return 0;
  /* dispatch's head-dim queries ask before api.c's normalization: head_dim_v 0 = head_dim */
  const int d = p->head_dim, dv = p->head_dim_v != 0 ? p->head_dim_v : p->head_dim;
  if (d < 8 || d > 256 || d % 8 != 0 || dv < 8 || dv > 256 || dv % 8 != 0) return 0;
  int need = 0;
  switch (cd_sm80_fwd_width(p)) {
    case 64: need = cd_sm80_fwd_smem_need<64>(); break;
#if CUDADENT_SM80_W96
    case 96: need = cd_sm80_fwd_smem_need<96>(); break;
#endif
    case 128: need = cd_sm80_fwd_smem_need<128>(); break;
    case 192: need = cd_sm80_fwd_smem_need<192>(); break;
    default: need = cd_sm80_fwd_smem_need<256>(); break;
  }
  int optin = 0;
  if (cudadent_current_smem_optin(&optin) != cudaSuccess) {
    (void)cudaGetLastError(); /* no device: the call fails later, at the device check */
    return 1;
  }
  return optin >= need;
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
