/*
 * bwd_wide3_parts.cuh - the pieces of the Hopper backward's E3 kernel (bwd_wide3_kernel.cuh: the
 * 192 / 128 row in FA3's d192 structure, 64 query rows x 96 keys, three MMA warpgroups; config.cuh
 * SM90_BWD_WIDE3, on in the library): its tile, its shared-memory layout (P and dS in gemm.cuh's
 * 64-byte-swizzle operand layouts), and the epilogue's transposing staging and global stores of the
 * 96-key dK / dV tiles (the set-up is bwd_parts.cuh's cd_sm90_bwd_setup, 12 consumer warps). The
 * layouts are explained in bwd_wide3_kernel.cuh's opening comment.
 */
#ifndef CUDADENT_SM90_BWD_WIDE3_PARTS_CUH
#define CUDADENT_SM90_BWD_WIDE3_PARTS_CUH

#include "kernels/sm90/bwd_kernel.cuh"

/* The tile: BLOCK_M query rows an iteration, BLOCK_N keys a CTA (32 a consumer warpgroup for S and
 * dP), CONSUMERS MMA warpgroups; setmaxnreg budgets (128 x 24 + 384 x 160 = 64512 <= 512 x 128, reg_budget.cuh).
 * dQ: every consumer stages its slab and bulk-reduces it (session 27: +4.8-8.1% over red.global
 * from registers, docs/kernels/sm90_bwd_wide_next.md section 8); so that the 48 KiB staging fits,
 * P and dS have one buffer, freed by a second named barrier (bwd_wide3_smem's budget). */
struct cd_sm90_bwd_wide3_tile {
  static constexpr int DQK = 192, DV = 128;
  static constexpr int BLOCK_M = 64, BLOCK_N = 96, STAGES = 2, CONSUMERS = 3;
  static constexpr int KEYS_WG = BLOCK_N / CONSUMERS; /* S / dP columns of a warpgroup */
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 160;
  static constexpr int THREADS = 128 * (1 + CONSUMERS), MMA_THREADS = 128 * CONSUMERS;
  static_assert(cd_sm90_regs_fit(PRODUCER_REGS, CONSUMERS, CONSUMER_REGS), "setmaxnreg budgets (reg_budget.cuh)");
  static_assert(KEYS_WG == 32, "a warpgroup's keys are one 64-byte-swizzle column block of P / dS");
};

/* Shared memory (16-bit elements; every block 1024-byte aligned):
 *   K [3 slabs][96 keys][64], V [2][96][64]          128-byte swizzle, loaded once
 *   Q [STAGES][3][64][64], dO [STAGES][2][64][64]    128-byte swizzle, the ring
 *   P, dS [3 key blocks][64 queries][32 keys]   64-byte swizzle (4096 B a key block)
 *   LSE2, delta [STAGES][64] fp32
 *   dQ staging [3 consumers][4 warps][16 rows][64] fp32
 *   mbarriers kv_full, q_full[STAGES], q_empty[STAGES]
 * Bytes: K 36864 + V 24576 + Q 49152 + dO 32768 + rows 1024 + barriers 40 + the 1024 of slack =
 * 145448, + P and dS 24576, + staging 49152 = 219176 (a second P / dS buffer would need 243752, over
 * the 232448 of sm_90). */
struct cd_sm90_bwd_wide3_smem {
  typedef cd_sm90_bwd_wide3_tile T;
  static constexpr int BM = T::BLOCK_M, BN = T::BLOCK_N, ST = T::STAGES;
  static constexpr int SQK = T::DQK / 64, SV = T::DV / 64;
  static constexpr int K_SLAB = BN * 128, V_SLAB = BN * 128, QS_SLAB = BM * 128; /* bytes */
  static constexpr int K_BYTES = SQK * K_SLAB, V_BYTES = SV * V_SLAB;
  static constexpr int Q_BYTES = SQK * QS_SLAB, DO_BYTES = SV * QS_SLAB; /* one stage */
  static constexpr int PDS_COL_BYTES = BM * 64;                          /* 32 keys x 64 rows */
  static constexpr int PDS_BYTES = T::CONSUMERS * PDS_COL_BYTES;         /* one P or dS */
  static constexpr int ROW_BYTES = BM * 4;
  static constexpr int K_OFF = 0;
  static constexpr int V_OFF = K_OFF + K_BYTES;
  static constexpr int Q_OFF = V_OFF + V_BYTES;
  static constexpr int DO_OFF = Q_OFF + ST * Q_BYTES;
  static constexpr int P_OFF = DO_OFF + ST * DO_BYTES;
  static constexpr int DS_OFF = P_OFF + PDS_BYTES;
  static constexpr int LSE_OFF = DS_OFF + PDS_BYTES;
  static constexpr int DELTA_OFF = LSE_OFF + ST * ROW_BYTES;
  static constexpr int DQ_WARP_BYTES = 16 * 64 * 4; /* a warp's 16 rows of a 64-column dQ slab */
  static constexpr int DQ_OFF = (DELTA_OFF + ST * ROW_BYTES + 1023) / 1024 * 1024;
  static constexpr int DQ_BYTES = T::CONSUMERS * 4 * DQ_WARP_BYTES;
  static constexpr int BAR_OFF = DQ_OFF + DQ_BYTES;
  static constexpr int NUM_BARS = 1 + 2 * ST;
  static constexpr int BYTES = BAR_OFF + 8 * NUM_BARS + 1024; /* + slack to align the base */
  static_assert(K_SLAB % 1024 == 0 && QS_SLAB % 1024 == 0 && P_OFF % 1024 == 0 && DS_OFF % 1024 == 0,
                "swizzle atoms");
  static_assert(BYTES == 219176, "the budget in the comment above");
  static_assert(BYTES + 2 * PDS_BYTES > 227 * 1024, "one P / dS buffer only where two do not fit");
  static_assert(BN * T::DQK * 2 <= ST * Q_BYTES && BN * T::DV * 2 <= ST * DO_BYTES, "epilogue staging");
  static_assert(BYTES <= 227 * 1024, "shared memory over the sm_90 limit");
};

