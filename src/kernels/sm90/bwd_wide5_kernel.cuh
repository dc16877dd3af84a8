/*
 * bwd_wide5_kernel.cuh - experiment E5 of docs/kernels/sm90_bwd_wide_next.md (config.cuh
 * SM90_BWD_WIDE5, the library's since session 27: +7-16% over the 64-key kernel on an H200, section
 * 9 of that note): the Hopper backward's main kernel for the 256 / 256 row in
 * FA3's d256 structure, dense, not deterministic, no softcap (every other call of the row keeps
 * bwd_wide_kernel.cuh). Against that kernel: 80 keys a CTA instead of 64, so a query block's dQ
 * leaves a CTA for 80 keys of work (a fifth fewer dQ bytes a FLOP, 20% fewer CTAs). Pre and post
 * kernels, workspace, LSE2 / delta rows, launch order and the dQ workspace's chunk order are the
 * row's (BLOCK_M 64: cd_sm90_bwd_post reads the same tiles).
 *
 * Warps (384 threads): warpgroup 0 the producer (setmaxnreg 24; thread 0 issues the TMA loads:
 * K, V once, then per block Q + LSE2 into a 2-stage ring and dO + delta into a 1-stage one);
 * warpgroups 1, 2 the MMA consumers w = 0, 1 (setmaxnreg 240). Per query block of 64 rows,
 * consumer w (keys [40 w, +40) for S and dP; D rows / columns [128 w, +128) = slabs 2w, 2w + 1
 * for dK^T, dV^T and dQ):
 *   S_w  = Q K_w^T    [64 q, 40 keys]  m64n40k16 x 16  A = Q (K-major), B = K rows 40 w.. (K-major)
 *   dP_w = dO V_w^T   [64, 40]         m64n40k16 x 16  A = dO, B = V rows 40 w..
 *   P_w = exp2(S_w scale_log2 - LSE2) (0 where masked), dS_w = P_w (dP_w - delta) -> shared memory
 *   named barrier (256): all of P and dS there
 *   dQ_w,u = dS K[:, slab 2w + u]        [64 q, 64 D]     m64n64k16 x 5   A = dS (K-major), B = K (MN-major)
 *   dV^T_w,t += dO[:, slab 2w + t]^T P   [64 D, 80 keys]  m64n80k16 x 4   A = dO^T (MN-major), B = P (MN-major)
 *   dK^T_w,t += Q[:, slab 2w + t]^T dS   [64 D, 80 keys]  m64n80k16 x 4   A = Q^T, B = dS
 * Order in a block (commit groups): dQ u = 0; dV^T t = 0, 1; wait -> dQ 0 added to the fp32
 * workspace (the 64 x 256 tile's 64 x 64 slab 2w, chunks 4 (2w) + warp) under dV^T; dQ u = 1;
 * dK^T t = 0, 1; wait -> dV^T done: the dO stage is free; wait -> dQ 1 added (slab 2w + 1) under
 * dK^T; wait -> the Q stage is free. Only one 32-register dQ slice lives at a time: dK^T + dV^T
 * hold 160 registers. A slice is added by red.global.add.v4.f32 from registers (bwd_wide_dq.cuh
 * cd_sm90_bwd_wide_red_dq); through a staging and the bulk engine, as E3's, it ran 7-10% slower
 * (session 28, docs/kernels/sm90_bwd_wide_next.md section 10).
 *
 * Layouts (bwd_wide5_parts.cuh cd_sm90_bwd_wide5_smem; 16-bit elements):
 *   K, V [4][80 keys][64], Q [2 stages][4][64][64], dO [1][4][64][64]: TMA boxes of 64 columns
 *     (128 bytes) with the 128-byte swizzle; an 80-row K / V slab is 10 swizzle atoms. K as S's B
 *     operand: K-major, start 40 w rows (5 atoms) into each slab, N = 40 (5 core-matrix groups,
 *     SBO 1024). K as dQ's B operand: MN-major (D contiguous), slab 2w + u, N = 64 = one atom wide,
 *     K = 80 keys = 5 k-steps of 2048 B. Q / dO as the A operands of dK^T / dV^T: MN-major (D
 *     contiguous, transposed), slab 2w + t, M = 64.
 *   P, dS [64 queries][80 keys]: 80 keys are 160 bytes a row, a multiple of neither the 128- nor
 *     the 64-byte swizzle's row (64 / 32 keys), so they are stored with the 32-byte swizzle in 5
 *     key blocks of 16 keys ([64 rows][32 B], 2048 B each, 16-byte chunk h of row q at
 *     h ^ ((q >> 2) & 1)): no padding (10240 B a buffer; the widest swizzle whose atom width divides
 *     80 keys; FA3's smem selector, given a warpgroup's 40 keys, takes the unswizzled interleaved
 *     atom instead), and every wgmma reads whole atoms: dQ's A (K-major,
 *     K = 80 keys: one k-step a key block, SBO 256), dV^T / dK^T's B (MN-major, N = 80 keys = 5
 *     atoms, LBO 2048 between key blocks, SBO 256, k-step 16 query rows = 512 B), one m64n80 each.
 *     Consumer w stores its 5 8-key groups 5 w.. (one key block is shared by both consumers, in
 *     different 16-byte chunks) by stmatrix x4, x4, x2; conflict-free (8 rows of 32 B cover the
 *     256-byte atom's 8 distinct bank groups). Two buffers (block i writes buffer i % 2).
 *   dK^T / dV^T are transposed in the epilogue by stmatrix.trans (bwd_wide3_parts.cuh
 *     cd_sm90_bwd_wide3_stage_t) into [80 keys][256] tiles staged in K's and V's places (16-byte
 *     chunks XOR-swizzled by key % 8), then 16-byte global stores clipped to head_dim / head_dim_v
 *     and seqlen_k (cd_sm90_bwd_wide3_store); dK scaled by args.scale.
 *
 * Synchronization: mbarriers kv_full (the producer's K / V), q_full[s] (its Q, LSE2), q_empty[s] (8
 * arrivals: every consumer warp once its dK^T products, the stage's last readers, completed and its
 * LSE2 reads are done), do_full (dO, delta), do_empty (8: once its dV^T products completed and its
 * delta reads are done). P / dS, two buffers: block i writes buffer i % 2, which block i - 2's
 * products read; a consumer passes block i - 1's barrier only after its own block i - 2 products
 * completed, so after that barrier no one reads the buffer: one named barrier a block,
 * CD_SM90_BAR_BWD_DS among the 256 MMA threads (non-aligned barrier.sync: the consumers are two
 * template instances).
 * Epilogue: CD_SM90_BAR_BWD_EPILOGUE (256) before the staging (all products done, K / V no longer
 * read) and after it.
 */
