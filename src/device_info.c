/*
 * device_info.c - per-device attributes queried once and cached (device_info.h).
 */
#include "device_info.h"

/* A cached attribute: 0 means not yet queried (every attribute cached here is > 0). */
static cudaError_t cached(int *cache, int dev, enum cudaDeviceAttr attr, int *value) {
  if (dev >= 0 && dev < CUDADENT_MAX_DEVICES) {
    const int v = __atomic_load_n(&cache[dev], __ATOMIC_ACQUIRE);
    if (v > 0) {
      *value = v;
      return cudaSuccess;
    }
  }
  int v = 0;
  const cudaError_t err = cudaDeviceGetAttribute(&v, attr, dev);
  if (err != cudaSuccess) return err;
  if (dev >= 0 && dev < CUDADENT_MAX_DEVICES && v > 0) __atomic_store_n(&cache[dev], v, __ATOMIC_RELEASE);
  *value = v;
  return cudaSuccess;
}

cudaError_t cudadent_device_sm_count(int dev, int *sms) {
  static int cache[CUDADENT_MAX_DEVICES];
  return cached(cache, dev, cudaDevAttrMultiProcessorCount, sms);
}

cudaError_t cudadent_device_smem_optin(int dev, int *bytes) {
  static int cache[CUDADENT_MAX_DEVICES];
  return cached(cache, dev, cudaDevAttrMaxSharedMemoryPerBlockOptin, bytes);
}

cudaError_t cudadent_current_smem_optin(int *bytes) {
  int dev = 0;
  const cudaError_t err = cudaGetDevice(&dev);
  return err != cudaSuccess ? err : cudadent_device_smem_optin(dev, bytes);
}

cudaError_t cudadent_device_cc(int dev, int *cc) {
  static int cache[CUDADENT_MAX_DEVICES];
  if (dev >= 0 && dev < CUDADENT_MAX_DEVICES) {
    const int v = __atomic_load_n(&cache[dev], __ATOMIC_ACQUIRE);
    if (v > 0) {
      *cc = v;
      return cudaSuccess;
    }
  }
  int major = 0, minor = 0;
  cudaError_t err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  if (err != cudaSuccess) return err;
  const int v = major * 10 + minor;
  if (dev >= 0 && dev < CUDADENT_MAX_DEVICES && v > 0) __atomic_store_n(&cache[dev], v, __ATOMIC_RELEASE);
  *cc = v;
  return cudaSuccess;
}
