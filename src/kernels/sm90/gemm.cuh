/*
 * gemm.cuh - one warpgroup's matrix product D[64, N] (+)= A[64, K] B[K, N] on wgmma, with its
 * operands described by their shared-memory layout (or A from registers), independent of any
 * kernel's tile struct.
 *
 * Usage (S = Q K^T and O += P V of the forward; a backward's five products likewise):
 *   typedef cd_sm90_k_major<BLOCK_M> QOp;        // Q: [D/64 slabs][BLOCK_M rows][64], K contiguous
 *   typedef cd_sm90_k_major<BLOCK_N> KOp;        // K: [D/64][BLOCK_N][64]
 *   const uint64_t dq = QOp::desc(sQ + 64 * w * 128), dk = KOp::desc(sK);
 *   float s[BLOCK_N / 2];                        // accumulator fragment (below)
 *   cd_wgmma_fence();
 *   cd_sm90_gemm_ss<BLOCK_N, D, kFp16, false, QOp, KOp>(s, dq, dk);   // S = Q K^T (no accumulate)
 *   cd_wgmma_commit(); cd_wgmma_wait<0>(); cd_sm90_fence_regs(s);
 *   uint32_t p[BLOCK_N / 4]; cd_sm90_acc_to_a<BLOCK_N, kFp16>(s, p); // P, 16-bit, as an A operand
 *   cd_sm90_gemm_rs<D, BLOCK_N, kFp16, true, cd_sm90_mn_major>(o, p, cd_sm90_mn_major::desc(sV,
 *       BLOCK_N * 128));                        // O += P V, V [D/64][BLOCK_N][64]: MN-major B
 * A transposed operand is the same buffer read the other way: with Q stored as above, Q as the B
 * operand of dK += dS^T Q (K = query rows, N = D) is cd_sm90_mn_major with LBO = BLOCK_M * 128
 * (the distance between its 64-column slabs); dO^T, dS^T, P^T likewise. The caller issues the
 * fences, commits and waits (ptx_sm90.cuh), so that it can overlap products.
 *
 * Operand layouts: 16-bit elements, 128-byte swizzle, slabs of 64 elements (128 bytes) a row, each
 * slab 1024-byte aligned (the swizzle atom is 8 rows of 128 bytes: a TMA box 64 wide writes it).
 *   K-major (rows are M or N, K contiguous in a row): slab j holds K columns [64 j, 64 j + 64)
 *     of all SLAB_ROWS rows; descriptor LBO unused (1), SBO 1024. K-step kk (16 elements of K)
 *     starts in slab kk / 4 at byte (kk % 4) * 32 of its rows. M (or N) offsets inside the slab
 *     go in the descriptor's start (multiples of 8 rows).
 *   MN-major (rows are K, M or N contiguous): slab j holds M/N columns [64 j, 64 j + 64) of all
 *     K rows; LBO = the distance between slabs, SBO 1024; k-step kk is rows [16 kk, 16 kk + 16),
 *     2048 bytes on.
 * Accumulator fragment of wgmma m64nN (PTX ISA 9.7.15.5.1.1, per warp 16 rows): a thread holds
 * N / 2 fp32; element 4j + 2r + e is row 16 warp + lane / 4 + 8 r, column 8 j + 2 (lane % 4) + e.
 * As an A operand (rs) the same fragment packed in 16-bit pairs: N / 4 registers, 4 per k-step.
 * M is 64 (one warpgroup); N is any width cd_wgmma has (ptx_sm90_wgmma.cuh); K a multiple of 16.
 */
#ifndef CUDADENT_SM90_GEMM_CUH
#define CUDADENT_SM90_GEMM_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "kernels/sm90/ptx_sm90.cuh"

/* ---- operand layouts (above) ------------------------------------------------------------------ */

template <int SLAB_ROWS> struct cd_sm90_k_major {
  static constexpr int TRANS = 0; /* wgmma imm-trans */
  static __device__ __forceinline__ uint64_t desc(uint32_t smem_addr) {
    return cd_gmma_desc_sw128(smem_addr, 1, 1024);
  }
  static __device__ __forceinline__ uint64_t k_step(uint64_t desc, int kk) {
    return cd_gmma_desc_add(desc, (kk / 4) * SLAB_ROWS * 128 + (kk % 4) * 32);
  }
};