#ifndef CUDADENT_SM90_BWD_WIDE5_KERNEL_CUH
#define CUDADENT_SM90_BWD_WIDE5_KERNEL_CUH

#include "kernels/sm90/bwd_wide5_parts.cuh"
#include "kernels/sm90/bwd_wide_dq.cuh"

/* Consumer W's walk over the CTA's query blocks and its epilogue's staging. */
template <bool kFp16, int W>
__device__ __forceinline__ void cd_sm90_bwd_wide5_consumer(const cd_sm90_bwd_args &args, uint32_t base,
                                                           int n_block, int hk, int b,
                                                           int m_lo, int m_hi) {
  typedef cd_sm90_bwd_wide5_tile T;
  typedef cd_sm90_bwd_wide5_smem L;
  constexpr int BM = T::BLOCK_M, BN = T::BLOCK_N, QST = T::Q_STAGES, DST = T::DO_STAGES, KW = T::KEYS_WG;
  constexpr int DQK = T::DQK, DV = T::DV, S0 = W * T::SLABS_WG; /* this consumer's first D slab */
  constexpr int NMMA = T::MMA_THREADS, G0 = W * KW / 8;         /* its first 8-key group */
  constexpr int NACC = BN / 2;                                  /* a dK^T / dV^T slice's registers */
  typedef cd_sm90_k_major<BM> QOp;                              /* Q, dO as A of S, dP */
  typedef cd_sm90_k_major<BN> KOp;                              /* K, V rows as B of S, dP */
  typedef cd_sm90_k_major_sw32<L::PDS_COL_BYTES> DsA;           /* dS as A of dQ */
  typedef cd_sm90_mn_major_sw32<L::PDS_COL_BYTES> PdsB;         /* P, dS as B of dV^T, dK^T */
  const uint32_t sK = base + L::K_OFF, sV = base + L::V_OFF, sQ = base + L::Q_OFF;
  const uint32_t sDO = base + L::DO_OFF, sP = base + L::P_OFF, sDS = base + L::DS_OFF;
  const uint32_t bar_q_full = base + L::BAR_Q_FULL, bar_q_empty = base + L::BAR_Q_EMPTY;
  const uint32_t bar_do_full = base + L::BAR_DO_FULL, bar_do_empty = base + L::BAR_DO_EMPTY;
  const int ct = threadIdx.x - 128 * (W + 1);
  const int warp = ct / 32, lane = ct % 32;
  const int q_row0 = 16 * warp + lane / 4; /* this thread's query rows in the block: this and + 8 */

  const uint64_t desc_q_a = QOp::desc(sQ), desc_do_a = QOp::desc(sDO);                   /* + stage */
  const uint64_t desc_k_b = KOp::desc(sK + W * KW * 128), desc_v_b = KOp::desc(sV + W * KW * 128);
  const uint64_t desc_ds_a = DsA::desc(sDS);                                              /* + buffer */
  const uint64_t desc_k_mn = cd_sm90_mn_major::desc(sK + S0 * L::K_SLAB, L::K_SLAB);      /* + slab */
  const uint64_t desc_qt = cd_sm90_mn_major::desc(sQ + S0 * L::QS_SLAB, L::QS_SLAB);      /* + stage, slab */
  const uint64_t desc_dot = cd_sm90_mn_major::desc(sDO + S0 * L::QS_SLAB, L::QS_SLAB);    /* + stage, slab */
  const uint64_t desc_p_b = PdsB::desc(sP), desc_ds_b = PdsB::desc(sDS);                  /* + buffer */

  float dk[T::SLABS_WG][NACC], dv[T::SLABS_WG][NACC];
#pragma unroll
  for (int t = 0; t < T::SLABS_WG; ++t)
#pragma unroll
    for (int i = 0; i < NACC; ++i) {
      dk[t][i] = 0.f;
      dv[t][i] = 0.f;
    }

  const int k0 = n_block * BN, kw0 = k0 + W * KW; /* the block's first key, this consumer's */
  const int shift = args.seqlen_k - args.seqlen_q;
  const bool key_tail = kw0 + KW > args.seqlen_k;
  const int kl = kw0 + 2 * (lane & 3), key_lim = args.seqlen_k - kl; /* the thread's first key */
  if (m_hi > m_lo) cd_mbar_wait(base + L::BAR_KV, 0);
  const int h_lo = hk * args.group, h_hi = h_lo + args.group;

  uint32_t it = 0;
  for (int h = h_lo; h < h_hi; ++h)
    for (int m = m_lo; m < m_hi; ++m, ++it) {
      const uint32_t s = it % QST, qph = (it / QST) & 1, sd = it % DST, dph = (it / DST) & 1;
      const uint32_t pds = (it % T::PDS_BUFS) * L::PDS_BYTES;
      cd_mbar_wait(bar_q_full + 8 * s, qph);

      float st[KW / 2], dp[KW / 2]; /* [64 queries, 40 keys]: element 4j + 2r + e is query
                                     * q_row0 + 8r, key 40 W + 8j + 2 (lane % 4) + e */
      cd_wgmma_fence();
      cd_sm90_gemm_ss<KW, DQK, kFp16, false, QOp, KOp>(st, cd_gmma_desc_add(desc_q_a, s * L::Q_BYTES), desc_k_b);
      cd_wgmma_commit();
      cd_mbar_wait(bar_do_full + 8 * sd, dph);
      cd_wgmma_fence(); /* dP's registers after the wait's branch (ptxas injects it otherwise, C7519) */
      cd_sm90_gemm_ss<KW, DV, kFp16, false, QOp, KOp>(dp, cd_gmma_desc_add(desc_do_a, sd * L::DO_BYTES), desc_v_b);
      cd_wgmma_commit();

      const uint32_t lse_s = base + L::LSE_OFF + s * L::ROW_BYTES + 4 * q_row0;
      const uint32_t delta_s = base + L::DELTA_OFF + sd * L::ROW_BYTES + 4 * q_row0;
      const float lse[2] = {cd_sm90_lds_f32(lse_s), cd_sm90_lds_f32(lse_s + 32)};
      cd_wgmma_wait<1>();
      cd_sm90_fence_regs(st);
      const int r0 = m * BM, rl = r0 + BM - 1;
      const bool need_mask = key_tail ||
                             (args.window_right >= 0 && kw0 + KW - 1 > r0 + shift + args.window_right) ||
                             (args.window_left >= 0 && kw0 < rl + shift - args.window_left);
#pragma unroll
      for (int j = 0; j < KW / 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r)
#pragma unroll
          for (int e = 0; e < 2; ++e)
            st[4 * j + 2 * r + e] = cd_exp2(fmaf(st[4 * j + 2 * r + e], args.scale_log2, -lse[r]));
      if (need_mask) {
        /* E3's rule (key < seqlen_k; d = key - query - shift inside the window) with the thread's
         * offsets folded into three values, so that the key of each (j, r, e) is an immediate:
         * key = kl + 8j + e, d = d0 + 8j + e - 8r */
        const int d0 = kl - (r0 + q_row0) - shift;
        const int lo = args.window_left < 0 ? INT_MIN / 2 : -args.window_left - d0;
        const int hi = args.window_right < 0 ? INT_MAX / 2 : args.window_right - d0;
#pragma unroll
        for (int j = 0; j < KW / 8; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int c = 8 * j + e - 8 * r;
              const bool vis = 8 * j + e < key_lim && c >= lo && c <= hi;
              if (!vis) st[4 * j + 2 * r + e] = 0.f;
            }
      }
      /* P_w, dS_w: this consumer's 8-key groups G0 .. G0 + 4 (bwd_wide5_parts.cuh cd_sm90_pds_sw32_off),
       * P first, while dP runs (the buffer is free: the header's synchronization) */
      const int q_st = 16 * warp + ((lane >> 3) & 1) * 8 + (lane & 7); /* the row this lane addresses */
      {
        uint32_t p16[KW / 4]; /* 2j + r: matrix (key group j, row half r) */
#pragma unroll
        for (int i = 0; i < KW / 4; ++i) p16[i] = cd_pack2<kFp16>(st[2 * i], st[2 * i + 1]);
        cd_sm90_bwd_wide5_store_pds<L::PDS_COL_BYTES, KW / 8, G0>(sP + pds, p16, q_st, lane);
      }

      const float dl[2] = {cd_sm90_lds_f32(delta_s), cd_sm90_lds_f32(delta_s + 32)};
      cd_wgmma_wait<0>(); /* dP done */
      cd_sm90_fence_regs(dp);
      {
        uint32_t ds16[KW / 4];
#pragma unroll
        for (int j = 0; j < KW / 8; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r)
            ds16[2 * j + r] = cd_pack2<kFp16>(st[4 * j + 2 * r] * (dp[4 * j + 2 * r] - dl[r]),
                                              st[4 * j + 2 * r + 1] * (dp[4 * j + 2 * r + 1] - dl[r]));
        cd_sm90_bwd_wide5_store_pds<L::PDS_COL_BYTES, KW / 8, G0>(sDS + pds, ds16, q_st, lane);
      }
      cd_fence_proxy_async_smem(); /* stmatrix (generic proxy) -> the wgmma reads (async proxy) */
      cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_DS, NMMA); /* all of P and dS are there */

      const int64_t tile_idx = ((int64_t)b * args.heads_q + h) * args.m_blocks + m;
      float *const dq_tile = args.dq_acc + tile_idx * (BM * DQK);
      const uint64_t ds_a = cd_gmma_desc_add(desc_ds_a, pds);
      float dq[32];
      cd_wgmma_fence();
      cd_sm90_gemm_ss<64, BN, kFp16, false, DsA, cd_sm90_mn_major>(dq, ds_a, desc_k_mn);
      cd_wgmma_commit();
#pragma unroll
      for (int t = 0; t < T::SLABS_WG; ++t)
        cd_sm90_gemm_ss<BN, BM, kFp16, true, cd_sm90_mn_major, PdsB>(
          dv[t], cd_gmma_desc_add(desc_dot, sd * L::DO_BYTES + t * L::QS_SLAB), cd_gmma_desc_add(desc_p_b, pds));
      cd_wgmma_commit();

      cd_wgmma_wait<1>(); /* dQ slab S0 done; dV^T pending */
      cd_sm90_fence_regs(dq);
      cd_sm90_bwd_wide_red_dq<1, S0>(dq, dq_tile, warp, lane);

      cd_wgmma_fence();
      cd_sm90_gemm_ss<64, BN, kFp16, false, DsA, cd_sm90_mn_major>(dq, ds_a, cd_gmma_desc_add(desc_k_mn, L::K_SLAB));
      cd_wgmma_commit();
#pragma unroll
      for (int t = 0; t < T::SLABS_WG; ++t)
        cd_sm90_gemm_ss<BN, BM, kFp16, true, cd_sm90_mn_major, PdsB>(
          dk[t], cd_gmma_desc_add(desc_qt, s * L::Q_BYTES + t * L::QS_SLAB), cd_gmma_desc_add(desc_ds_b, pds));
      cd_wgmma_commit();

      cd_wgmma_wait<2>(); /* dV^T done: the dO stage is free */
      __syncwarp();       /* every lane's delta reads of the stage before lane 0 frees it */
      if (lane == 0) cd_mbar_arrive(bar_do_empty + 8 * sd);
      cd_wgmma_wait<1>(); /* dQ slab S0 + 1 done; dK^T pending */
      cd_sm90_fence_regs(dq);
      cd_sm90_bwd_wide_red_dq<1, S0 + 1>(dq, dq_tile, warp, lane);
      cd_wgmma_wait<0>(); /* dK^T done: the Q stage is free */
#pragma unroll
      for (int t = 0; t < T::SLABS_WG; ++t) {
        cd_sm90_fence_regs(dk[t]);
        cd_sm90_fence_regs(dv[t]);
      }
      __syncwarp(); /* every lane's LSE2 reads of the stage before lane 0 frees it */
      if (lane == 0) cd_mbar_arrive(bar_q_empty + 8 * s);
    }

  /* epilogue staging: dK (scaled) in K's place as [80 keys][DQK], dV in V's as [80][DV]
   * (bwd_wide3_parts.cuh cd_sm90_bwd_wide3_stage_t, slab S0 + t of this consumer's slice t) */
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_EPILOGUE, NMMA); /* every consumer is past its last block */
  cd_sm90_bwd_wide3_stage_t<DQK, S0, kFp16>(dk[0], args.scale, sK, warp, lane);
  cd_sm90_bwd_wide3_stage_t<DQK, S0 + 1, kFp16>(dk[1], args.scale, sK, warp, lane);
  cd_sm90_bwd_wide3_stage_t<DV, S0, kFp16>(dv[0], 1.f, sV, warp, lane);
  cd_sm90_bwd_wide3_stage_t<DV, S0 + 1, kFp16>(dv[1], 1.f, sV, warp, lane);
}

