/*
 * ptx_sm80.cuh - inline-PTX wrappers of the portable (mma.sync) kernels, sm_80 and later: warp-level
 * mma, ldmatrix, cp.async and red. What the sm90 kernels use too is in common/ptx.cuh.
 *
 * Each wrapper names its section of the PTX ISA by title ("Parallel Synchronization and
 * Communication Instructions", "Warp Level Matrix Multiply-Accumulate Instructions", ...).
 * Fragment layouts of mma.m16n8k16 (PTX ISA "Matrix Fragments for mma.m16n8k16"),
 * with groupID = lane / 4 and tid = lane % 4:
 *   A (16x16, row): a0,a1: (row g,   cols 2t..2t+1)     a2,a3: (row g+8, cols 2t..2t+1)
 *                   a4,a5: (row g,   cols 2t+8..2t+9)   a6,a7: (row g+8, cols 2t+8..2t+9)
 *   B (16x8, col):  b0,b1: (rows 2t..2t+1, col g)       b2,b3: (rows 2t+8..2t+9, col g)
 *   C/D (16x8 fp32): c0,c1: (row g, cols 2t..2t+1)      c2,c3: (row g+8, cols 2t..2t+1)
 * Pairs of 16-bit elements travel packed in one 32-bit register (lower column in the low half).
 */
#ifndef CUDADENT_SM80_PTX_SM80_CUH
#define CUDADENT_SM80_PTX_SM80_CUH

#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <stdint.h>
#include "kernels/common/ptx.cuh"

/* ---- warp-level matrix multiply-accumulate --------------------------------------------------- */

/* D = A * B + C, m16n8k16, A row-major bf16, B column-major bf16, fp32 accumulate, in place.
 * PTX ISA "Warp-level matrix multiply-accumulate instruction: mma". */
CUDADENT_DEVICE void cd_mma_m16n8k16_bf16(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* The same with fp16 inputs (PTX ISA "mma"). */
CUDADENT_DEVICE void cd_mma_m16n8k16_f16(float c[4], const uint32_t a[4], const uint32_t b[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Dtype-generic form for templates: T is __nv_bfloat16 or __half. */
template <typename T> CUDADENT_DEVICE void cd_mma_m16n8k16(float c[4], const uint32_t a[4],
                                                             const uint32_t b[2]);
template <> CUDADENT_DEVICE void cd_mma_m16n8k16<__nv_bfloat16>(float c[4], const uint32_t a[4],
                                                                 const uint32_t b[2]) {
  cd_mma_m16n8k16_bf16(c, a, b);
}
template <> CUDADENT_DEVICE void cd_mma_m16n8k16<__half>(float c[4], const uint32_t a[4],
                                                          const uint32_t b[2]) {
  cd_mma_m16n8k16_f16(c, a, b);
}

/* ---- math ------------------------------------------------------------------------------------ */

/* tanh(x), approximate (one MUFU.TANH; sm_75 and later). PTX ISA "Floating Point Instructions:
 * tanh" (tanh.approx.f32; the ISA bounds its relative error by 2^-10.987; measured ~1.1e-5, a
 * CPU model of the criterion: dev/sm80_bwd/softcap_tanh_error.c). */
CUDADENT_DEVICE float cd_tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/* The tanh of softcap, one for every forward and backward (a backward recomputes P against the
 * forward's LSE, so all must cap alike): tanh.approx, one MUFU a score (docs/kernels/sm80_fwd.md
 * section 1 says why it replaced an ex2 + reciprocal tanh of two MUFU in session 21). */
CUDADENT_DEVICE float cd_softcap_tanh(float x) { return cd_tanh_approx(x); }

/* ---- ldmatrix -------------------------------------------------------------------------------- */

/* Four 8x8 b16 matrices from shared memory; lanes 8i..8i+7 give the row addresses of matrix i
 * (16 bytes each), register i receives matrix i in the mma fragment layout.
 * PTX ISA "Warp-level matrix load instruction: ldmatrix". */
CUDADENT_DEVICE void cd_ldmatrix_x4(uint32_t r[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

/* The same, each 8x8 matrix transposed on the way (PTX ISA "ldmatrix", .trans). */
CUDADENT_DEVICE void cd_ldmatrix_x4_trans(uint32_t r[4], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr));
}

/* Two 8x8 matrices (lanes 0..15 give addresses) (PTX ISA "ldmatrix", .x2). */
CUDADENT_DEVICE void cd_ldmatrix_x2(uint32_t r[2], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr));
}

/* Two 8x8 matrices, transposed (PTX ISA "ldmatrix", .x2.trans). */
CUDADENT_DEVICE void cd_ldmatrix_x2_trans(uint32_t r[2], uint32_t smem_addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(smem_addr));
}

/* ---- asynchronous global -> shared copies ---------------------------------------------------- */

/* 16-byte copy global -> shared, cached in L2 only (.cg).
 * PTX ISA "Data Movement and Conversion Instructions: cp.async". */
CUDADENT_DEVICE void cd_cp_async_cg16(uint32_t smem_addr, const void *gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr), "l"(gmem));
}

/* 16-byte copy that reads nothing and writes 16 zero bytes when !valid (src-size = 0), for rows
 * past the end of a tensor. gmem must still be a valid-looking address (pass the tensor base).
 * PTX ISA "cp.async", src-size operand: bytes past src-size are zero-filled. */
CUDADENT_DEVICE void cd_cp_async_cg16_zfill(uint32_t smem_addr, const void *gmem, bool valid) {
  const int src_size = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem),
               "r"(src_size));
}

/* 4-byte copy global -> shared (cached in L1 and L2: .ca, the only mode for 4 bytes) that writes
 * 4 zero bytes and reads nothing when !valid. PTX ISA "cp.async", cp-size 4 with src-size. */
CUDADENT_DEVICE void cd_cp_async_ca4_zfill(uint32_t smem_addr, const void *gmem, bool valid) {
  const int src_size = valid ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr), "l"(gmem),
               "r"(src_size));
}

/* Close the group of cp.async issued so far by this thread.
 * PTX ISA "cp.async.commit_group". */
CUDADENT_DEVICE void cd_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

/* Wait until at most N of this thread's committed groups are still pending.
 * PTX ISA "cp.async.wait_group / cp.async.wait_all". */
template <int N> CUDADENT_DEVICE void cd_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* ---- reductions to global memory ------------------------------------------------------------- */

/* dst[0..3] += x, y, z, w in global memory, atomically per element, no result; dst 16-byte
 * aligned. sm_90: one vector reduction (red.global.add.v4.f32, PTX ISA 8.1); older: four scalar
 * ones. PTX ISA "Parallel Synchronization and Communication Instructions: red". */
CUDADENT_DEVICE void cd_red_add_f32x4(float *dst, float x, float y, float z, float w) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "f"(x), "f"(y), "f"(z),
               "f"(w));
#else
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(dst), "f"(x));
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(dst + 1), "f"(y));
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(dst + 2), "f"(z));
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(dst + 3), "f"(w));
#endif
}

#endif /* CUDADENT_SM80_PTX_SM80_CUH */
