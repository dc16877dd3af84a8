/*
 * bwd_wide5_parts.cuh - the pieces of the Hopper backward's E5 kernel (bwd_wide5_kernel.cuh: the
 * 256 / 256 row in FA3's d256 structure, 64 query rows x 80 keys, two MMA warpgroups; config.cuh
 * SM90_BWD_WIDE5, on in the library): its tile, its shared-memory layout (P and dS in gemm.cuh's
 * 32-byte-swizzle operand layouts), the set-up (separate Q and dO rings) and stmatrix.x2. The epilogue reuses
 * bwd_wide3_parts.cuh's staging by stmatrix.trans and its global stores. The layouts are explained
 * in bwd_wide5_kernel.cuh's opening comment.
 */
#ifndef CUDADENT_SM90_BWD_WIDE5_PARTS_CUH
#define CUDADENT_SM90_BWD_WIDE5_PARTS_CUH

#include "kernels/sm90/bwd_wide3_parts.cuh"

/* The tile: BLOCK_M query rows an iteration, BLOCK_N keys a CTA (KEYS_WG a consumer warpgroup for
 * S and dP; D_WG = 128 of the 256 D rows of dK^T / dV^T and D columns of dQ a warpgroup, as two
 * 64-wide slabs); Q_STAGES Q (+ LSE2) stages, DO_STAGES dO (+ delta) stages (FA3's 2 / 1: two dO
 * stages do not fit beside two P / dS buffers); PDS_BUFS P / dS buffers (two: one named barrier a
 * block); setmaxnreg budgets (128 x 24 + 256 x 240 = 64512 <= 384 x 168, reg_budget.cuh). dQ leaves by red.global
 * from registers (a staging for the bulk engine, E3's path, measured 7-10% slower here in
 * session 28: docs/kernels/sm90_bwd_wide_next.md section 10). */
struct cd_sm90_bwd_wide5_tile {
  static constexpr int DQK = 256, DV = 256;
  static constexpr int BLOCK_M = 64, BLOCK_N = 80, CONSUMERS = 2;
  static constexpr int Q_STAGES = 2, DO_STAGES = 1, PDS_BUFS = 2;
  static constexpr int KEYS_WG = BLOCK_N / CONSUMERS; /* S / dP columns of a warpgroup */
  static constexpr int D_WG = DQK / CONSUMERS;        /* dK^T / dV^T rows, dQ columns of a warpgroup */
  static constexpr int SLABS_WG = D_WG / 64;          /* 64-wide slabs of those */
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
  static constexpr int THREADS = 128 * (1 + CONSUMERS), MMA_THREADS = 128 * CONSUMERS;
  static_assert(cd_sm90_regs_fit(PRODUCER_REGS, CONSUMERS, CONSUMER_REGS), "setmaxnreg budgets (reg_budget.cuh)");
  static_assert(DQK == DV && SLABS_WG == 2, "the row 256 / 256: two 64-wide slabs a warpgroup");
  static_assert(KEYS_WG % 8 == 0 && (KEYS_WG / 8) % 2 == 1, "a warpgroup's key groups: pairs and one more");
};

/* Shared memory (16-bit elements; every block 1024-byte aligned):
 *   K [4 slabs][80 keys][64], V [4][80][64]        128-byte swizzle, loaded once (80 rows = 10 atoms)
 *   Q [Q_STAGES][4][64][64], dO [DO_STAGES][4][64][64]   128-byte swizzle, the two rings
 *   P, dS [PDS_BUFS][5 key blocks][64 queries][16 keys]  32-byte swizzle (2048 B a key block)
 *   LSE2 [Q_STAGES][64], delta [DO_STAGES][64] fp32
 *   mbarriers kv_full, q_full[Q_STAGES], q_empty[Q_STAGES], do_full[DO_STAGES], do_empty[DO_STAGES]
 * The epilogue stages dK in K's place and dV in V's ([80 keys][256], 40960 B each).
 * Bytes: K 40960 + V 40960 + Q 65536 + dO 32768 + LSE2 / delta 768 + barriers 56 + the 1024 of
 * slack = 182072, + P and dS 20480 a buffer: 223032 with two buffers (of the sm_90 232448). */
