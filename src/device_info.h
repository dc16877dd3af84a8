/*
 * device_info.h - what the library asks of a device more than once, asked once per device and
 * cached (thread-safe: a value is published with an atomic store and read with an atomic load;
 * the queries are idempotent, so a race between threads only repeats one). Used by dispatch,
 * api.c and every launcher: the multiprocessor count, the opt-in shared memory per block, the
 * compute capability, and "once per device" flags for one-time set-up such as a kernel's
 * dynamic shared-memory attribute (which the CUDA runtime keeps per device).
 * Devices with an ordinal >= CUDADENT_MAX_DEVICES are queried at every call (correct, slower).
 */
#ifndef CUDADENT_DEVICE_INFO_H
#define CUDADENT_DEVICE_INFO_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDADENT_MAX_DEVICES 64

/* Multiprocessor count of device dev. */
cudaError_t cudadent_device_sm_count(int dev, int *sms);
/* cudaDevAttrMaxSharedMemoryPerBlockOptin of device dev, in bytes. */
cudaError_t cudadent_device_smem_optin(int dev, int *bytes);
/* The same of the current device (cudaGetDevice's error where it fails). */
cudaError_t cudadent_current_smem_optin(int *bytes);
/* Compute capability of device dev as major * 10 + minor (e.g. 90). */
cudaError_t cudadent_device_cc(int dev, int *cc);

/* A one-time set-up step per device (e.g. one kernel's cudaFuncSetAttribute): a static
 * cudadent_device_once_t per step, zero-initialized. */
typedef struct cudadent_device_once {
  int done[CUDADENT_MAX_DEVICES];
} cudadent_device_once_t;

/* 1 if the step was marked done on device dev. */
static inline int cudadent_device_once_done(const cudadent_device_once_t *once, int dev) {
  return dev >= 0 && dev < CUDADENT_MAX_DEVICES && __atomic_load_n(&once->done[dev], __ATOMIC_ACQUIRE);
}
static inline void cudadent_device_once_mark(cudadent_device_once_t *once, int dev) {
  if (dev >= 0 && dev < CUDADENT_MAX_DEVICES) __atomic_store_n(&once->done[dev], 1, __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif

#endif /* CUDADENT_DEVICE_INFO_H */