struct cd_sm90_mn_major {
  static constexpr int TRANS = 1;
  static __device__ __forceinline__ uint64_t desc(uint32_t smem_addr, uint32_t slab_bytes) {
    return cd_gmma_desc_sw128(smem_addr, slab_bytes, 1024);
  }
  static __device__ __forceinline__ uint64_t k_step(uint64_t desc, int kk) {
    return cd_gmma_desc_add(desc, kk * 2048);
  }
};

/* The 64- and 32-byte swizzles (cd_gmma_desc_swizzled codes 2 and 3; CUTLASS's canonical SW64 /
 * SW32 layouts): operands whose rows are narrower than 128 bytes, stored as column blocks of 32
 * (64-byte) or 16 (32-byte) 16-bit elements, COL_BYTES apart, each block's rows 64 or 32 bytes
 * (8-row atoms of 512 / 256 bytes, as a TMA box of that width with CU_TENSOR_MAP_SWIZZLE_64B / _32B
 * writes them). Used by the 192 / 128 row's E3 kernel (P / dS, 64-byte), the 256 / 256 row's E5
 * kernel (P / dS, 32-byte) and the 96 / 96 row (Q, dO, V 64-byte, K 32-byte; bwd_parts.cuh
 * cd_sm90_bwd_ops).
 *   K-major (rows are M or N, K contiguous): k-step kk (16 elements) is column block kk / 2 at byte
 *     (kk % 2) * 32 of its rows (64-byte), column block kk, whole rows (32-byte); SBO = the atom
 *     (8-row groups), LBO unused.
 *   MN-major (rows are K): M or N crosses column blocks (LBO = COL_BYTES), SBO = the atom (8 K
 *     rows); k-step kk is rows [16 kk, +16), 1024 (64-byte) or 512 (32-byte) bytes on. */
template <int COL_BYTES> struct cd_sm90_k_major_sw64 {
  static constexpr int TRANS = 0;
  static __device__ __forceinline__ uint64_t desc(uint32_t smem_addr) {
    return cd_gmma_desc_swizzled<2>(smem_addr, 1, 512);
  }
  static __device__ __forceinline__ uint64_t k_step(uint64_t desc, int kk) {
    return cd_gmma_desc_add(desc, (kk / 2) * COL_BYTES + (kk % 2) * 32);
  }
};
template <int COL_BYTES> struct cd_sm90_mn_major_sw64 {
  static constexpr int TRANS = 1;
  static __device__ __forceinline__ uint64_t desc(uint32_t smem_addr) {
    return cd_gmma_desc_swizzled<2>(smem_addr, COL_BYTES, 512);
  }
  static __device__ __forceinline__ uint64_t k_step(uint64_t desc, int kk) { return cd_gmma_desc_add(desc, kk * 1024); }
};
template <int COL_BYTES> struct cd_sm90_k_major_sw32 {
  static constexpr int TRANS = 0;
  static __device__ __forceinline__ uint64_t desc(uint32_t smem_addr) {
    return cd_gmma_desc_swizzled<3>(smem_addr, 1, 256);
  }
  static __device__ __forceinline__ uint64_t k_step(uint64_t desc, int kk) {
    return cd_gmma_desc_add(desc, kk * COL_BYTES);
  }
};
template <int COL_BYTES> struct cd_sm90_mn_major_sw32 {
  static constexpr int TRANS = 1;
  static __device__ __forceinline__ uint64_t desc(uint32_t smem_addr) {
    return cd_gmma_desc_swizzled<3>(smem_addr, COL_BYTES, 256);
  }
  static __device__ __forceinline__ uint64_t k_step(uint64_t desc, int kk) { return cd_gmma_desc_add(desc, kk * 512); }
};