struct cd_sm90_bwd_wide5_smem {
  typedef cd_sm90_bwd_wide5_tile T;
  static constexpr int BM = T::BLOCK_M, BN = T::BLOCK_N, QST = T::Q_STAGES, DST = T::DO_STAGES;
  static constexpr int SQK = T::DQK / 64, SV = T::DV / 64;
  static constexpr int K_SLAB = BN * 128, V_SLAB = BN * 128, QS_SLAB = BM * 128; /* bytes */
  static constexpr int K_BYTES = SQK * K_SLAB, V_BYTES = SV * V_SLAB;
  static constexpr int Q_BYTES = SQK * QS_SLAB, DO_BYTES = SV * QS_SLAB; /* one stage */
  static constexpr int PDS_KEYS_COL = 16;                                /* keys a 32-byte row */
  static constexpr int PDS_COLS = BN / PDS_KEYS_COL;                     /* key blocks */
  static constexpr int PDS_COL_BYTES = BM * 32;                          /* 16 keys x 64 rows */
  static constexpr int PDS_BYTES = PDS_COLS * PDS_COL_BYTES;             /* one P or dS */
  static constexpr int ROW_BYTES = BM * 4;
  static constexpr int K_OFF = 0;
  static constexpr int V_OFF = K_OFF + K_BYTES;
  static constexpr int Q_OFF = V_OFF + V_BYTES;
  static constexpr int DO_OFF = Q_OFF + QST * Q_BYTES;
  static constexpr int P_OFF = DO_OFF + DST * DO_BYTES;
  static constexpr int DS_OFF = P_OFF + T::PDS_BUFS * PDS_BYTES;
  static constexpr int LSE_OFF = DS_OFF + T::PDS_BUFS * PDS_BYTES;
  static constexpr int DELTA_OFF = LSE_OFF + QST * ROW_BYTES;
  static constexpr int BAR_OFF = DELTA_OFF + DST * ROW_BYTES;
  static constexpr int BAR_KV = BAR_OFF, BAR_Q_FULL = BAR_KV + 8, BAR_Q_EMPTY = BAR_Q_FULL + 8 * QST;
  static constexpr int BAR_DO_FULL = BAR_Q_EMPTY + 8 * QST, BAR_DO_EMPTY = BAR_DO_FULL + 8 * DST;
  static constexpr int NUM_BARS = 1 + 2 * QST + 2 * DST;
  static constexpr int BYTES = BAR_OFF + 8 * NUM_BARS + 1024; /* + slack to align the base */
  static_assert(BN % PDS_KEYS_COL == 0, "P / dS: whole 16-key blocks");
  static_assert(K_SLAB % 1024 == 0 && QS_SLAB % 1024 == 0 && P_OFF % 1024 == 0 && DS_OFF % 1024 == 0 &&
                    PDS_BYTES % 1024 == 0,
                "swizzle atoms");
  static_assert((T::KEYS_WG * 128) % 1024 == 0, "a warpgroup's K / V rows start on a swizzle atom");
  static_assert(BN * T::DQK * 2 <= K_BYTES && BN * T::DV * 2 <= V_BYTES, "epilogue staging");
  static_assert(BYTES == 223032, "the budget in the comment above");
  static_assert(BYTES <= 227 * 1024, "shared memory over the sm_90 limit");
};

/* P / dS as operands: gemm.cuh's cd_sm90_k_major_sw32 (A of dQ = dS K: M = queries, K = keys) and
 * cd_sm90_mn_major_sw32 (B of dV^T = dO^T P, dK^T = Q^T dS: K = queries, N = keys), [64 queries][80
 * keys] in key blocks of 16 keys, PDS_COL_BYTES apart, rows of 32 bytes. */

/* 9.7.9.x stmatrix.sync.aligned.m8n8.x2.shared.b16: two 8x8 matrices; threads 0-15 give the row
 * addresses (row t % 8 of matrix t / 8), r0 / r1 the thread's elements of matrix 0 / 1. */
