/*
 * fwd.cu - the library's launcher of the Hopper (sm_90a) attention forward.
 *
 * The kernel is fwd_kernel.cuh (what it computes, which warps do what, shared-memory layout,
 * pipeline); its tile table is sm90_fwd_tile there; the host side (tensor maps, launch) is
 * fwd_launch.cuh. Instantiated: {fp16, bf16} x the six rows of the tile table, of the variant
 * SM90_FWD_VARIANT; masking is decided per key block at run time (each kernel runs its masked
 * and unmasked key blocks as separate runs of the main loop), so no mask variants are compiled.
 * api.c has validated and normalized the params; nothing is checked again here.
 */
#include <cuda_runtime.h>
#include "dispatch.h"
#include "kernels/sm90/fwd_launch.cuh"

#ifndef SM90_FWD_VARIANT
#define SM90_FWD_VARIANT SM90_FWD_OVERLAP_PINGPONG
#endif

/* 1: dispatch picks this path on cc 9.0 (tests/test_gpu_attn.c gpu_fwd passed 55/55 with
 * CUDADENT_KERNEL=sm90, dev/sm90_fwd/NOTES.md step 4). */
#define SM90_FWD_ENABLED 1

/* Below this much work (batch * heads_q * seqlen_q * seqlen_k) the portable path is as fast or
 * faster: one tile's latency chain (TMA load, wgmma, TMA store) is longer than its cp.async +
 * mma.sync one (measured: 1x8x512x512 8.1 us both paths, 2x8x128x128 4.4 vs 3.7 us, d64 fp16,
 * CUDA graph; NOTES.md step 3). */
#define SM90_FWD_MIN_WORK ((int64_t)1 << 22)

extern "C" int cudadent_sm90_fwd_supports(const cudadent_attn_fwd_params_t *p) {
  const int dtype_ok = p->dtype == CUDADENT_DTYPE_FP16 || p->dtype == CUDADENT_DTYPE_BF16;
  const int dim_ok = p->head_dim == 64 || p->head_dim == 128;
  const int64_t work = (int64_t)p->batch * p->heads_q * p->seqlen_q * p->seqlen_k;
  return SM90_FWD_ENABLED && dtype_ok && dim_ok && work >= SM90_FWD_MIN_WORK;
}

extern "C" size_t cudadent_sm90_fwd_workspace_size(const cudadent_attn_fwd_params_t *p) {
  (void)p;
  return 0;
}

template <int CFG>
static cudaError_t sm90_fwd_launch_dtype(const cudadent_attn_fwd_params_t *p, cudaStream_t s) {
  return p->dtype == CUDADENT_DTYPE_FP16 ? sm90_fwd_launch<CFG, true, SM90_FWD_VARIANT>(p, s)
                                         : sm90_fwd_launch<CFG, false, SM90_FWD_VARIANT>(p, s);
}

extern "C" cudaError_t cudadent_sm90_fwd(const cudadent_attn_fwd_params_t *p, void *workspace,
                                         cudaStream_t stream) {
  (void)workspace;
  /* reachable with other dtypes / head dims only when CUDADENT_KERNEL=sm90 forces this path */
  if ((p->dtype != CUDADENT_DTYPE_FP16 && p->dtype != CUDADENT_DTYPE_BF16) ||
      (p->head_dim != 64 && p->head_dim != 128))
    return cudaErrorNotSupported;
  switch (sm90_fwd_config(p)) {
    case SM90_D64_M192: return sm90_fwd_launch_dtype<SM90_D64_M192>(p, stream);
    case SM90_D64_M128: return sm90_fwd_launch_dtype<SM90_D64_M128>(p, stream);
    case SM90_D128_M128: return sm90_fwd_launch_dtype<SM90_D128_M128>(p, stream);
    case SM90_NOLSE + SM90_D64_M192: return sm90_fwd_launch_dtype<SM90_NOLSE + SM90_D64_M192>(p, stream);
    case SM90_NOLSE + SM90_D64_M128: return sm90_fwd_launch_dtype<SM90_NOLSE + SM90_D64_M128>(p, stream);
    default: return sm90_fwd_launch_dtype<SM90_NOLSE + SM90_D128_M128>(p, stream);
  }
}
