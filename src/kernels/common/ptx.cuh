/*
 * ptx.cuh - the inline-PTX wrappers (one instruction each) and helpers that the sm80 and the sm90
 * kernels both use: shared-memory addresses, packing two floats into a 16-bit pair, exp2. The
 * wrappers of one architecture live beside its kernels: sm80/ptx_sm80.cuh (mma.sync, ldmatrix,
 * cp.async, red), sm90/ptx_sm90.cuh (mbarrier, TMA, wgmma, setmaxnreg, stmatrix).
 *
 * Each wrapper names its section of the PTX ISA by title ("Data Movement and Conversion
 * Instructions: cvt", "Floating Point Instructions: ex2", ...). Pairs of 16-bit elements travel
 * packed in one 32-bit register (lower column in the low half).
 *
 * Device names: cd_ for these helpers and the PTX wrappers of both architectures; cd_sm90_ for the
 * Hopper building blocks (gemm, pipeline, tile scheduler, tensor maps); cd_sm80_fwd_, cd_sm80_bwd_,
 * cd_sm90_fwd_, cd_sm90_bwd_ for one kernel family's kernels, types and functions.
 */
#ifndef CUDADENT_PTX_CUH
#define CUDADENT_PTX_CUH

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>

#define CUDADENT_DEVICE __device__ __forceinline__

/* Shared-memory address of a generic pointer, as the 32-bit .shared window address that
 * ldmatrix / cp.async / ld.shared / TMA / wgmma descriptors take (PTX ISA "cvta";
 * __cvta_generic_to_shared). */
CUDADENT_DEVICE uint32_t cd_smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}

/* ---- conversions and math -------------------------------------------------------------------- */

/* Pack two floats into a bf16x2 register, lo in the low half, round to nearest even.
 * PTX ISA "cvt" (cvt.rn.bf16x2.f32 d, a, b puts a in the upper half). */
CUDADENT_DEVICE uint32_t cd_pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/* Pack two floats into a half2 register, lo in the low half, round to nearest even.
 * PTX ISA "cvt" (cvt.rn.f16x2.f32 d, a, b puts a in the upper half). */
CUDADENT_DEVICE uint32_t cd_pack_f16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/* Dtype-generic pack for templates: T is __nv_bfloat16 or __half. */
template <typename T> CUDADENT_DEVICE uint32_t cd_pack2(float lo, float hi);
template <> CUDADENT_DEVICE uint32_t cd_pack2<__nv_bfloat16>(float lo, float hi) {
  return cd_pack_bf16x2(lo, hi);
}
template <> CUDADENT_DEVICE uint32_t cd_pack2<__half>(float lo, float hi) {
  return cd_pack_f16x2(lo, hi);
}
/* The same keyed by a flag, as the sm90 kernels' templates carry the dtype (kFp16: __half, else
 * __nv_bfloat16): an overload on the kind of template parameter, cd_pack2<true>(lo, hi). */
template <bool kFp16> CUDADENT_DEVICE uint32_t cd_pack2(float lo, float hi) {
  return kFp16 ? cd_pack_f16x2(lo, hi) : cd_pack_bf16x2(lo, hi);
}

/* 2^x, approximate, flush-to-zero; ex2(-inf) = +0.
 * PTX ISA "Floating Point Instructions: ex2". */
CUDADENT_DEVICE float cd_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

#endif /* CUDADENT_PTX_CUH */
