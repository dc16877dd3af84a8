/*
 * sm90_dev.cu - every variant of the sm90 forward behind one C entry point, built as a shared
 * library for dev/sm90_fwd/check_fwd.py (correctness against a float64 torch reference, and
 * timing side by side with SDPA's cuDNN backend in one process).
 *   nvcc -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
 *        -O3 -Iinclude -Isrc dev/sm90_fwd/sm90_dev.cu -o build-sm90/libsm90dev.so
 * The params are normalized by the caller as api.c does (causal folded into window_right = 0).
 * Variants 0 and 1 are compiled only with -DSM90_DEV_ALL_VARIANTS; the tile-table row is the
 * library's choice (sm90_fwd_config: lse == NULL takes the tensor-core row-sum rows).
 */
#include "kernels/sm90/fwd_launch.cuh"

template <int V>
static cudaError_t dev_launch(const cudadent_attn_fwd_params_t *p, cudaStream_t s, int order) {
  const bool fp16 = p->dtype == CUDADENT_DTYPE_FP16;
#define DEV_ROW(R) \
  case R: return fp16 ? sm90_fwd_launch<R, true, V>(p, s, order) : sm90_fwd_launch<R, false, V>(p, s, order);
  switch (sm90_fwd_config(p)) {
    DEV_ROW(SM90_D64_M192)
    DEV_ROW(SM90_D64_M128)
    DEV_ROW(SM90_D128_M128)
    DEV_ROW(SM90_NOLSE + SM90_D64_M192)
    DEV_ROW(SM90_NOLSE + SM90_D64_M128)
    DEV_ROW(SM90_NOLSE + SM90_D128_M128)
  }
#undef DEV_ROW
  return cudaErrorNotSupported;
}

/* order: -1 the launcher's choice, else an SM90_SCHED_* tile order */
extern "C" int sm90_dev_fwd(int variant, const cudadent_attn_fwd_params_t *p, void *stream,
                            int order) {
  cudaStream_t s = (cudaStream_t)stream;
  switch (variant) {
#ifdef SM90_DEV_ALL_VARIANTS /* the older variants only on request: build time */
    case SM90_FWD_SIMPLE: return (int)dev_launch<SM90_FWD_SIMPLE>(p, s, order);
    case SM90_FWD_OVERLAP: return (int)dev_launch<SM90_FWD_OVERLAP>(p, s, order);
#endif
    case SM90_FWD_OVERLAP_PINGPONG: return (int)dev_launch<SM90_FWD_OVERLAP_PINGPONG>(p, s, order);
    default: return (int)cudaErrorInvalidValue;
  }
}

/* With -DSM90_TRACE: point the kernels' timeline buffer (fwd_trace.cuh) at buf, or NULL to stop. */
extern "C" int sm90_dev_trace_set(void *buf) {
#ifdef SM90_TRACE
  return (int)cudaMemcpyToSymbol(sm90_trace_buf, &buf, sizeof(buf));
#else
  (void)buf;
  return (int)cudaErrorNotSupported;
#endif
}
