/*
 * bwd_wide3_kernel.cuh - experiment E3 of docs/kernels/sm90_bwd_wide_next.md (config.cuh
 * SM90_BWD_WIDE3, the library's since session 26: +4-9% over the 64-key kernel on an H200, section
 * 7 of that note): the Hopper backward's main kernel for the 192 / 128 row in FA3's d192
 * structure, dense, not deterministic, no softcap (every other call of the row keeps
 * bwd_wide_kernel.cuh). Against that kernel: 96 keys a CTA instead of 64, so a query block's dQ
 * leaves a CTA for 96 keys of work (a third fewer dQ bytes a FLOP, 31% fewer CTAs). Pre and post
 * kernels, workspace, LSE2 / delta rows, launch order and the dQ workspace's chunk order are the
 * row's (BLOCK_M 64: cd_sm90_bwd_post reads the same tiles).
 *
 * Warps (512 threads): warpgroup 0 the producer (setmaxnreg 24; thread 0 issues the TMA loads:
 * K, V once, then Q, dO, LSE2, delta of each block into a 2-stage ring, bwd_wide_kernel.cuh's
 * producer); warpgroups 1..3 the MMA consumers w = 0..2 (setmaxnreg 160). Per query block of 64
 * rows, consumer w (keys [32 w, +32) for S and dP; D columns of slab w for dQ, dK, dV):
 *   S_w  = Q K_w^T    [64 q, 32 keys]  m64n32k16 x 12  A = Q (K-major), B = K rows 32 w.. (K-major)
 *   dP_w = dO V_w^T   [64, 32]         m64n32k16 x 8   A = dO, B = V rows 32 w..
 *   P_w = exp2(S_w scale_log2 - LSE2) (0 where masked), dS_w = P_w (dP_w - delta) -> shared memory
 *   named barrier (384): all of P and dS there
 *   dQ_w = dS K[:, slab w]             [64 q, 64 D]     m64n64k16 x 6   A = dS (K-major), B = K (MN-major)
 *   dV^T_w += dO[:, slab w]^T P        [64 D, 96 keys]  m64n96k16 x 4   w = 0, 1 only (D_V = 128)
 *   dK^T_w += Q[:, slab w]^T dS        [64 D, 96 keys]  m64n96k16 x 4   A = Q^T (MN-major), B = dS (MN-major)
 * dQ is issued first, dV^T / dK^T after it; once dQ is done its part (the tile's 64 x 64 slab w,
 * chunks 4 w + warp) goes through the warp's 4 KiB staging to the fp32 workspace by one bulk
 * reduce-add a warp (bwd_wide_dq.cuh cd_sm90_bwd_wide_bulk_dq; its lane 0 waits for the previous
 * reduce's read before the stores, and once more after the last block) while dV^T / dK^T run
 * (session 27: +4.8-8.1% over red.global.add.v4.f32 from registers, the path until then).
 *
 * Layouts (bwd_wide3_parts.cuh cd_sm90_bwd_wide3_smem; 16-bit elements):
 *   K [3][96 keys][64], V [2][96][64], Q [2 stages][3][64][64], dO [2][2][64][64]: TMA boxes of 64
 *     columns (128 bytes) with the 128-byte swizzle; a 96-row K / V slab is 12 swizzle atoms. K as
 *     S's B operand: K-major, start 32 w rows (4 atoms) into each slab. K as dQ's B operand:
 *     MN-major (D contiguous), slab w, N = 64 = one atom wide, K = 96 keys = 6 k-steps of 2048 B.
 *     Q / dO as the A operands of dK^T / dV^T: MN-major (D contiguous, transposed), slab w, M = 64.
 *   P, dS [64 queries][96 keys]: 96 keys are 1.5 of the 128-byte swizzle's 64-element rows, so
 *     they are stored with the 64-byte swizzle (FA3's choice at d192: its smem selector takes the
 *     64-byte atom for a 32-key warpgroup width) in 3 column blocks of 32 keys ([64 rows][64 B],
 *     4096 B each, 16-byte chunk c of row q at c ^ ((q >> 1) & 3)). Column block w is exactly
 *     consumer w's S / dP columns: it stores only there (stmatrix, conflict-free). Every wgmma then
 *     reads whole swizzle atoms: dQ's A (K-major, K = 96 keys: 6 k-steps, 2 a column block, LBO
 *     unused, SBO 512), dV^T / dK^T's B (MN-major, N = 96 keys = 3 atoms, LBO 4096 between
 *     column blocks, SBO 512, k-step 16 query rows = 1024 B), one m64n96 each.
 *   dK^T / dV^T are transposed in the epilogue by stmatrix.trans into [96 keys][D] tiles staged in
 *     the Q / dO stages (16-byte chunks XOR-swizzled by key % 8), then 16-byte global stores
 *     clipped to head_dim / head_dim_v and seqlen_k.
 *
 * Synchronization: mbarriers kv_full (the producer's K / V), q_full[s] (its Q, dO, LSE2, delta),
 * q_empty[s] (12 arrivals: every consumer warp once its dQ, dV^T, dK^T products, the last readers of
 * the stage, completed and its LSE2 / delta reads are done). P / dS: one buffer (the dQ staging
 * takes the second one's room), so two named barriers a block among the 384 MMA threads:
 * CD_SM90_BAR_BWD_PDS_FREE before the stores (every consumer's products of the block before, which
 * read the buffer, completed: each waits for them before it arrives) and CD_SM90_BAR_BWD_DS after
 * them (all of P and dS are there). Named barriers are the non-aligned barrier.sync (the consumers
 * are three template instances). Epilogue: CD_SM90_BAR_BWD_EPILOGUE
 * (384) before the staging (all products done) and after it.
 */
