/*
 * exp_variants.cu - numbered experiments on the sm80 forward: other tile shapes / pipelines of
 * the same kernel (src/kernels/sm80/fwd_kernel.cuh), each behind its own extern "C" entry point
 * with the launcher's signature, timed side by side by fwd80.py's 'exp' mode. Results and the
 * predictions made before running them: NOTES.md.
 */
#include "dispatch.h"
#include "kernels/sm80/fwd_kernel.cuh"

#define CD_EXP(name, T, D, BM, BN, W, ONE)                                                     \
  extern "C" cudaError_t name(const cudadent_attn_fwd_params_t *p, void *ws, cudaStream_t s) { \
    (void)ws;                                                                                  \
    return cd_sm80_fwd_run<T, D, BM, BN, W, ONE>(p, s);                                        \
  }

#ifndef EXP_PART
#define EXP_PART 0
#endif
#if EXP_PART == 0 || EXP_PART == 1
/* exp01: two barriers per key tile (V waited for just before P V), the first version */
CD_EXP(exp01_d128_two_barriers, __nv_bfloat16, 128, 128, 64, 4, false)
CD_EXP(exp01_d64_two_barriers, __nv_bfloat16, 64, 128, 128, 4, false)
#endif
#if EXP_PART == 0 || EXP_PART == 2
/* exp03: d128 with 8 warps of 16 rows (half the registers, twice the K/V ldmatrix traffic) */
CD_EXP(exp03_d128_8warps, __nv_bfloat16, 128, 128, 64, 8, true)
/* exp05: d128 with 32-key tiles (fewer registers, twice the tile iterations) */
CD_EXP(exp05_d128_bn32, __nv_bfloat16, 128, 128, 32, 4, true)
#endif
#if EXP_PART == 0 || EXP_PART == 3
/* exp04: small tiles for small grids: 64 query rows, 4 warps of 16 rows, 64-key tiles */
CD_EXP(exp04_d64_small_fp16, __half, 64, 64, 64, 4, true)
/* exp06: d64 with 64-key tiles */
CD_EXP(exp06_d64_bn64, __nv_bfloat16, 64, 128, 64, 4, true)
#endif
