/*
 * bwd_wide_sdp_split.cuh - experiment E4 of docs/kernels/sm90_bwd_wide_next.md for the wide rows'
 * main kernel (bwd_wide_kernel.cuh), behind the dev knob SM90_BWD_WIDE_SDP_SPLIT (config.cuh;
 * default 0: not compiled in; not measured): a block's S^T and dP^T split by product instead of by
 * query.
 *
 * Old path (knob 0): consumer w computes S^T_w = K Q_w^T and dP^T_w = V dO_w^T for its 32 queries
 * (two m64n32 products, so each consumer reads all of K and all of V as A), and its half of P^T and
 * dS^T. Here (knob 1), per block:
 *   consumer 0: S^T = K Q^T, all 64 queries (m64n64, K = D_QK); P^T = exp2(S^T scale_log2 - LSE2),
 *     the masks as the old path; P^T (16-bit) to the P^T buffer by stmatrix; fence.proxy.async;
 *     barrier.arrive CD_SM90_BAR_BWD_P (256: its 128 threads arrive, consumer 1's wait)
 *   consumer 1: dP^T = V dO^T, all 64 queries (m64n64, K = D_V); barrier.sync CD_SM90_BAR_BWD_P;
 *     P^T read back by ldmatrix (the inverse of consumer 0's stmatrix: the same addresses and
 *     registers, so P^T arrives in dP^T's accumulator fragment layout); dS^T = P^T (dP^T - delta)
 *     to the dS^T buffer by stmatrix; fence.proxy.async
 * then the caller's CD_SM90_BAR_BWD_DS (both P^T and dS^T there) and the slab products as before.
 * K and V are read once a block, not twice (-64 KiB of operand reads a block at d256, -40 KiB at
 * 192 / 128, + 8 KiB of ldmatrix); dS^T is formed from the 16-bit P^T (the old path: fp32 P^T).
 * Deterministic kernels take it too (their difference is the dQ reduce only); the softcap kernels
 * do not (their dS^T needs t = tanh(S^T ...) beside dP^T: the old path).
 *
 * Buffers (double-buffered as the old path: block i uses buffer i % 2, rewritten in block i + 2).
 * Block i's readers of buffer i % 2: consumer 1's ldmatrix of P^T (before its arrival at block i's
 * DS barrier) and both consumers' dV, dK, dQ products (completed at each one's block-i wait<0>,
 * before its arrival at block i + 1's DS barrier). The writers of block i + 2: consumer 0's P^T
 * stores and consumer 1's dS^T stores, each after it passed block i + 1's DS barrier, which
 * completes only after both consumers arrived there: after every block-i reader. The P barrier:
 * consumer 0 arrives for block i + 1 only after passing block i's DS barrier, which needs consumer
 * 1's arrival there, after its wait on block i's P barrier: the barrier never holds two blocks'
 * arrivals. P^T of block i is visible to consumer 1's ldmatrix by the barrier (barrier.arrive /
 * barrier.sync order the arriving threads' prior shared-memory writes before the waiters' reads);
 * to the wgmma reads (async proxy) by the writer's fence.proxy.async before its barriers, as before.
 */
#ifndef CUDADENT_SM90_BWD_WIDE_SDP_SPLIT_CUH
#define CUDADENT_SM90_BWD_WIDE_SDP_SPLIT_CUH

#include <stdint.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "kernels/common/ptx.cuh"          /* cd_pack2, cd_exp2 */
#include "kernels/sm90/bwd_parts.cuh"      /* cd_sm90_bwd_args */
#include "kernels/sm90/gemm.cuh"
#include "kernels/sm90/named_barriers.cuh" /* CD_SM90_BAR_BWD_P */
#include "kernels/sm90/ptx_sm90.cuh"

/* ldmatrix.sync.aligned.m8n8.x4.shared.b16 (PTX ISA 9.7.9.x): the inverse of cd_stmatrix_x4 (thread
 * t gives the address of row t % 8 of matrix t / 8; r_i receives its two elements of matrix i, row
 * t / 4, columns 2 (t % 4), +1); "memory": not moved above the barrier that publishes the data. */
__device__ __forceinline__ void cd_sm90_ldmatrix_x4(uint32_t addr, uint32_t &r0, uint32_t &r1, uint32_t &r2,
                                                    uint32_t &r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
               : "r"(addr)
               : "memory");
}

/* cd_pack2's inverse: the low and high 16-bit halves of x as floats (exact) */
template <bool kFp16> __device__ __forceinline__ float2 cd_sm90_unpack2(uint32_t x) {
  if constexpr (kFp16)
    return make_float2(__half2float(__ushort_as_half((unsigned short)(x & 0xffffu))),
                       __half2float(__ushort_as_half((unsigned short)(x >> 16))));
  else
    return make_float2(__uint_as_float(x << 16), __uint_as_float(x & 0xffff0000u));
}

/* Consumer W's part of block (stage s, buffer buf, query block m) up to the DS barrier (the file's
 * comment). L: cd_sm90_bwd_wide_smem<DQK, DV>; base: its 1024-aligned base (gbase the same as a
 * pointer); warp, lane: this thread's in its consumer warpgroup. */