#ifndef CUDADENT_SM90_BWD_WIDE3_KERNEL_CUH
#define CUDADENT_SM90_BWD_WIDE3_KERNEL_CUH

#include "kernels/sm90/bwd_wide3_parts.cuh"
#include "kernels/sm90/bwd_wide_dq.cuh"

/* Consumer W's walk over the CTA's query blocks and its epilogue's staging. */
template <bool kFp16, int W>
__device__ __forceinline__ void cd_sm90_bwd_wide3_consumer(const cd_sm90_bwd_args &args, uint32_t base,
                                                           const uint8_t *gbase, int n_block, int hk, int b,
                                                           int m_lo, int m_hi) {
  typedef cd_sm90_bwd_wide3_tile T;
  typedef cd_sm90_bwd_wide3_smem L;
  constexpr int BM = T::BLOCK_M, BN = T::BLOCK_N, ST = T::STAGES, KW = T::KEYS_WG;
  constexpr int DQK = T::DQK, DV = T::DV;
  constexpr bool kDv = W < DV / 64; /* this consumer owns a dV slab */
  constexpr int NMMA = T::MMA_THREADS;
  typedef cd_sm90_k_major<BM> QOp;                       /* Q, dO as A of S, dP */
  typedef cd_sm90_k_major<BN> KOp;                       /* K, V rows as B of S, dP */
  typedef cd_sm90_k_major_sw64<L::PDS_COL_BYTES> DsA;    /* dS as A of dQ */
  typedef cd_sm90_mn_major_sw64<L::PDS_COL_BYTES> PdsB;  /* P, dS as B of dV^T, dK^T */
  const uint32_t sK = base + L::K_OFF, sV = base + L::V_OFF, sQ = base + L::Q_OFF;
  const uint32_t sDO = base + L::DO_OFF, sP = base + L::P_OFF, sDS = base + L::DS_OFF;
  const uint32_t bar_q_full = base + L::BAR_OFF + 8, bar_q_empty = bar_q_full + 8 * ST;
  const int ct = threadIdx.x - 128 * (W + 1);
  const int warp = ct / 32, lane = ct % 32;
  const int q_row0 = 16 * warp + lane / 4; /* this thread's query rows in the block: this and + 8 */

  const uint64_t desc_q_a = QOp::desc(sQ), desc_do_a = QOp::desc(sDO);                   /* + stage */
  const uint64_t desc_k_b = KOp::desc(sK + W * KW * 128), desc_v_b = KOp::desc(sV + W * KW * 128);
  const uint64_t desc_ds_a = DsA::desc(sDS);
  const uint64_t desc_k_mn = cd_sm90_mn_major::desc(sK + W * L::K_SLAB, L::K_SLAB);
  const uint64_t desc_qt = cd_sm90_mn_major::desc(sQ + W * L::QS_SLAB, L::QS_SLAB);       /* + stage */
  const uint64_t desc_dot = cd_sm90_mn_major::desc(sDO + (kDv ? W : 0) * L::QS_SLAB, L::QS_SLAB);
  const uint64_t desc_p_b = PdsB::desc(sP), desc_ds_b = PdsB::desc(sDS);
  const uint32_t stage_dq = base + L::DQ_OFF + (W * 4 + warp) * L::DQ_WARP_BYTES;

  float dk[48], dv[kDv ? 48 : 1];
#pragma unroll
  for (int i = 0; i < 48; ++i) dk[i] = 0.f;
  if constexpr (kDv) {
#pragma unroll
    for (int i = 0; i < 48; ++i) dv[i] = 0.f;
  }

  const int k0 = n_block * BN, kw0 = k0 + W * KW; /* the block's first key, this consumer's */
  const int shift = args.seqlen_k - args.seqlen_q;
  const bool key_tail = kw0 + KW > args.seqlen_k;
  if (m_hi > m_lo) cd_mbar_wait(base + L::BAR_OFF, 0);
  const int h_lo = hk * args.group, h_hi = h_lo + args.group;

  uint32_t it = 0;
  for (int h = h_lo; h < h_hi; ++h)
    for (int m = m_lo; m < m_hi; ++m, ++it) {
      const uint32_t s = it % ST, ph = (it / ST) & 1;
      cd_mbar_wait(bar_q_full + 8 * s, ph);

      float st[16], dp[16]; /* [64 queries, 32 keys]: element 4j + 2r + e is query q_row0 + 8r,
                             * key 32 W + 8j + 2 (lane % 4) + e */
      cd_wgmma_fence();
      cd_sm90_gemm_ss<KW, DQK, kFp16, false, QOp, KOp>(st, cd_gmma_desc_add(desc_q_a, s * L::Q_BYTES), desc_k_b);
      cd_wgmma_commit();
      cd_sm90_gemm_ss<KW, DV, kFp16, false, QOp, KOp>(dp, cd_gmma_desc_add(desc_do_a, s * L::DO_BYTES), desc_v_b);
      cd_wgmma_commit();

      const float *lse_s = (const float *)(gbase + L::LSE_OFF + s * L::ROW_BYTES);
      const float *delta_s = (const float *)(gbase + L::DELTA_OFF + s * L::ROW_BYTES);
      const float lse[2] = {lse_s[q_row0], lse_s[q_row0 + 8]};
      cd_wgmma_wait<1>();
      cd_sm90_fence_regs(st);
      const int r0 = m * BM, rl = r0 + BM - 1;
      const bool need_mask = key_tail ||
                             (args.window_right >= 0 && kw0 + KW - 1 > r0 + shift + args.window_right) ||
                             (args.window_left >= 0 && kw0 < rl + shift - args.window_left);
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            st[4 * j + 2 * r + e] = cd_exp2(fmaf(st[4 * j + 2 * r + e], args.scale_log2, -lse[r]));
      if (need_mask) {
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int key = kw0 + 8 * j + 2 * (lane & 3) + e;
              const int d = key - (r0 + q_row0 + 8 * r) - shift;
              const bool vis = key < args.seqlen_k && (args.window_left < 0 || d >= -args.window_left) &&
                               (args.window_right < 0 || d <= args.window_right);
              if (!vis) st[4 * j + 2 * r + e] = 0.f;
            }
      }
      uint32_t p16[8], ds16[8]; /* 2j + r: matrix (key group j, row half r) */
#pragma unroll
      for (int i = 0; i < 8; ++i) p16[i] = cd_pack2<kFp16>(st[2 * i], st[2 * i + 1]);

      const float dl[2] = {delta_s[q_row0], delta_s[q_row0 + 8]};
      cd_wgmma_wait<0>(); /* dP done */
      cd_sm90_fence_regs(dp);
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r)
          ds16[2 * j + r] = cd_pack2<kFp16>(st[4 * j + 2 * r] * (dp[4 * j + 2 * r] - dl[r]),
                                            st[4 * j + 2 * r + 1] * (dp[4 * j + 2 * r + 1] - dl[r]));

      /* every consumer's products of the block before, the readers of P / dS, completed */
      cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_PDS_FREE, NMMA);
      /* P_w, dS_w into column block W: row q, 16-byte chunk c (8 keys) at c ^ ((q >> 1) & 3) */
      {
        const int q = 16 * warp + ((lane >> 3) & 1) * 8 + (lane & 7);
        const uint32_t blk = W * L::PDS_COL_BYTES + q * 64;
#pragma unroll
        for (int j = 0; j < 4; j += 2) {
          const uint32_t off = blk + (((j + (lane >> 4)) ^ ((q >> 1) & 3)) << 4);
          cd_stmatrix_x4(sP + off, p16[2 * j], p16[2 * j + 1], p16[2 * j + 2], p16[2 * j + 3]);
          cd_stmatrix_x4(sDS + off, ds16[2 * j], ds16[2 * j + 1], ds16[2 * j + 2], ds16[2 * j + 3]);
        }
      }
      cd_fence_proxy_async_smem(); /* stmatrix (generic proxy) -> the wgmma reads (async proxy) */
      cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_DS, NMMA); /* all of P and dS are there */

      cd_wgmma_fence();
      float dq[32];
      cd_sm90_gemm_ss<64, BN, kFp16, false, DsA, cd_sm90_mn_major>(
        dq, desc_ds_a, desc_k_mn);
      cd_wgmma_commit();
      if constexpr (kDv)
        cd_sm90_gemm_ss<BN, BM, kFp16, true, cd_sm90_mn_major, PdsB>(
          dv, cd_gmma_desc_add(desc_dot, s * L::DO_BYTES), desc_p_b);
      cd_sm90_gemm_ss<BN, BM, kFp16, true, cd_sm90_mn_major, PdsB>(
        dk, cd_gmma_desc_add(desc_qt, s * L::Q_BYTES), desc_ds_b);
      cd_wgmma_commit();

      cd_wgmma_wait<1>(); /* dQ done; dV^T, dK^T pending */
      cd_sm90_fence_regs(dq);
      const int64_t tile_idx = ((int64_t)b * args.heads_q + h) * args.m_blocks + m;
      cd_sm90_bwd_wide_bulk_dq<1, W>(dq, args.dq_acc + tile_idx * (BM * DQK), stage_dq, warp, lane);
      cd_wgmma_wait<0>(); /* dV^T, dK^T done: the stage is free */
      cd_sm90_fence_regs(dk);
      if constexpr (kDv) cd_sm90_fence_regs(dv);
      __syncwarp(); /* every lane's LSE2 / delta reads of the stage before lane 0 frees it */
      if (lane == 0) cd_mbar_arrive(bar_q_empty + 8 * s);
    }
  if (lane == 0) cd_tma_store_wait_read<0>(); /* the staging stays until the bulk engine read it */

  /* epilogue staging: dK (scaled) in the Q stages as [96 keys][DQK], dV in the dO stages as
   * [96][DV] (bwd_wide3_parts.cuh cd_sm90_bwd_wide3_stage_t) */
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_EPILOGUE, NMMA); /* every consumer is past its last block */
  /* the thread index re-read (volatile): the walk holds all 160 registers, and ptxas spilled `warp`
   * across it (4 bytes) */
  uint32_t tid;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  const int warp_e = ((int)tid - 128 * (W + 1)) / 32;
  cd_sm90_bwd_wide3_stage_t<DQK, W, kFp16>(dk, args.scale, sQ, warp_e, lane);
  if constexpr (kDv) cd_sm90_bwd_wide3_stage_t<DV, W, kFp16>(dv, 1.f, sDO, warp_e, lane);
}

