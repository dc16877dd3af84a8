/*
 * fwd.cu - the library's entry points of the Hopper (sm_90a) attention forward.
 *
 * The kernel is fwd_kernel.cuh (what it computes, which warps do what, shared-memory layout,
 * pipeline); its tile table is fwd_tiles.cuh; the host side (tensor maps, row selection, launch)
 * is fwd_launch.cuh. Instantiated: {fp16, bf16} x the tile table's eight rows besides the d96
 * ones, and the two d96 rows of config.cuh SM90_FWD_D96's BLOCK_M (192 in the library), and the
 * softcap kernels of the d128 and d256 LSE rows (cd_sm90_fwd_run_softcap; 4 more); masking is
 * decided per key block at run time (each kernel runs its masked and unmasked key blocks as
 * separate runs of the main loop), so no mask variants are compiled. api.c has validated and
 * normalized the params; nothing is checked again here.
 */
#include <cuda_runtime.h>
#include "dispatch.h"
#include "kernels/dev.h"
#include "kernels/sm90/fwd_launch.cuh"

/* fwd_varlen.cu: ragged batches (cu_seqlens_q non-NULL; §2.6) */
size_t cd_sm90_fwd_varlen_workspace(const cudadent_attn_fwd_params_t *p);
cudaError_t cd_sm90_fwd_varlen_run(const cudadent_attn_fwd_params_t *p, void *workspace,
                                   cudaStream_t stream);

/* Which calls the dispatcher gives this path without being forced: enough work (config.cuh
 * SM90_FWD_MIN_WORK; varlen: total_q queries times max_seqlen_k keys, a bound of its work). */
extern "C" int cudadent_sm90_fwd_preferred(const cudadent_attn_fwd_params_t *p) {
  if (p->cu_seqlens_q != NULL)
    return (int64_t)p->total_q * p->heads_q * p->seqlen_k >= SM90_FWD_MIN_WORK;
  return (int64_t)p->batch * p->heads_q * p->seqlen_q * p->seqlen_k >= SM90_FWD_MIN_WORK;
}

/* What the kernels can run at all: fp16 / bf16, head_dim and head_dim_v (api.c: multiples of 8)
 * up to 256, each call on the narrowest row of the tile table that covers both (fwd_launch.cuh);
 * a forced path takes any amount of work. Softcap (where dispatch.c's row lists it, the gate
 * CUDADENT_SM90_FWD_SOFTCAP): calls with a head dim over 64 only (the softcap kernels are the
 * d128 and d256 rows' alone, dense and varlen); the others are left to the next row, the
 * portable kernel. */
extern "C" int cudadent_sm90_fwd_supports(const cudadent_attn_fwd_params_t *p) {
  const int dtype_ok = p->dtype == CUDADENT_DTYPE_FP16 || p->dtype == CUDADENT_DTYPE_BF16;
  const int dv = p->head_dim_v != 0 ? p->head_dim_v : p->head_dim; /* 0 in api.c's probes */
  const int dim_ok = p->head_dim >= 8 && p->head_dim <= 256 && dv >= 8 && dv <= 256;
  const int softcap_ok = p->softcap == 0.f || p->head_dim > 64 || dv > 64;
  return dtype_ok && dim_ok && softcap_ok;
}

/* A dense softcap call (p->softcap > 0; supports() above takes none whose head dims are both up
 * to 64; varlen ones run fwd_varlen.cu's varlen_run_softcap, on the same rows): the LSE row of
 * width 128 or 256 with its softcap kernel, the narrowest that covers the call's head dims
 * (192 / 128 calls take the 256 row). Calls without LSE take these rows too (fp32 row sums; the
 * epilogue stores no LSE). */
template <bool kFp16>
static cudaError_t cd_sm90_fwd_run_softcap_dtype(const cudadent_attn_fwd_params_t *p,
                                                 cudaStream_t s) {
  const int d = p->head_dim, dv = p->head_dim_v;
  if (d > 256 || dv > 256) return cudaErrorNotSupported;
  if (d <= 128 && dv <= 128)
    return cd_sm90_fwd_launch<cd_sm90_fwd_tile<128, 128, 128, true>, kFp16, true>(p, s);
  return cd_sm90_fwd_launch<cd_sm90_fwd_tile<256, 256, 128, true>, kFp16, true>(p, s);
}

static cudaError_t cd_sm90_fwd_run_softcap(const cudadent_attn_fwd_params_t *p, cudaStream_t s) {
  switch (p->dtype) {
    case CUDADENT_DTYPE_FP16: return cd_sm90_fwd_run_softcap_dtype<true>(p, s);
    case CUDADENT_DTYPE_BF16: return cd_sm90_fwd_run_softcap_dtype<false>(p, s);
    default: return cudaErrorNotSupported;
  }
}

/* dense calls: none; varlen: the tile list (fwd_varlen_plan.cuh) */
extern "C" size_t cudadent_sm90_fwd_workspace_size(const cudadent_attn_fwd_params_t *p) {
  return p->cu_seqlens_q != NULL ? cd_sm90_fwd_varlen_workspace(p) : 0;
}

extern "C" cudaError_t cudadent_sm90_fwd(const cudadent_attn_fwd_params_t *p, void *workspace,
                                         cudaStream_t stream) {
  if (p->cu_seqlens_q != NULL) return cd_sm90_fwd_varlen_run(p, workspace, stream);
  if (p->softcap > 0.f) return cd_sm90_fwd_run_softcap(p, stream);
  return cd_sm90_fwd_run<cd_sm90_fwd_dense_launcher, true>(p, nullptr, stream);
}

#ifdef CUDADENT_DEV
/* ---- the dev-only entry points (src/kernels/dev.h) ---- */

extern "C" cudaError_t cudadent_dev_sm90_fwd(const cudadent_attn_fwd_params_t *p, int order,
                                             cudaStream_t stream) {
  cd_sm90_fwd_dev_order = order;
  const cudaError_t err = cd_sm90_fwd_run<cd_sm90_fwd_dense_launcher, true>(p, nullptr, stream);
  cd_sm90_fwd_dev_order = -1;
  return err;
}

extern "C" cudaError_t cudadent_dev_sm90_fwd_trace_set(void *buf) {
#ifdef SM90_TRACE
  return cudaMemcpyToSymbol(cd_sm90_fwd_trace_buf, &buf, sizeof(buf));
#else
  (void)buf;
  return cudaErrorNotSupported;
#endif
}
#endif /* CUDADENT_DEV */
