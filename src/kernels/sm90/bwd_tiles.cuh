/*
 * bwd_tiles.cuh - the Hopper backward's tile table: one row per compiled (D_QK, D_V) pair, Q/K's
 * width and V's (docs/kernels/sm90_bwd.md section 2, the arithmetic of each row). A call runs on
 * the narrowest row covering its head_dim and head_dim_v (bwd.cu cd_sm90_bwd_width).
 *
 * BLOCK_M query rows per iteration, BLOCK_N keys per CTA, STAGES of Q/dO in the ring, the
 * producer's and consumers' setmaxnreg budgets (the narrow rows' PRODUCER_REGS_DET: the producer
 * warpgroup's in the deterministic modes, whose dQ warp walks the blocks at that budget; 128 x 32
 * + 256 x 240 = 65536 fills the register file). WIDE 0: the K/V-split kernel (bwd_kernel.cuh:
 * consumer w owns keys [64 w, +64), all D columns of its dK / dV; P^T and dS^T are register A
 * operands). WIDE 1: the D-split kernel (bwd_wide_kernel.cuh: both consumers share the 64 keys,
 * each owns 64-column slabs of dK, dV and dQ; P^T and dS^T go through shared memory). DQ_BULK
 * (WIDE rows): 1 adds dQ through a staged bulk reduce, 0 with 16-byte reductions from registers
 * (no staging: the d256 row has no shared memory left for it).
 */
#ifndef CUDADENT_SM90_BWD_TILES_CUH
#define CUDADENT_SM90_BWD_TILES_CUH

#include "kernels/sm90/config.cuh" /* SM90_BWD_D96: the 96 / 96 row */
#include "kernels/sm90/reg_budget.cuh"

template <int DQK, int DV = DQK> struct cd_sm90_bwd_tile;

/* K/V-split rows. A consumer thread holds dV and dK (D / 2 fp32 each), S^T and dP^T (BLOCK_M / 2
 * each) and a dQ part of DQ_N / 2 (the part: 64 query rows x DQ_N columns; BLOCK_M 128: consumer w
 * takes rows [64 w, +64), BLOCK_M 64: columns [DQ_N w, +DQ_N)). d64 and d128: BLOCK_M * D = 8192,
 * parts of 64 x 64. d128 cannot take BLOCK_M 128: dV, dK, S^T and dP^T would need 256 registers.
 * d96 (config.cuh SM90_BWD_D96; FA3's d96 tile): BLOCK_M 64, parts of 64 x 48 (the 96 columns
 * halved: 3 of K's 16-column blocks each, bwd_parts.cuh cd_sm90_bwd_ops); 96 + 64 + 24 = 184
 * accumulator registers at the peak (d128: 224). BLOCK_M 128 would need 96 + 128 + 48 = 272; 80
 * or 96 rows split neither dQ (M = rows) nor dQ^T (M = 96 columns) into two 64-row wgmma parts.
 * Shared memory: K, V 24 KiB each, Q, dO 2 x 12 KiB each, dS^T 2 x 16 KiB, dQ staging 8 x 3 KiB
 * (+ rows, barriers, slack): 157,736 B, 182,312 with the deterministic dQ warp's second buffer
 * (d128 64-row: 231,464). The room left takes a 4-stage ring (SM90_BWD_D96 2: 207,944 B; the
 * deterministic dQ warp then has one buffer, a second would be 72 B over), which the d128 row has
 * no room for.
 * DQ_N of the wide rows: the 64-column slabs of their dQ parts (the accumulator's chunk order,
 * bwd_prepost.cuh cd_sm90_bwd_dq_frag). */
template <> struct cd_sm90_bwd_tile<64, 64> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 128, STAGES = 2;
  static constexpr int PRODUCER_REGS = 24, PRODUCER_REGS_DET = 24, CONSUMER_REGS = 240;
  static constexpr int WIDE = 0, DQ_N = 64;
};
template <> struct cd_sm90_bwd_tile<128, 128> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 128, STAGES = 2;
  static constexpr int PRODUCER_REGS = 24, PRODUCER_REGS_DET = 24, CONSUMER_REGS = 240;
  static constexpr int WIDE = 0, DQ_N = 64;
};
#if SM90_BWD_D96
template <> struct cd_sm90_bwd_tile<96, 96> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 128, STAGES = SM90_BWD_D96 == 2 ? 4 : 2;
  /* deterministic: 24 as well (the dQ warp spills 4 B, h_hi, reloaded once a head). Session 27 had
   * 32 there, which hung the deterministic kernels on the GPU: 128 x 32 + 256 x 240 registers are
   * more than the 384 x 168 the CTA is launched with, so the consumers' setmaxnreg.inc waited for
   * registers that no warp released (cd_sm90_bwd_body's static_assert) */
  static constexpr int PRODUCER_REGS = 24, PRODUCER_REGS_DET = 24, CONSUMER_REGS = 240;
  static constexpr int WIDE = 0, DQ_N = 48;
};
#endif

/* D-split rows (64 x 64 blocks). Per consumer thread: S^T, dP^T of 64 keys x 32 queries (16 fp32
 * each), dK / dV / dQ of its slabs (32 fp32 a slab; bwd_wide_kernel.cuh cd_sm90_bwd_wide_plan).
 * d256: 2 + 2 + 2 slabs, 192 accumulator registers at the dQ product (S^T, dP^T dead by then);
 * 192 / 128: consumer 0 dV 1, dK 2, dQ 1 slabs, consumer 1 dV 1, dK 1, dQ 2 (128 registers).
 * Shared memory (bwd_wide_kernel.cuh cd_sm90_bwd_wide_smem): d256 K, V 32 KiB each, Q, dO
 * 2 x 32 KiB each, P^T and dS^T 2 x 8 KiB each = 224 KiB (+ 2 KiB rows, barriers, alignment:
 * 226.0 of 227 KiB), hence no dQ staging; 192 / 128: K 24, V 16, Q 2 x 24, dO 2 x 16, P^T / dS^T
 * 32, dQ staging 64 KiB = 216 KiB. The 192 / 128 row's dense non-deterministic calls without
 * softcap run bwd_wide3_kernel.cuh's own tile instead (64 x 96, three MMA warpgroups:
 * bwd_wide3_parts.cuh cd_sm90_bwd_wide3_tile; config.cuh SM90_BWD_WIDE3), and those of the d256 row
 * bwd_wide5_kernel.cuh's (64 x 80, two MMA warpgroups: cd_sm90_bwd_wide5_tile; SM90_BWD_WIDE5). */
template <> struct cd_sm90_bwd_tile<192, 128> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, STAGES = 2;
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
  static constexpr int WIDE = 1, DQ_BULK = 1, DQ_N = 64;
};
template <> struct cd_sm90_bwd_tile<256, 256> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, STAGES = 2;
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
  static constexpr int WIDE = 1, DQ_BULK = 0, DQ_N = 64;
};

#endif /* CUDADENT_SM90_BWD_TILES_CUH */
