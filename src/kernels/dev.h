/*
 * dev.h - the one internal header that dev/ builds against (never a .cu file of src/).
 *
 * A dev build compiles the production kernel sources it needs (src/kernels/<arch>/<dir>.cu,
 * src/device_info.c) with -DCUDADENT_DEV, which enables config.cuh's compile-time knobs (-D on
 * the command line) and the dev-only entry points below, and links its own driver. The family
 * entry points of dispatch.h (cudadent_sm80_fwd, cudadent_sm90_bwd, ...) are the production
 * launchers; the ones here add the overrides that experiments need.
 */
#ifndef CUDADENT_KERNELS_DEV_H
#define CUDADENT_KERNELS_DEV_H

#include <cuda_runtime_api.h>
#include "cudadent.h"
#include "dispatch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* sm80 forward (src/kernels/sm80/fwd.cu) with its tile size forced: small = 0 the large tiles,
 * 1 the small ones, -1 the launcher's choice (as cudadent_sm80_fwd). */
cudaError_t cudadent_dev_sm80_fwd_tiles(const cudadent_attn_fwd_params_t *p, int small,
                                        cudaStream_t stream);

/* sm90 forward (src/kernels/sm90/fwd.cu) with a forced tile order: order = an SM90_SCHED_* value
 * (tile_scheduler.cuh; no tail), or -1 the launcher's choice. */
cudaError_t cudadent_dev_sm90_fwd(const cudadent_attn_fwd_params_t *p, int order,
                                  cudaStream_t stream);
/* Points the sm90 forward's timeline buffer (fwd_trace.cuh) at buf, or NULL to stop; builds
 * without -DSM90_TRACE return cudaErrorNotSupported. */
cudaError_t cudadent_dev_sm90_fwd_trace_set(void *buf);
/* The sm90 backward's block-phase trace (src/kernels/sm90/bwd_trace.cuh; builds with
 * -DCUDADENT_DEV -DSM90_BWD_TRACE=1): *needed = the bytes of the trace of a dense call like p (the
 * narrow rows and the wide ones, bwd_wide_kernel.cuh); with buf != NULL (buf_bytes >= *needed)
 * zeroes buf, writes its file header and turns the trace on for the dense main kernels (the last
 * call's records stay in buf); buf == NULL turns it off. cudaErrorNotSupported: a build without
 * the trace, or a call it does not cover (varlen). Exported from libcudadent.so (default
 * visibility), so that the dev program dev/sm90_bwd/bwd_trace_run.c links it; the library never
 * calls it. */
__attribute__((visibility("default"))) cudaError_t cudadent_dev_sm90_bwd_trace_set(
    const cudadent_attn_bwd_params_t *p, void *buf, size_t buf_bytes, size_t *needed);

#ifdef __cplusplus
}
#endif

#endif /* CUDADENT_KERNELS_DEV_H */
