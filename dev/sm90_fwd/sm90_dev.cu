/*
 * sm90_dev.cu - every variant of the sm90 forward behind one C entry point, built as a shared
 * library for dev/sm90_fwd/check_fwd.py (correctness against a float64 torch reference, and
 * timing side by side with SDPA's cuDNN backend in one process).
 *   nvcc -shared -Xcompiler -fPIC -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr \
 *        -O3 -DCUDADENT_DEV -Iinclude -Isrc dev/sm90_fwd/sm90_dev.cu src/kernels/sm90/fwd.cu \
 *        src/device_info.c -o build-sm90/libsm90dev.so
 * The params are normalized by the caller as api.c does (causal folded into window_right = 0).
 * The tile-table row is the library's choice (cd_sm90_fwd_run: lse == NULL takes the tensor-core
 * row-sum rows). Built with -DCUDADENT_DEV, so that config.cuh's knobs may be set with -D; reaches
 * the kernels through src/kernels/dev.h only.
 */
#include "kernels/dev.h"

/* variant: 2 (overlap + pingpong, the only kernel left; SIMPLE and OVERLAP are in git history,
 * docs/kernels/sm90_fwd.md); order: -1 the launcher's choice, else an SM90_SCHED_* tile order */
extern "C" int sm90_dev_fwd(int variant, const cudadent_attn_fwd_params_t *p, void *stream,
                            int order) {
  if (variant != 2) return (int)cudaErrorInvalidValue;
  return (int)cudadent_dev_sm90_fwd(p, order, (cudaStream_t)stream);
}

/* With -DSM90_TRACE: point the kernels' timeline buffer (fwd_trace.cuh) at buf, or NULL to stop. */
extern "C" int sm90_dev_trace_set(void *buf) {
  return (int)cudadent_dev_sm90_fwd_trace_set(buf);
}