template <bool kFp16>
__global__ void __launch_bounds__(cd_sm90_bwd_wide5_tile::THREADS, 1)
    cd_sm90_bwd_wide5_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                             const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                             const cd_sm90_bwd_args args, const int head_dim, const int head_dim_v) {
  typedef cd_sm90_bwd_wide5_tile T;
  typedef cd_sm90_bwd_wide5_smem L;
  constexpr int BM = T::BLOCK_M, BN = T::BLOCK_N, QST = T::Q_STAGES, DST = T::DO_STAGES;
  static_assert((QST & (QST - 1)) == 0 && (DST & (DST - 1)) == 0 && (T::PDS_BUFS & (T::PDS_BUFS - 1)) == 0,
                "the ring positions wrap at 2^32: stage counts powers of two");

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (cd_smem_addr(smem_raw) + 1023u) & ~1023u; /* swizzle atoms: 1024 B */
  const uint32_t bar_kv = base + L::BAR_KV;
  const uint32_t bar_q_full = base + L::BAR_Q_FULL, bar_q_empty = base + L::BAR_Q_EMPTY;
  const uint32_t bar_do_full = base + L::BAR_DO_FULL, bar_do_empty = base + L::BAR_DO_EMPTY;

  int n_block, hk, b;
#if SM90_BWD_PDL
  cd_griddep_launch_dependents(); /* as bwd_wide_kernel.cuh */
#endif
  cd_sm90_bwd_work_of_block<CD_SM90_BWD_NONDET>(args, n_block, hk, b);
  const int wg = cd_sm90_bwd_wide5_setup<QST, DST, 4 * T::CONSUMERS>(tm_q, tm_k, tm_v, tm_do, bar_kv, bar_q_full,
                                                                    bar_q_empty, bar_do_full, bar_do_empty);
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
        const int64_t row0 = ((int64_t)b * args.heads_q + h) * args.sq_pad + (int64_t)m * BM;
        /* Q + LSE2: the stage that block it - QST's dK^T products freed */
        const uint32_t s = it % QST, qph = (it / QST) & 1;
        cd_mbar_wait(bar_q_empty + 8 * s, qph ^ 1);
        const uint32_t qfull = bar_q_full + 8 * s;
        cd_mbar_arrive_expect_tx(qfull, L::Q_BYTES + L::ROW_BYTES);
#pragma unroll
        for (int c = 0; c < L::SQK; ++c)
          cd_tma_load_4d(base + L::Q_OFF + s * L::Q_BYTES + c * L::QS_SLAB, &tm_q, qfull, 64 * c, m * BM, h, b);
        cd_bulk_load_1d(base + L::LSE_OFF + s * L::ROW_BYTES, args.lse2 + row0, L::ROW_BYTES, qfull);
        /* dO + delta: the stage that block it - DST's dV^T products freed */
        const uint32_t sd = it % DST, dph = (it / DST) & 1;
        cd_mbar_wait(bar_do_empty + 8 * sd, dph ^ 1);
        const uint32_t dfull = bar_do_full + 8 * sd;
        cd_mbar_arrive_expect_tx(dfull, L::DO_BYTES + L::ROW_BYTES);
#pragma unroll
        for (int c = 0; c < L::SV; ++c)
          cd_tma_load_4d(base + L::DO_OFF + sd * L::DO_BYTES + c * L::QS_SLAB, &tm_do, dfull, 64 * c, m * BM, h, b);
        cd_bulk_load_1d(base + L::DELTA_OFF + sd * L::ROW_BYTES, args.delta + row0, L::ROW_BYTES, dfull);
      }
    return;
  }

  /* ================================ consumers ================================ */
  cd_setmaxnreg_inc<T::CONSUMER_REGS>();
#if SM90_BWD_PDL
  cd_griddep_wait(); /* before the dQ accumulator's adds (the pre's zeros) */
#endif
  if (wg == 1)
    cd_sm90_bwd_wide5_consumer<kFp16, 0>(args, base, n_block, hk, b, m_lo, m_hi);
  else
    cd_sm90_bwd_wide5_consumer<kFp16, 1>(args, base, n_block, hk, b, m_lo, m_hi);
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_EPILOGUE, T::MMA_THREADS); /* dK and dV staged */
  const int ct = (int)threadIdx.x - 128;
  cd_sm90_bwd_wide3_store<T::DQK / 8, BN, T::MMA_THREADS>(
    base + L::K_OFF, (uint16_t *)args.dk + b * args.dk_sb + hk * args.dk_sh, args.dk_ss, k0, args.seqlen_k,
    head_dim / 8, ct);
  cd_sm90_bwd_wide3_store<T::DV / 8, BN, T::MMA_THREADS>(
    base + L::V_OFF, (uint16_t *)args.dv + b * args.dv_sb + hk * args.dv_sh, args.dv_ss, k0, args.seqlen_k,
    head_dim_v / 8, ct);
}

#endif /* CUDADENT_SM90_BWD_WIDE5_KERNEL_CUH */