template <bool kFp16>
__global__ void __launch_bounds__(cd_sm90_bwd_wide3_tile::THREADS, 1)
    cd_sm90_bwd_wide3_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                             const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                             const cd_sm90_bwd_args args, const int head_dim, const int head_dim_v) {
  typedef cd_sm90_bwd_wide3_tile T;
  typedef cd_sm90_bwd_wide3_smem L;
  constexpr int BM = T::BLOCK_M, BN = T::BLOCK_N, ST = T::STAGES;
  static_assert((ST & (ST - 1)) == 0, "the ring position wraps at 2^32: ST a power of two");

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (cd_smem_addr(smem_raw) + 1023u) & ~1023u; /* swizzle atoms: 1024 B */
  const uint8_t *const gbase = smem_raw + (base - cd_smem_addr(smem_raw));
  const uint32_t bar_kv = base + L::BAR_OFF;
  const uint32_t bar_q_full = bar_kv + 8, bar_q_empty = bar_q_full + 8 * ST;

  int n_block, hk, b;
#if SM90_BWD_PDL
  cd_griddep_launch_dependents(); /* as bwd_wide_kernel.cuh */
#endif
  cd_sm90_bwd_work_of_block<CD_SM90_BWD_NONDET>(args, n_block, hk, b);
  const int wg = cd_sm90_bwd_setup<ST, 4 * T::CONSUMERS>(tm_q, tm_k, tm_v, tm_do, bar_kv, bar_q_full, bar_q_empty);
  const int k0 = n_block * BN;
  int m_lo, m_hi;
  cd_sm90_bwd_q_blocks<BM, BN>(args, n_block, &m_lo, &m_hi);

  if (wg == 0) {
    /* ================================ producer ================================ */
    cd_setmaxnreg_dec<T::PRODUCER_REGS>();
    if (threadIdx.x != 0 || m_hi == m_lo) return;
    cd_sm90_bwd_wide_load_kv<L::SQK, L::SV>(base + L::K_OFF, base + L::V_OFF, L::K_SLAB, &tm_k, &tm_v, bar_kv,
                                            L::K_BYTES + L::V_BYTES, k0, hk, b);
#if SM90_BWD_PDL
    cd_griddep_wait(); /* K, V: the caller's; the LSE2 / delta rows below: the pre kernel's */
#endif
    const int h_lo = hk * args.group, h_hi = h_lo + args.group;
    uint32_t it = 0;
    for (int h = h_lo; h < h_hi; ++h)
      for (int m = m_lo; m < m_hi; ++m, ++it) {
        const uint32_t s = it % ST, ph = (it / ST) & 1;
        cd_mbar_wait(bar_q_empty + 8 * s, ph ^ 1);
        const uint32_t full = bar_q_full + 8 * s;
        cd_mbar_arrive_expect_tx(full, L::Q_BYTES + L::DO_BYTES + 2 * L::ROW_BYTES);
#pragma unroll
        for (int c = 0; c < L::SQK; ++c)
          cd_tma_load_4d(base + L::Q_OFF + s * L::Q_BYTES + c * L::QS_SLAB, &tm_q, full, 64 * c, m * BM, h, b);
#pragma unroll
        for (int c = 0; c < L::SV; ++c)
          cd_tma_load_4d(base + L::DO_OFF + s * L::DO_BYTES + c * L::QS_SLAB, &tm_do, full, 64 * c, m * BM, h, b);
        const int64_t row0 = ((int64_t)b * args.heads_q + h) * args.sq_pad + (int64_t)m * BM;
        cd_bulk_load_1d(base + L::LSE_OFF + s * L::ROW_BYTES, args.lse2 + row0, L::ROW_BYTES, full);
        cd_bulk_load_1d(base + L::DELTA_OFF + s * L::ROW_BYTES, args.delta + row0, L::ROW_BYTES, full);
      }
    return;
  }

  /* ================================ consumers ================================ */
  cd_setmaxnreg_inc<T::CONSUMER_REGS>();
#if SM90_BWD_PDL
  cd_griddep_wait(); /* before the dQ accumulator's adds (the pre's zeros) */
#endif
  if (wg == 1)
    cd_sm90_bwd_wide3_consumer<kFp16, 0>(args, base, gbase, n_block, hk, b, m_lo, m_hi);
  else if (wg == 2)
    cd_sm90_bwd_wide3_consumer<kFp16, 1>(args, base, gbase, n_block, hk, b, m_lo, m_hi);
  else
    cd_sm90_bwd_wide3_consumer<kFp16, 2>(args, base, gbase, n_block, hk, b, m_lo, m_hi);
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_EPILOGUE, T::MMA_THREADS); /* dK and dV staged */
  const int ct = (int)threadIdx.x - 128;
  cd_sm90_bwd_wide3_store<T::DQK / 8, BN, T::MMA_THREADS>(
    base + L::Q_OFF, (uint16_t *)args.dk + b * args.dk_sb + hk * args.dk_sh, args.dk_ss, k0, args.seqlen_k,
    head_dim / 8, ct);
  cd_sm90_bwd_wide3_store<T::DV / 8, BN, T::MMA_THREADS>(
    base + L::DO_OFF, (uint16_t *)args.dv + b * args.dv_sb + hk * args.dv_sh, args.dv_ss, k0, args.seqlen_k,
    head_dim_v / 8, ct);
}

#endif /* CUDADENT_SM90_BWD_WIDE3_KERNEL_CUH */