template <class L, int DQK, int DV, bool kFp16, int W>
__device__ __forceinline__ void cd_sm90_bwd_wide_sdp_split(const cd_sm90_bwd_args &args, uint32_t base,
                                                           const uint8_t *gbase, uint32_t s, uint32_t buf, int m,
                                                           int k0, bool key_tail, int warp, int lane) {
  constexpr int BM = L::BM, BN = L::BN;
  static_assert(BM == 64 && BN == 64, "one m64n64 product: 64 keys x 64 queries");
  /* the stmatrix / ldmatrix row of this lane: key, and chunk j + jh of a pair (j, j + 1) of 16-byte
   * query chunks (8 queries each); 128-byte swizzle: chunk c of key row at c ^ (key % 8) */
  const int key = 16 * warp + ((lane >> 3) & 1) * 8 + (lane & 7), jh = lane >> 4;
  const uint32_t sP = base + L::P_OFF + buf * L::PDS_BYTES, sDS = base + L::DS_OFF + buf * L::PDS_BYTES;
  /* [64 keys, 64 queries]: element 4j + 2r + e is key 16 warp + lane / 4 + 8r, query 8j + 2 (lane % 4)
   * + e; packed x16[2j + r] = elements 4j + 2r, +1 (the stmatrix / ldmatrix register of matrix
   * (key half r, chunk j)) */
  float acc[32];
  uint32_t x16[16];
  cd_wgmma_fence();
  if constexpr (W == 0) {
    /* S^T = K Q^T: A = K (K-major, 64 keys), B = Q of the stage (K-major, 64 rows) */
    cd_sm90_gemm_ss<64, DQK, kFp16, false, cd_sm90_k_major<BN>, cd_sm90_k_major<BM>>(
      acc, cd_gmma_desc_sw128(base + L::K_OFF, 1, 1024), cd_gmma_desc_sw128(base + L::Q_OFF + s * L::Q_BYTES, 1, 1024));
    cd_wgmma_commit();
    const float *lse_s = (const float *)(gbase + L::LSE_OFF + s * L::ROW_BYTES);
    const int shift = args.seqlen_k - args.seqlen_q;
    const int r0 = m * BM, rl = r0 + BM - 1;
    const bool need_mask = key_tail ||
                           (args.window_right >= 0 && k0 + BN - 1 > r0 + shift + args.window_right) ||
                           (args.window_left >= 0 && k0 < rl + shift - args.window_left);
    cd_wgmma_wait<0>();
    cd_sm90_fence_regs(acc);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 l2 = *reinterpret_cast<const float2 *>(lse_s + 8 * j + 2 * (lane & 3));
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        acc[4 * j + 2 * r] = cd_exp2(fmaf(acc[4 * j + 2 * r], args.scale_log2, -l2.x));
        acc[4 * j + 2 * r + 1] = cd_exp2(fmaf(acc[4 * j + 2 * r + 1], args.scale_log2, -l2.y));
      }
    }
    if (need_mask) {
      const int key_row0 = 16 * warp + lane / 4;
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int kk = k0 + key_row0 + 8 * r;
            const int d = kk - (r0 + 8 * j + 2 * (lane & 3) + e) - shift;
            const bool vis = kk < args.seqlen_k && (args.window_left < 0 || d >= -args.window_left) &&
                             (args.window_right < 0 || d <= args.window_right);
            if (!vis) acc[4 * j + 2 * r + e] = 0.f;
          }
    }
#pragma unroll
    for (int i = 0; i < 16; ++i) x16[i] = cd_pack2<kFp16>(acc[2 * i], acc[2 * i + 1]);
#pragma unroll
    for (int j = 0; j < 8; j += 2)
      cd_stmatrix_x4(sP + key * 128 + (((j + jh) ^ (key & 7)) << 4), x16[2 * j], x16[2 * j + 1], x16[2 * j + 2],
                     x16[2 * j + 3]);
    cd_fence_proxy_async_smem(); /* stmatrix (generic proxy) -> the dV products' reads (async proxy) */
    cd_named_bar_arrive_any_pc(CD_SM90_BAR_BWD_P, 256); /* P^T there: consumer 1 may read it */
  } else {
    /* dP^T = V dO^T: A = V (K-major, 64 keys), B = dO of the stage (K-major, 64 rows) */
    cd_sm90_gemm_ss<64, DV, kFp16, false, cd_sm90_k_major<BN>, cd_sm90_k_major<BM>>(
      acc, cd_gmma_desc_sw128(base + L::V_OFF, 1, 1024),
      cd_gmma_desc_sw128(base + L::DO_OFF + s * L::DO_BYTES, 1, 1024));
    cd_wgmma_commit();
    const float *delta_s = (const float *)(gbase + L::DELTA_OFF + s * L::ROW_BYTES);
    cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_P, 256); /* consumer 0's P^T of this block is there */
#pragma unroll
    for (int j = 0; j < 8; j += 2)
      cd_sm90_ldmatrix_x4(sP + key * 128 + (((j + jh) ^ (key & 7)) << 4), x16[2 * j], x16[2 * j + 1],
                          x16[2 * j + 2], x16[2 * j + 3]);
    cd_wgmma_wait<0>(); /* dP^T done */
    cd_sm90_fence_regs(acc);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 dl = *reinterpret_cast<const float2 *>(delta_s + 8 * j + 2 * (lane & 3));
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float2 p = cd_sm90_unpack2<kFp16>(x16[2 * j + r]);
        x16[2 * j + r] = cd_pack2<kFp16>(p.x * (acc[4 * j + 2 * r] - dl.x), p.y * (acc[4 * j + 2 * r + 1] - dl.y));
      }
    }
#pragma unroll
    for (int j = 0; j < 8; j += 2)
      cd_stmatrix_x4(sDS + key * 128 + (((j + jh) ^ (key & 7)) << 4), x16[2 * j], x16[2 * j + 1], x16[2 * j + 2],
                     x16[2 * j + 3]);
    cd_fence_proxy_async_smem(); /* stmatrix (generic proxy) -> the dK, dQ products' reads (async proxy) */
  }
}

#endif /* CUDADENT_SM90_BWD_WIDE_SDP_SPLIT_CUH */