/* P / dS as operands: gemm.cuh's cd_sm90_k_major_sw64 (A of dQ = dS K: M = queries, K = keys) and
 * cd_sm90_mn_major_sw64 (B of dV^T = dO^T P, dK^T = Q^T dS: K = queries, N = keys), [64 queries][96
 * keys] in column blocks of 32 keys, PDS_COL_BYTES apart, rows of 64 bytes. */

/* A transposed accumulator (rows: 64 D columns [64 SLAB, +64) of dK or dV; columns: the NACC / 2
 * keys, 96 for E3, 80 for E5 (bwd_wide5_kernel.cuh); wgmma m64n(NACC / 2)'s fragment, element
 * 4j + 2r + e at D row 16 warp + lane / 4 + 8 r, key 8 j + 2 (lane % 4) + e), times `scale`, to the
 * staging tile [keys][D] (rows of D * 2 bytes, 16-byte chunk c of key row k at chunk c ^ (k % 8)),
 * by stmatrix.trans: matrix (j, r) lands as keys [8 j, +8) x D chunk 8 SLAB + 2 warp + r. */
template <int D, int SLAB, bool kFp16, int NACC>
__device__ __forceinline__ void cd_sm90_bwd_wide3_stage_t(const float (&acc)[NACC], float scale, uint32_t stage,
                                                          int warp, int lane) {
  static_assert(NACC % 8 == 0, "key groups in pairs (stmatrix.x4)");
  const int c = 8 * SLAB + 2 * warp + ((lane >> 3) & 1);
#pragma unroll
  for (int j = 0; j < NACC / 4; j += 2) {
    const int key = 8 * (j + (lane >> 4)) + (lane & 7);
    uint32_t r[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) /* matrix q: (j + q / 2, r = q % 2) */
      r[q] = cd_pack2<kFp16>(acc[4 * (j + q / 2) + 2 * (q % 2)] * scale, acc[4 * (j + q / 2) + 2 * (q % 2) + 1] * scale);
    cd_stmatrix_x4_trans(stage + key * (D * 2) + ((c ^ (key & 7)) << 4), r[0], r[1], r[2], r[3]);
  }
}

/* Rows [0, ROWS) x 16-byte chunks [0, cpr_real) of a staged [ROWS][CPR * 8] tile to global memory
 * (keys past seqlen_k not written), by the THREADS consumer threads (ct: the thread's index among
 * them). bwd_wide_kernel.cuh's cd_sm90_bwd_wide_store with the thread index passed in: one helper
 * for both moved this kernel's store loop in SASS (session 26), so each keeps its own. */
template <int CPR, int ROWS, int THREADS>
__device__ __forceinline__ void cd_sm90_bwd_wide3_store(uint32_t stage, void *dst, int64_t ss, int k0, int seqlen_k,
                                                        int cpr_real, int ct) {
  for (int idx = ct; idx < ROWS * CPR; idx += THREADS) {
    const int row = idx / CPR, c = idx % CPR, key = k0 + row;
    if (key >= seqlen_k) break; /* rows are in order: the rest are past it too */
    if (c >= cpr_real) continue;
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(stage + row * (CPR * 16) + ((c ^ (row & 7)) << 4))
                 : "memory");
    *reinterpret_cast<uint4 *>((uint16_t *)dst + (int64_t)key * ss + 8 * c) = v;
  }
}

#endif /* CUDADENT_SM90_BWD_WIDE3_PARTS_CUH */