__device__ __forceinline__ void cd_stmatrix_x2(uint32_t addr, uint32_t r0, uint32_t r1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};\n" ::"r"(addr), "r"(r0), "r"(r1) : "memory");
}

/* The byte offset of query row q, 8-key group g (16 bytes) in a P / dS buffer of the layout above:
 * key block g / 2, row q, chunk (g % 2) ^ ((q >> 2) & 1). */
template <int COL_BYTES>
__device__ __forceinline__ uint32_t cd_sm90_pds_sw32_off(int q, int g) {
  return (uint32_t)((g >> 1) * COL_BYTES + q * 32 + (((g & 1) ^ ((q >> 2) & 1)) << 4));
}

/* A consumer's [64 queries][8 NG keys] of P or dS (the fragment packed in 16-bit pairs: register
 * 2j + r is matrix (key group j, row half r)) to its 8-key groups G0 .. G0 + NG - 1 of the buffer
 * at `buf`: stmatrix x4 for the pairs, x2 for an odd last group; q: the query row lane addresses
 * (16 warp + 8 ((lane >> 3) & 1) + lane % 8). The pairs' and the last group's addresses are the
 * first pair's plus (j / 2) key blocks (j even keeps the chunk parity; x2 reads lanes 0-15 only). */
template <int COL_BYTES, int NG, int G0>
__device__ __forceinline__ void cd_sm90_bwd_wide5_store_pds(uint32_t buf, const uint32_t (&v)[2 * NG], int q,
                                                            int lane) {
  const uint32_t a0 = buf + cd_sm90_pds_sw32_off<COL_BYTES>(q, G0 + (lane >> 4));
#pragma unroll
  for (int j = 0; j + 1 < NG; j += 2)
    cd_stmatrix_x4(a0 + (j / 2) * COL_BYTES, v[2 * j], v[2 * j + 1], v[2 * j + 2], v[2 * j + 3]);
  if constexpr (NG % 2 == 1) cd_stmatrix_x2(a0 + ((NG - 1) / 2) * COL_BYTES, v[2 * NG - 2], v[2 * NG - 1]);
}

/* ld.shared.f32 at a 32-bit shared address (the LSE2 / delta rows: no 64-bit generic pointers) */
__device__ __forceinline__ float cd_sm90_lds_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(addr) : "memory");
  return v;
}

/* Set-up: barriers kv_full (1 arrival: the producer's expect_tx), q_full / do_full (1), q_empty /
 * do_empty (CONSUMER_WARPS: every consumer warp once done with the stage). Returns the thread's
 * warpgroup (0 the producer, 1.. the consumers). */
template <int QST, int DST, int CONSUMER_WARPS>
__device__ __forceinline__ int cd_sm90_bwd_wide5_setup(const CUtensorMap &tm_q, const CUtensorMap &tm_k,
                                                       const CUtensorMap &tm_v, const CUtensorMap &tm_do,
                                                       uint32_t bar_kv, uint32_t bar_q_full, uint32_t bar_q_empty,
                                                       uint32_t bar_do_full, uint32_t bar_do_empty) {
  const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
  if (threadIdx.x == 0) {
    cd_tma_prefetch_desc(&tm_q);
    cd_tma_prefetch_desc(&tm_k);
    cd_tma_prefetch_desc(&tm_v);
    cd_tma_prefetch_desc(&tm_do);
    cd_mbar_init(bar_kv, 1);
    for (int s = 0; s < QST; ++s) {
      cd_mbar_init(bar_q_full + 8 * s, 1);
      cd_mbar_init(bar_q_empty + 8 * s, CONSUMER_WARPS);
    }
    for (int s = 0; s < DST; ++s) {
      cd_mbar_init(bar_do_full + 8 * s, 1);
      cd_mbar_init(bar_do_empty + 8 * s, CONSUMER_WARPS);
    }
    cd_mbar_fence_init();
  }
  __syncthreads();
  return wg;
}

#endif /* CUDADENT_SM90_BWD_WIDE5_PARTS_CUH */
