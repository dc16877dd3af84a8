/*
 * fill.cu - the outputs of calls with a zero-length sequence: O = 0 and LSE = -inf when
 * seqlen_k == 0 (every query row sees no key); dQ = 0 when seqlen_k == 0 and dK = dV = 0 when
 * seqlen_q == 0. Grid-stride loops, one thread per 8-element (16-byte) chunk of head_dim.
 */
#include <stdint.h>

#include "dispatch.h"

namespace {

__global__ void fill_zero_kernel(uint16_t *data, int64_t stride_batch, int64_t stride_seq,
                                 int64_t stride_head, int seqlen, int heads, int chunks,
                                 int64_t total_chunks) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total_chunks;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t rest = i;
    const int chunk = (int)(rest % chunks);
    rest /= chunks;
    const int head = (int)(rest % heads);
    rest /= heads;
    const int row = (int)(rest % seqlen);
    const int64_t batch = rest / seqlen;
    uint16_t *p = data + batch * stride_batch + row * stride_seq + head * stride_head + chunk * 8;
    *reinterpret_cast<uint4 *>(p) = make_uint4(0u, 0u, 0u, 0u);  // 16-byte aligned (api.c)
  }
}

__global__ void fill_float_kernel(float *data, int64_t count, float value) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
       i += (int64_t)gridDim.x * blockDim.x)
    data[i] = value;
}

int grid_for(int64_t work) {
  const int64_t blocks = (work + 255) / 256;
  return (int)(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

}  // namespace

extern "C" cudaError_t cudadent_fill_zero(cudadent_tensor_t t, int batch, int seqlen, int heads,
                                          int head_dim, cudaStream_t stream) {
  const int chunks = head_dim / 8;  // head_dim * 2 bytes is a multiple of 16 (api.c)
  const int64_t total = (int64_t)batch * seqlen * heads * chunks;
  if (total == 0) return cudaSuccess;
  fill_zero_kernel<<<grid_for(total), 256, 0, stream>>>(
      static_cast<uint16_t *>(t.data), t.stride_batch, t.stride_seq, t.stride_head, seqlen, heads,
      chunks, total);
  return cudaGetLastError();
}

extern "C" cudaError_t cudadent_fill_float(float *data, int64_t count, float value,
                                           cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  fill_float_kernel<<<grid_for(count), 256, 0, stream>>>(data, count, value);
  return cudaGetLastError();
}
