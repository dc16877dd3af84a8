/*
 * tensor_map.cuh - TMA tensor maps of the API's (batch, seqlen, heads, head_dim) tensors, for the
 * Hopper forward and backward. cuTensorMapEncodeTiled is reached through cudaGetDriverEntryPointByVersion,
 * resolved once (a function-local static: thread-safe). Each map is 4-d (head_dim, seqlen, heads,
 * batch) with the tensor's real strides, a box of box_cols columns by box_rows rows whose rows are
 * one swizzle span each: 64 columns with the 128-byte swizzle (every kernel's, the default), 32
 * with the 64-byte one, 16 with the 32-byte one (the 96 / 96 backward row, bwd_parts.cuh
 * cd_sm90_bwd_ops); rows and columns outside the tensor load as zeros.
 */
#ifndef CUDADENT_SM90_TENSOR_MAP_CUH
#define CUDADENT_SM90_TENSOR_MAP_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include "cudadent.h"

static PFN_cuTensorMapEncodeTiled_v12000 cd_sm90_tensor_map_resolve(void) {
  void *fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                       &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return (PFN_cuTensorMapEncodeTiled_v12000)fn;
}

/* A stride of 0 (legal only where that dimension has size 1) becomes a harmless 16-byte multiple. */
static cudaError_t cd_sm90_tensor_map_4d(CUtensorMap *map, const cudadent_tensor_t *t, bool fp16,
                                         int head_dim, int seqlen, int heads, int batch, int box_rows,
                                         int box_cols = 64) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = cd_sm90_tensor_map_resolve(); /* once */
  if (encode == nullptr) return cudaErrorNotSupported;
  const cuuint64_t fallback = (cuuint64_t)head_dim * 2;
  cuuint64_t dims[4] = {(cuuint64_t)head_dim, (cuuint64_t)seqlen, (cuuint64_t)heads,
                        (cuuint64_t)batch};
  cuuint64_t strides[3] = {(cuuint64_t)t->stride_seq * 2, (cuuint64_t)t->stride_head * 2,
                           (cuuint64_t)t->stride_batch * 2};
  for (int i = 0; i < 3; ++i)
    if (strides[i] == 0) strides[i] = fallback;
  cuuint32_t box[4] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows, 1, 1};
  const CUtensorMapSwizzle swizzle = box_cols == 64   ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : box_cols == 32 ? CU_TENSOR_MAP_SWIZZLE_64B
                                                      : CU_TENSOR_MAP_SWIZZLE_32B; /* a row: one span */
  cuuint32_t elem_strides[4] = {1, 1, 1, 1};
  CUresult r = encode(map, fp16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                      4, t->data, dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

#endif /* CUDADENT_SM90_TENSOR_MAP_CUH */
