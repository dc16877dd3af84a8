/*
 * sanitize_fwd.cu - small shapes through cudadent_sm80_fwd with exactly sized buffers, for
 * compute-sanitizer (memcheck, racecheck, synccheck). Checks nothing itself; exits non-zero on a
 * CUDA error. Each shape runs through both tile sizes (exp_variants.cu's forced entry points).
 * Build: nvcc -DCUDADENT_DEV -I include -I src dev/sm80_fwd/sanitize_fwd.cu
 *        dev/sm80_fwd/exp_variants.cu src/kernels/sm80/fwd.cu src/device_info.c
 */
#include <stdio.h>
#include <cuda_runtime.h>
#include "kernels/dev.h"

extern "C" cudaError_t exp07_large(const cudadent_attn_fwd_params_t *p, void *ws, cudaStream_t s);
extern "C" cudaError_t exp07_small(const cudadent_attn_fwd_params_t *p, void *ws, cudaStream_t s);

static int run(int B, int sq, int sk, int hq, int hkv, int d, int bf16, int wl, int wr, int dv = 0,
               float softcap = 0.f) {
  if (dv == 0) dv = d;
  cudadent_attn_fwd_params_t p = {0};
  p.struct_size = sizeof(p);
  p.dtype = bf16 ? CUDADENT_DTYPE_BF16 : CUDADENT_DTYPE_FP16;
  p.batch = B; p.seqlen_q = sq; p.seqlen_k = sk; p.heads_q = hq; p.heads_kv = hkv;
  p.head_dim = d; p.head_dim_v = dv; p.softcap = softcap;
  size_t nq = (size_t)B * sq * hq * d, nk = (size_t)B * sk * hkv * d;
  size_t nv = (size_t)B * sk * hkv * dv, no = (size_t)B * sq * hq * dv;
  void *q, *k, *v, *o; float *lse;
  cudaMalloc(&q, nq * 2); cudaMalloc(&k, nk * 2); cudaMalloc(&v, nv * 2); cudaMalloc(&o, no * 2);
  cudaMalloc((void **)&lse, (size_t)B * hq * sq * 4);
  cudaMemset(q, 0x3c, nq * 2); cudaMemset(k, 0x3c, nk * 2); cudaMemset(v, 0x3c, nv * 2);
  cudadent_tensor_t tq = {q, (int64_t)sq * hq * d, (int64_t)hq * d, d, 1};
  cudadent_tensor_t tk = {k, (int64_t)sk * hkv * d, (int64_t)hkv * d, d, 1};
  cudadent_tensor_t tv = {v, (int64_t)sk * hkv * dv, (int64_t)hkv * dv, dv, 1};
  cudadent_tensor_t to = {o, (int64_t)sq * hq * dv, (int64_t)hq * dv, dv, 1};
  p.q = tq; p.k = tk; p.v = tv; p.o = to; p.lse = lse;
  p.softmax_scale = 0.125f; p.window_left = wl; p.window_right = wr;
  cudaError_t e = exp07_large(&p, NULL, 0);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = exp07_small(&p, NULL, 0);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  printf("B%d sq%d sk%d h%d/%d d%d/%d cap %g %s win %d,%d: %s\n", B, sq, sk, hq, hkv, d, dv, softcap,
         bf16 ? "bf16" : "fp16", wl, wr, cudaGetErrorString(e));
  cudaFree(q); cudaFree(k); cudaFree(v); cudaFree(o); cudaFree(lse);
  return e != cudaSuccess;
}

int main(void) {
  int bad = 0;
  for (int d = 64; d <= 128; d += 64) {
    bad += run(1, 1, 1, 1, 1, d, 1, -1, -1);
    bad += run(2, 17, 33, 2, 1, d, 0, -1, 0);
    bad += run(1, 130, 70, 2, 2, d, 1, -1, -1);
    bad += run(1, 200, 300, 4, 2, d, 0, 40, 7);
    bad += run(1, 300, 129, 1, 1, d, 1, -1, 0);
  }
  /* issue 27: every width, head dims below it (exactly sized buffers: a read or write past
   * head_dim / head_dim_v of the last head is out of bounds), softcap */
  const int dims[][2] = {{8, 8}, {40, 64}, {72, 72}, {128, 40}, {136, 136}, {192, 128}, {200, 256},
                         {256, 256}, {256, 8}};
  for (int i = 0; i < (int)(sizeof dims / sizeof dims[0]); ++i) {
    bad += run(2, 17, 33, 2, 1, dims[i][0], i % 2, -1, 0, dims[i][1]);
    bad += run(1, 130, 70, 2, 2, dims[i][0], (i + 1) % 2, -1, -1, dims[i][1], 30.f);
  }
  return bad != 0;
}