/* desc moved by byte_offset where its LBO points at one fixed region (an extra slab shared by
 * every stage and k-step: the forward's ones, fwd_tiles.cuh): the start grows by what the LBO
 * shrinks, both fields of the low word in one 32-bit add (start + off/16, LBO - off/16; neither
 * over- nor underflows). */
__device__ __forceinline__ uint64_t cd_sm90_desc_add_fixed_lbo(uint64_t desc, uint32_t byte_offset) {
  const uint32_t k = byte_offset >> 4;
  const uint32_t lo = (uint32_t)desc + k - (k << 16), hi = (uint32_t)(desc >> 32);
  return ((uint64_t)hi << 32) | lo;
}

/* MN-major whose LBO reaches a fixed region (above) */
struct cd_sm90_mn_major_fixed_lbo {
  static constexpr int TRANS = 1;
  static __device__ __forceinline__ uint64_t k_step(uint64_t desc, int kk) {
    return cd_sm90_desc_add_fixed_lbo(desc, kk * 2048);
  }
};

/* ---- the products ----------------------------------------------------------------------------- */

/* d[64, N] (+)= A[64, K] B[K, N], A and B in shared memory (OpA, OpB: layouts above). kAccumulate
 * false: d = A B (the first k-step overwrites d). */
template <int N, int K, bool kFp16, bool kAccumulate, class OpA, class OpB>
__device__ __forceinline__ void cd_sm90_gemm_ss(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b) {
  static_assert(K % 16 == 0, "K: whole k-steps");
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    const uint64_t da = OpA::k_step(desc_a, kk);
    const uint64_t db = OpB::k_step(desc_b, kk);
    cd_wgmma<N>::template ss<kFp16, OpA::TRANS, OpB::TRANS>(d, da, db, kAccumulate || kk > 0);
  }
}

/* d[64, N] (+)= A[64, K] B[K, N], A from registers (a[4 kk .. 4 kk + 3]: k-step kk, the
 * accumulator fragment of a 64 x K product packed in 16-bit pairs: cd_sm90_acc_to_a), B in shared
 * memory (OpB). */
template <int N, int K, bool kFp16, bool kAccumulate, class OpB>
__device__ __forceinline__ void cd_sm90_gemm_rs(float (&d)[N / 2], const uint32_t (&a)[K / 4],
                                                uint64_t desc_b) {
  static_assert(K % 16 == 0, "K: whole k-steps");
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    const uint32_t ak[4] = {a[4 * kk], a[4 * kk + 1], a[4 * kk + 2], a[4 * kk + 3]};
    const uint64_t db = OpB::k_step(desc_b, kk);
    cd_wgmma<N>::template rs<kFp16, OpB::TRANS>(d, ak, db, kAccumulate || kk > 0);
  }
}

/* ---- accumulators ----------------------------------------------------------------------------- */

/* cd_reg_fence on every register of an accumulator or A operand: call after cd_wgmma_wait and
 * before cd_wgmma_fence, so that the compiler neither reads a result early nor moves a write past
 * an issue */
template <int N, typename T>
__device__ __forceinline__ void cd_sm90_fence_regs(T (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) cd_reg_fence(r[i]);
}

/* An fp32 accumulator [64, N] as the 16-bit A operand of a following rs product (K = N). */
template <int N, bool kFp16>
__device__ __forceinline__ void cd_sm90_acc_to_a(const float (&s)[N / 2], uint32_t (&p)[N / 4]) {
#pragma unroll
  for (int i = 0; i < N / 4; ++i) p[i] = cd_pack2<kFp16>(s[2 * i], s[2 * i + 1]);
}

/* The first K elements of a register array, as an array: the accumulator of wgmma m64n(2K) is
 * the first K registers of m64nN's (element 4j + 2r + e is column 8j + 2 (lane % 4) + e in
 * both), and the A operand of keys [0, 2K) the first K / 2 registers of the N-wide one. */
template <int K, typename T, int N>
__device__ __forceinline__ T (&cd_sm90_head(T (&a)[N]))[K] {
  static_assert(K <= N, "cd_sm90_head: more than the array");
  return *reinterpret_cast<T(*)[K]>(&a[0]);
}

#endif /* CUDADENT_SM90_GEMM_CUH */
