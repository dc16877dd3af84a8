/*
 * bwd_wide_kernel.cuh - the Hopper (sm_90a) attention backward's main kernel for the wide rows of
 * the tile table (bwd_tiles.cuh, WIDE 1: D_QK / D_V = 256 / 256 and 192 / 128): dK, dV of one key
 * block and that block's dQ contributions, as bwd_kernel.cuh computes them for the narrow rows,
 * with the work split over D instead of over keys (at d256 a consumer owning 64 keys would hold
 * dK and dV in 256 fp32 registers a thread). Design note: docs/kernels/sm90_bwd_wide.md; what to
 * try next: docs/kernels/sm90_bwd_wide_next.md.
 *
 * Grid, producer, ring, LSE2 / delta, masks, launch order and the deterministic turn orders are
 * bwd_kernel.cuh's (its helpers are used here); the differences:
 *
 * Blocks: BLOCK_N = 64 keys a CTA, BLOCK_M = 64 query rows an iteration. Both consumers see all 64
 * keys. Per iteration, consumer w (FA3's SdP_swapAB for S and dP; dK / dV not register-sourced):
 *   S^T_w  = K Q_w^T       [64 keys, 32 queries]  queries [32 w, +32): wgmma m64n32, K-major
 *   dP^T_w = V dO_w^T      [64, 32]               likewise
 *   P^T_w, dS^T_w (as bwd_kernel.cuh) -> shared memory (stmatrix, [64 keys][64 queries], 128-byte
 *       swizzle, double-buffered); both consumers meet at a named barrier: all of P^T, dS^T there
 *   dV[:, slabs_v(w)] += P^T dO[:, slabs_v(w)]     A = P^T (K-major), B = dO (MN-major)
 *   dK[:, slabs_k(w)] += dS^T Q[:, slabs_k(w)]     A = dS^T, B = Q
 *   dQ[:, slabs_q(w)]  = dS K[:, slabs_q(w)]       A = dS (MN-major view of dS^T), B = K (MN-major)
 * where slabs_x(w) are 64-column slabs (cd_sm90_bwd_wide_plan: each consumer gets the same number
 * of slab products: d256 2 + 2 + 2; 192 / 128: consumer 0 dV 1, dK 2, dQ 1, consumer 1 1, 1, 2).
 * The dQ product is issued first, dV and dK after it, so that the dQ part's reduce runs while they
 * are in flight (the narrow rows' order). The dQ part goes to the fp32 workspace in the narrow
 * kernels' chunk order (16 x 64 floats a warp and slab, chunk 4 slab + warp: cd_sm90_bwd_post
 * reads it unchanged): staged and bulk-reduced (DQ_BULK 1) or with 16-byte red.global.add.v4.f32
 * from registers (DQ_BULK 0, and every deterministic call); bwd_wide_dq.cuh.
 *
 * Shared memory (cd_sm90_bwd_wide_smem; 16-bit elements, 1024-byte aligned blocks, 128-byte
 * swizzle):
 *   K [D_QK/64][64][64], V [D_V/64][64][64]           loaded once
 *   Q [STAGES][D_QK/64][64][64], dO [STAGES][D_V/64][64][64]   the ring
 *   P^T, dS^T [2][64 keys][64 queries]                double-buffered: one named barrier a block
 *   LSE2, delta [STAGES][64] fp32
 *   dQ staging [8 warps][QN_MAX slabs][1024] fp32     DQ_BULK 1 only
 *   mbarriers: kv_full, q_full[STAGES], q_empty[STAGES]
 *
 * Synchronization: as bwd_kernel.cuh, but the named barriers are the non-aligned barrier.sync
 * (cd_named_bar_sync_any_pc): the two consumers reach them from different template instances.
 * A P^T / dS^T buffer of block i is rewritten in block i + 2,
 * after both consumers passed block i + 1's barrier, which each reaches only after its block-i
 * dV, dK and dQ products (the buffer's readers) completed. q_empty: one arrival per consumer warp
 * once its dV and dK products (the last readers of the stage's Q and dO) completed.
 *
 * Dev trace SM90_BWD_TRACE 1 (bwd_trace.cuh; M2 of docs/kernels/sm90_bwd_wide_next.md): the narrow
 * kernel's stamps at the equivalent points (thread 0 of each consumer, the producer), + 384 B of
 * shared memory; at 0 the macros are empty.
 *
 * Epilogue: dK (scaled) staged in the Q stages as [64 keys][D_QK], dV in the dO stages as
 * [64][D_V], 16-byte chunks XOR-swizzled by key % 8, written as 16-byte row chunks below the real
 * head_dim / head_dim_v and seqlen_k.
 *
 * Varlen (kVarlen of cd_sm90_bwd_wide_body: cd_sm90_bwd_wide_varlen_kernel and its softcap twin,
 * bwd_varlen.cu, behind dispatch.h's CUDADENT_SM90_BWD_VARLEN_WIDE; not deterministic): the narrow
 * rows' scheme (bwd_kernel.cuh "Varlen", bwd_varlen_plan.cuh): a CTA takes a (sequence, key block)
 * unit of the list and a KV head; loads start at the sequence's tokens of the packed tensors, LSE2 /
 * delta rows and dQ tiles at its padded tile, dK / dV rows at its first key; everything else as
 * dense, with the sequence's lengths (cd_sm90_bwd_wide_main's offsets are 0 in the dense kernels).
 *
 * Softcap (kSoftcap of cd_sm90_bwd_wide_body: cd_sm90_bwd_wide_softcap_kernel, dense, not
 * deterministic; docs/kernels/sm90_bwd_softcap.md, "Wide rows"): bwd_kernel.cuh's algebra and
 * register layout. S^T_w becomes t = tanh(S^T_w softmax_scale / softcap) in place (t takes P^T's
 * registers; masked t = -inf); after the dP^T wait P^T = exp2(t softcap log2(e) - LSE2) and dS^T =
 * P^T (dP^T - delta) max(1 - t^2, 0), both packed there. A kernel of its own, so that the kernels
 * without softcap keep their names, parameters and code.
 */
#ifndef CUDADENT_SM90_BWD_WIDE_KERNEL_CUH
#define CUDADENT_SM90_BWD_WIDE_KERNEL_CUH

#include "kernels/sm90/bwd_kernel.cuh"
#include "kernels/sm90/bwd_wide_dq.cuh"

/* Consumer w's 64-column slabs: dV [V_LO, +V_N), dK [K_LO, +K_N), dQ [Q_LO, +Q_N). dV halves;
 * dK and dQ (D_QK / 64 slabs each) are split so that both consumers have V_N + K_N + Q_N slab
 * products: consumer 0 the larger half of dK, consumer 1 the larger half of dQ. */
template <int DQK, int DV, int W> struct cd_sm90_bwd_wide_plan {
  static constexpr int SQK = DQK / 64, SV = DV / 64, K_N0 = (SQK + 1) / 2;
  static constexpr int V_N = SV / 2, V_LO = W * V_N;
  static constexpr int K_LO = W == 0 ? 0 : K_N0, K_N = W == 0 ? K_N0 : SQK - K_N0;
  static constexpr int Q_LO = W == 0 ? 0 : SQK - K_N0, Q_N = W == 0 ? SQK - K_N0 : K_N0;
  static_assert(DQK % 64 == 0 && DV % 64 == 0 && SV % 2 == 0 && SQK >= 2, "whole slabs, halved");
};

template <int DQK, int DV> struct cd_sm90_bwd_wide_smem {
  typedef cd_sm90_bwd_tile<DQK, DV> tile;
  static constexpr int BM = tile::BLOCK_M, BN = tile::BLOCK_N, ST = tile::STAGES;
  static constexpr int SQK = DQK / 64, SV = DV / 64, QN_MAX = (SQK + 1) / 2;
  static constexpr int K_BYTES = BN * DQK * 2, V_BYTES = BN * DV * 2;
  static constexpr int Q_BYTES = BM * DQK * 2, DO_BYTES = BM * DV * 2; /* one stage */
  static constexpr int ROW_BYTES = BM * 4;                              /* LSE2 or delta */
  static constexpr int PDS_BYTES = BN * BM * 2;                         /* one P^T or dS^T */
  static constexpr int DQ_WARP_BYTES = 16 * 64 * 4;                     /* a warp's slab part */
  static constexpr int K_OFF = 0;
  static constexpr int V_OFF = K_OFF + K_BYTES;
  static constexpr int Q_OFF = V_OFF + V_BYTES;
  static constexpr int DO_OFF = Q_OFF + ST * Q_BYTES;
  static constexpr int P_OFF = DO_OFF + ST * DO_BYTES;
  static constexpr int DS_OFF = P_OFF + 2 * PDS_BYTES;
  static constexpr int LSE_OFF = DS_OFF + 2 * PDS_BYTES;
  static constexpr int DELTA_OFF = LSE_OFF + ST * ROW_BYTES;
  static constexpr int DQ_OFF = (DELTA_OFF + ST * ROW_BYTES + 1023) / 1024 * 1024;
  static constexpr int DQ_BYTES = tile::DQ_BULK ? 8 * QN_MAX * DQ_WARP_BYTES : 0;
  static constexpr int BAR_OFF = DQ_OFF + DQ_BYTES;
  static constexpr int NUM_BARS = 1 + 2 * ST;
  /* SM90_BWD_TRACE (a dev build, bwd_trace.cuh): the consumers' stamps of three blocks, [3][2][16] u32 */
  static constexpr int TRACE_OFF = BAR_OFF + 8 * NUM_BARS, TRACE_BYTES = SM90_BWD_TRACE ? 384 : 0;
  static constexpr int BYTES = BAR_OFF + 8 * NUM_BARS + TRACE_BYTES + 1024; /* + slack to align the base */
  static_assert(BM == 64 && BN == 64, "one 64-row slab of P^T / dS^T; S^T halves of 32 queries");
  static_assert(P_OFF % 1024 == 0, "swizzle atoms");
  static_assert(BN * DQK * 2 <= ST * Q_BYTES && BN * DV * 2 <= ST * DO_BYTES, "epilogue staging");
  static_assert(BYTES <= 227 * 1024, "shared memory over the sm_90 limit");
};

/* One consumer's whole walk and its epilogue's staging (W: which consumer, a template value so that
 * its slabs are constants). */
template <int DQK, int DV, bool kFp16, int kDet, int W, bool kSoftcap>
__device__ __forceinline__ void cd_sm90_bwd_wide_consumer(const cd_sm90_bwd_args &args, uint32_t base,
                                                          const uint8_t *gbase, int n_block, int hk, int b,
                                                          int m_lo, int m_hi, const float softcap_pre, int mt0) {
  typedef cd_sm90_bwd_tile<DQK, DV> tile;
  typedef cd_sm90_bwd_wide_smem<DQK, DV> L;
  typedef cd_sm90_bwd_wide_plan<DQK, DV, W> P;
  constexpr int BM = tile::BLOCK_M, BN = tile::BLOCK_N, ST = tile::STAGES;
  constexpr bool kRed = !tile::DQ_BULK || kDet; /* dQ from registers */
  const uint32_t sK = base + L::K_OFF, sV = base + L::V_OFF, sQ = base + L::Q_OFF;
  const uint32_t sDO = base + L::DO_OFF, sP = base + L::P_OFF, sDS = base + L::DS_OFF;
  const uint32_t bar_q_full = base + L::BAR_OFF + 8, bar_q_empty = bar_q_full + 8 * ST;
  const int ct = threadIdx.x - 128 * (W + 1);
  const int warp = ct / 32, lane = ct % 32;
  const int key_row0 = 16 * warp + lane / 4; /* this thread's keys in the block: this and + 8 */
#if SM90_BWD_TRACE
  constexpr int cw = W; /* SM90_BWD_TRACE_EV's consumer */
#endif

  /* S^T / dP^T: A = all 64 keys of K / V (K-major), B = this consumer's 32 query rows of Q / dO
   * (K-major, 32 rows = 4 swizzle atoms into each slab) */
  const uint64_t desc_k_a = cd_gmma_desc_sw128(sK, 1, 1024);
  const uint64_t desc_v_a = cd_gmma_desc_sw128(sV, 1, 1024);
  const uint64_t desc_q_b = cd_gmma_desc_sw128(sQ + W * 32 * 128, 1, 1024);   /* + stage */
  const uint64_t desc_do_b = cd_gmma_desc_sw128(sDO + W * 32 * 128, 1, 1024);
  /* dV / dK: A = P^T / dS^T (K-major: keys are rows, queries contiguous), B = dO / Q slabs
   * (MN-major, LBO = the distance between slabs) */
  const uint64_t desc_pt = cd_gmma_desc_sw128(sP, 1, 1024);  /* + buffer */
  const uint64_t desc_dst = cd_gmma_desc_sw128(sDS, 1, 1024);
  const uint64_t desc_do_mn = cd_gmma_desc_sw128(sDO + P::V_LO * BM * 128, BM * 128, 1024);
  const uint64_t desc_q_mn = cd_gmma_desc_sw128(sQ + P::K_LO * BM * 128, BM * 128, 1024);
  /* dQ: A = dS (the MN-major view of dS^T), B = K slabs (MN-major) */
  const uint64_t desc_ds = cd_gmma_desc_sw128(sDS, BN * 128, 1024);
  const uint64_t desc_k_mn = cd_gmma_desc_sw128(sK + P::Q_LO * BN * 128, BN * 128, 1024);
  const uint32_t stage_dq = base + L::DQ_OFF + (W * 4 + warp) * L::QN_MAX * L::DQ_WARP_BYTES;

  float dv[P::V_N * 32], dk[P::K_N * 32];
#pragma unroll
  for (int i = 0; i < P::V_N * 32; ++i) dv[i] = 0.f;
#pragma unroll
  for (int i = 0; i < P::K_N * 32; ++i) dk[i] = 0.f;

  const int k0 = n_block * BN;
  const int shift = args.seqlen_k - args.seqlen_q;
  const bool key_tail = k0 + BN > args.seqlen_k;
  if (m_hi > m_lo) cd_mbar_wait(base + L::BAR_OFF, 0);
  const int h_lo = hk * args.group, h_hi = h_lo + args.group;

  uint32_t it = 0;
  for (int h = h_lo; h < h_hi; ++h)
    for (int j = m_lo; j < m_hi; ++j, ++it) {
      const int m = cd_sm90_bwd_walk_m<kDet>(j, m_lo, m_hi, n_block);
      const uint32_t s = it % ST, ph = (it / ST) & 1, buf = it & 1;
      cd_mbar_wait(bar_q_full + 8 * s, ph);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_Q_FULL);

      float st[16], dpt[16]; /* [64 keys, 32 queries]: element 4j + 2r + e is key key_row0 + 8r,
                              * query 32 W + 8j + 2 (lane % 4) + e */
      cd_wgmma_fence();
      cd_sm90_gemm_ss<32, DQK, kFp16, false, cd_sm90_k_major<BN>, cd_sm90_k_major<BM>>(
        st, desc_k_a, cd_gmma_desc_add(desc_q_b, s * L::Q_BYTES));
      cd_wgmma_commit();
      cd_sm90_gemm_ss<32, DV, kFp16, false, cd_sm90_k_major<BN>, cd_sm90_k_major<BM>>(
        dpt, desc_v_a, cd_gmma_desc_add(desc_do_b, s * L::DO_BYTES));
      cd_wgmma_commit();

      const float *lse_s = (const float *)(gbase + L::LSE_OFF + s * L::ROW_BYTES) + 32 * W;
      const float *delta_s = (const float *)(gbase + L::DELTA_OFF + s * L::ROW_BYTES) + 32 * W;
      cd_wgmma_wait<1>();
      cd_sm90_fence_regs(st);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_ST_WAIT);
      const int r0 = m * BM, rl = r0 + BM - 1;
      const bool need_mask = key_tail ||
                             (args.window_right >= 0 && k0 + BN - 1 > r0 + shift + args.window_right) ||
                             (args.window_left >= 0 && k0 < rl + shift - args.window_left);
      if constexpr (kSoftcap) {
        /* softcap: S^T becomes t = tanh(s softcap_pre) in place; P^T and dS^T from it after the
         * dP^T wait, below */
#pragma unroll
        for (int i = 0; i < 16; ++i) st[i] = cd_softcap_tanh(st[i] * softcap_pre);
      } else {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 l2 = *reinterpret_cast<const float2 *>(lse_s + 8 * j + 2 * (lane & 3));
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          st[4 * j + 2 * r] = cd_exp2(fmaf(st[4 * j + 2 * r], args.scale_log2, -l2.x));
          st[4 * j + 2 * r + 1] = cd_exp2(fmaf(st[4 * j + 2 * r + 1], args.scale_log2, -l2.y));
        }
      }
      }
      if (need_mask) {
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int key = k0 + key_row0 + 8 * r;
              const int d = key - (r0 + 32 * W + 8 * j + 2 * (lane & 3) + e) - shift;
              const bool vis = key < args.seqlen_k &&
                               (args.window_left < 0 || d >= -args.window_left) &&
                               (args.window_right < 0 || d <= args.window_right);
              /* softcap: t = -inf, so that P = 0 and the factor max(1 - t^2, 0) = 0 */
              if (!vis) st[4 * j + 2 * r + e] = kSoftcap ? -__int_as_float(0x7f800000) : 0.f;
            }
      }
      uint32_t p16[8], ds16[8];
      if constexpr (kSoftcap) {
        /* P = exp2(t softcap log2(e) - LSE2) (args.scale_log2 is softcap log2(e)) and dS^T =
         * P (dP^T - delta) (1 - t^2), both packed after the dP^T wait (bwd_kernel.cuh's order) */
        cd_wgmma_wait<0>(); /* dP^T done */
        cd_sm90_fence_regs(dpt);
        SM90_BWD_TRACE_EV(it, CD_BWD_EV_DPT_WAIT);
        cd_sm90_bwd_softcap_p_ds<kFp16, 4>(st, dpt, lse_s, delta_s, args.scale_log2, lane, p16, ds16);
      } else {
#pragma unroll
      for (int i = 0; i < 8; ++i) p16[i] = cd_pack2<kFp16>(st[2 * i], st[2 * i + 1]);

      cd_wgmma_wait<0>(); /* dP^T done */
      cd_sm90_fence_regs(dpt);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DPT_WAIT);
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 dl = *reinterpret_cast<const float2 *>(delta_s + 8 * j + 2 * (lane & 3));
#pragma unroll
        for (int r = 0; r < 2; ++r)
          ds16[2 * j + r] = cd_pack2<kFp16>(st[4 * j + 2 * r] * (dpt[4 * j + 2 * r] - dl.x),
                                            st[4 * j + 2 * r + 1] * (dpt[4 * j + 2 * r + 1] - dl.y));
      }
      }

      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DV_ISSUED); /* the wide rows: P^T, dS^T packed (bwd_trace.cuh) */
      /* P^T and dS^T to shared memory, [64 keys][64 queries], 128-byte swizzle: this consumer's
       * 16-byte chunks of queries are 4 W .. 4 W + 3 (stmatrix as bwd_kernel.cuh) */
      {
        const int key = 16 * warp + ((lane >> 3) & 1) * 8 + (lane & 7);
#pragma unroll
        for (int j = 0; j < 4; j += 2) {
          const int jj = 4 * W + j + (lane >> 4);
          const uint32_t off = buf * L::PDS_BYTES + key * 128 + ((jj ^ (key & 7)) << 4);
          cd_stmatrix_x4(sP + off, p16[2 * j], p16[2 * j + 1], p16[2 * j + 2], p16[2 * j + 3]);
          cd_stmatrix_x4(sDS + off, ds16[2 * j], ds16[2 * j + 1], ds16[2 * j + 2], ds16[2 * j + 3]);
        }
      }
      cd_fence_proxy_async_smem(); /* stmatrix (generic proxy) -> the wgmma reads (async proxy) */
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DS_STORED);
      cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_DS, 256); /* both halves of P^T and dS^T are there */
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_BAR_DS);

      cd_wgmma_fence();
      /* dQ first, its reduce under the dV and dK products (the narrow rows' order; session 23: d256
       * +7.5-9.2%, 192 / 128 +0-2%) */
      float dq[P::Q_N * 32];
      cd_sm90_gemm_ss<P::Q_N * 64, BN, kFp16, false, cd_sm90_mn_major, cd_sm90_mn_major>(
        dq, cd_gmma_desc_add(desc_ds, buf * L::PDS_BYTES), desc_k_mn);
      cd_wgmma_commit();
      cd_sm90_gemm_ss<P::V_N * 64, BM, kFp16, true, cd_sm90_k_major<BN>, cd_sm90_mn_major>(
        dv, cd_gmma_desc_add(desc_pt, buf * L::PDS_BYTES), cd_gmma_desc_add(desc_do_mn, s * L::DO_BYTES));
      cd_sm90_gemm_ss<P::K_N * 64, BM, kFp16, true, cd_sm90_k_major<BN>, cd_sm90_mn_major>(
        dk, cd_gmma_desc_add(desc_dst, buf * L::PDS_BYTES), cd_gmma_desc_add(desc_q_mn, s * L::Q_BYTES));
      cd_wgmma_commit();
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DQDK_ISSUED); /* the wide rows: dQ, dV and dK issued */

      cd_wgmma_wait<1>(); /* dQ done; dV and dK pending */
      cd_sm90_fence_regs(dq);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DVDQ_WAIT); /* the wide rows: dQ done */
      const int64_t tile_idx = ((int64_t)b * args.heads_q + h) * args.m_blocks + mt0 + m;
      float *const tile_dst = args.dq_acc + tile_idx * (BM * DQK);
      if constexpr (kDet)
        cd_sm90_bwd_wide_det_dq<P::Q_N, P::Q_LO, kDet>(dq, args, tile_dst, tile_idx, m, n_block,
                                                       W == 0 && warp == 0 && lane == 0, warp, lane);
      else if constexpr (SM90_BWD_SKIP_DQ == 1 || (SM90_BWD_SKIP_DQ == 3 && W == 0))
        ; /* dev measurement: no dQ reduce (config.cuh) */
      else if constexpr (kRed)
        cd_sm90_bwd_wide_red_dq<P::Q_N, P::Q_LO>(dq, tile_dst, warp, lane);
      else
        cd_sm90_bwd_wide_bulk_dq<P::Q_N, P::Q_LO>(dq, tile_dst, stage_dq, warp, lane);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_REDUCE);
      cd_wgmma_wait<0>(); /* dV and dK products done: the stage is free */
      cd_sm90_fence_regs(dv);
      cd_sm90_fence_regs(dk);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DK_WAIT);
      __syncwarp(); /* every lane's LSE2 / delta reads of the stage before lane 0 frees it */
      if (lane == 0) cd_mbar_arrive(bar_q_empty + 8 * s);
    }
  if (!kRed && lane == 0) cd_tma_store_wait_read<0>(); /* shared memory stays until read */

  /* epilogue staging: dK (scaled) in the Q stages as [64 keys][DQK], dV in the dO stages as
   * [64][DV]; 16-byte chunk c of a row at chunk c ^ (key % 8) (the fragment stores hit 32 banks) */
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_EPILOGUE, 256); /* both consumers are past their last block */
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = key_row0 + 8 * r;
#pragma unroll
    for (int j = 0; j < P::K_N * 8; ++j) {
      const int c = P::K_LO * 8 + j;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sQ + key * (DQK * 2) + ((c ^ (key & 7)) << 4) + 4 * (lane & 3)),
                   "r"(cd_pack2<kFp16>(dk[4 * j + 2 * r] * args.scale, dk[4 * j + 2 * r + 1] * args.scale))
                   : "memory");
    }
#pragma unroll
    for (int j = 0; j < P::V_N * 8; ++j) {
      const int c = P::V_LO * 8 + j;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sDO + key * (DV * 2) + ((c ^ (key & 7)) << 4) + 4 * (lane & 3)),
                   "r"(cd_pack2<kFp16>(dv[4 * j + 2 * r], dv[4 * j + 2 * r + 1]))
                   : "memory");
    }
  }
}

/* Rows [0, 64) x 16-byte chunks [0, cpr_real) of a staged [64][CPR * 8] tile to global memory
 * (keys past seqlen_k not written), by the 256 consumer threads. */
template <int CPR>
__device__ __forceinline__ void cd_sm90_bwd_wide_store(uint32_t stage, void *dst, int64_t ss, int k0,
                                                       int seqlen_k, int cpr_real) {
  for (int idx = threadIdx.x - 128; idx < 64 * CPR; idx += 256) {
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

/* Everything after the work decode and the set-up: the producer's loads, the consumers' walks and
 * the epilogue of key block n_block of KV head hk, batch b. kVarlen (bwd_varlen.cu): args carries
 * the sequence's lengths; its queries and keys start at tokens q_tok0 / k_tok0 of the packed
 * tensors (batch coordinate 0), its LSE2 / delta rows and dQ tiles at padded tile mt0 (all 0 in
 * the dense kernels, where they fold away). */
template <int DQK, int DV, bool kFp16, int kDet, bool kSoftcap, bool kVarlen>
__device__ __forceinline__ void cd_sm90_bwd_wide_main(const CUtensorMap &tm_q, const CUtensorMap &tm_k,
                                                      const CUtensorMap &tm_v, const CUtensorMap &tm_do,
                                                      const cd_sm90_bwd_args &args, const int head_dim,
                                                      const int head_dim_v, const float softcap_pre,
                                                      const uint32_t base, const uint8_t *gbase, const int wg,
                                                      const int n_block, const int hk, const int b,
                                                      const int q_tok0, const int k_tok0, const int mt0) {
  typedef cd_sm90_bwd_tile<DQK, DV> tile;
  static_assert(cd_sm90_regs_fit(tile::PRODUCER_REGS, 2, tile::CONSUMER_REGS), "setmaxnreg budgets (reg_budget.cuh)");
  typedef cd_sm90_bwd_wide_smem<DQK, DV> L;
  constexpr int BM = tile::BLOCK_M, BN = tile::BLOCK_N, ST = tile::STAGES;
  const uint32_t bar_kv = base + L::BAR_OFF;
  const uint32_t bar_q_full = bar_kv + 8, bar_q_empty = bar_q_full + 8 * ST;

  const int k0 = n_block * BN;
  int m_hi, m_lo; /* in this order since the body left the kernel: the kernels' SASS as before */
  cd_sm90_bwd_q_blocks<BM, BN>(args, n_block, &m_lo, &m_hi);
  SM90_BWD_TRACE_BEGIN(n_block, hk, b);

  if (wg == 0) {
    /* ================================ producer ================================ */
    cd_setmaxnreg_dec<tile::PRODUCER_REGS>();
    if (threadIdx.x != 0 || m_hi == m_lo) return;
    SM90_BWD_TRACE_PRODUCER_BEGIN(args.group * (m_hi - m_lo));
    cd_sm90_bwd_wide_load_kv<L::SQK, L::SV>(base + L::K_OFF, base + L::V_OFF, BN * 128, &tm_k, &tm_v, bar_kv,
                                            L::K_BYTES + L::V_BYTES, k_tok0 + k0, hk, b);
#if SM90_BWD_PDL
    /* K, V: the caller's; the LSE2 / delta rows below: the pre kernel's (varlen: every thread
     * waited in the body) */
    if constexpr (!kVarlen) cd_griddep_wait();
#endif
    const int h_lo = hk * args.group, h_hi = h_lo + args.group;
    uint32_t it = 0;
    for (int h = h_lo; h < h_hi; ++h)
      for (int j = m_lo; j < m_hi; ++j, ++it) {
        const int m = cd_sm90_bwd_walk_m<kDet>(j, m_lo, m_hi, n_block);
        const uint32_t s = it % ST, ph = (it / ST) & 1;
        SM90_BWD_TRACE_PRODUCER_WAIT(it);
        cd_mbar_wait(bar_q_empty + 8 * s, ph ^ 1);
        SM90_BWD_TRACE_PRODUCER(it);
        const uint32_t full = bar_q_full + 8 * s;
        cd_mbar_arrive_expect_tx(full, L::Q_BYTES + L::DO_BYTES + 2 * L::ROW_BYTES);
#pragma unroll
        for (int c = 0; c < L::SQK; ++c)
          cd_tma_load_4d(base + L::Q_OFF + s * L::Q_BYTES + c * BM * 128, &tm_q, full, 64 * c, q_tok0 + m * BM, h,
                         b);
#pragma unroll
        for (int c = 0; c < L::SV; ++c)
          cd_tma_load_4d(base + L::DO_OFF + s * L::DO_BYTES + c * BM * 128, &tm_do, full, 64 * c, q_tok0 + m * BM,
                         h, b);
        const int64_t row0 = ((int64_t)b * args.heads_q + h) * args.sq_pad + (int64_t)(mt0 + m) * BM;
        cd_bulk_load_1d(base + L::LSE_OFF + s * L::ROW_BYTES, args.lse2 + row0, L::ROW_BYTES, full);
        cd_bulk_load_1d(base + L::DELTA_OFF + s * L::ROW_BYTES, args.delta + row0, L::ROW_BYTES, full);
        SM90_BWD_TRACE_PRODUCER_COPY(it);
      }
    SM90_BWD_TRACE_PRODUCER_END(it);
    return;
  }

  /* ================================ consumers ================================ */
  cd_setmaxnreg_inc<tile::CONSUMER_REGS>();
#if SM90_BWD_PDL
  if constexpr (!kVarlen) cd_griddep_wait(); /* before the dQ accumulator's adds and the semaphores (the pre's) */
#endif
  if (wg == 1)
    cd_sm90_bwd_wide_consumer<DQK, DV, kFp16, kDet, 0, kSoftcap>(args, base, gbase, n_block, hk, b, m_lo, m_hi,
                                                                 softcap_pre, mt0);
  else
    cd_sm90_bwd_wide_consumer<DQK, DV, kFp16, kDet, 1, kSoftcap>(args, base, gbase, n_block, hk, b, m_lo, m_hi,
                                                                 softcap_pre, mt0);
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_EPILOGUE, 256); /* dK and dV staged */
  const int k0w = n_block * BN;
  cd_sm90_bwd_wide_store<DQK / 8>(base + L::Q_OFF,
                                  (uint16_t *)args.dk + b * args.dk_sb + hk * args.dk_sh + (int64_t)k_tok0 * args.dk_ss,
                                  args.dk_ss, k0w, args.seqlen_k, head_dim / 8);
  cd_sm90_bwd_wide_store<DV / 8>(base + L::DO_OFF,
                                 (uint16_t *)args.dv + b * args.dv_sb + hk * args.dv_sh + (int64_t)k_tok0 * args.dv_ss,
                                 args.dv_ss, k0w, args.seqlen_k, head_dim_v / 8);
  /* both consumers' ends after the global stores (the narrow kernels': after their own epilogue) */
  SM90_BWD_TRACE_END(wg - 1, (int)threadIdx.x - 128 * wg, (uint32_t)(args.group * (m_hi - m_lo)));
}

/* The kernels' body (kSoftcap: the softcap kernels'; softcap_pre = softmax_scale / softcap there,
 * unused otherwise): the work decode and the set-up, then cd_sm90_bwd_wide_main. Dense (kVarlen
 * false): the grid is the work (cd_sm90_bwd_work_of_block). Varlen (the narrow rows' scheme,
 * bwd_kernel.cuh cd_sm90_bwd_body): a CTA takes a (unit of the list, KV head) in the dense LPT
 * order; past the list's count the whole CTA returns; the unit's sequence lengths replace
 * seqlen_q / seqlen_k in a copy of the arguments, so the mask rule, the query-block range and the
 * key tail are the sequence's (query rows past its end have LSE2 = +inf in the padded layout:
 * P = 0, dS = 0). */
template <int DQK, int DV, bool kFp16, int kDet, bool kSoftcap, bool kVarlen = false>
__device__ __forceinline__ void cd_sm90_bwd_wide_body(const CUtensorMap &tm_q, const CUtensorMap &tm_k,
                                                      const CUtensorMap &tm_v, const CUtensorMap &tm_do,
                                                      const cd_sm90_bwd_args &args, const int head_dim,
                                                      const int head_dim_v, const float softcap_pre,
                                                      const cd_sm90_bwd_varlen_units &vu) {
  typedef cd_sm90_bwd_tile<DQK, DV> tile;
  typedef cd_sm90_bwd_wide_smem<DQK, DV> L;
  constexpr int ST = tile::STAGES;
  static_assert(tile::WIDE == 1, "a wide row");
  static_assert((ST & (ST - 1)) == 0, "the ring position wraps at 2^32: ST a power of two");
  static_assert(!SM90_BWD_TRACE || ST == 2, "the trace copies block it - 2's stamps once block it's stage is free");
  static_assert(!kVarlen || kDet == CD_SM90_BWD_NONDET, "varlen: not deterministic");

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (cd_smem_addr(smem_raw) + 1023u) & ~1023u; /* swizzle atoms: 1024 B */
  const uint8_t *const gbase = smem_raw + (base - cd_smem_addr(smem_raw));
  const uint32_t bar_kv = base + L::BAR_OFF;
  const uint32_t bar_q_full = bar_kv + 8, bar_q_empty = bar_q_full + 8 * ST;

#if SM90_BWD_PDL
  /* as the narrow kernels (bwd_kernel.cuh cd_sm90_bwd_body): the post may be scheduled once every
   * CTA has started; the dense grid waits for the pre where the producer's K / V loads are issued
   * and where the consumers start, the varlen one right after the set-up, before reading the list */
  cd_griddep_launch_dependents();
#endif
  if constexpr (kVarlen) {
    const int wg = cd_sm90_bwd_setup<ST>(tm_q, tm_k, tm_v, tm_do, bar_kv, bar_q_full, bar_q_empty);
#if SM90_BWD_PDL
    cd_griddep_wait();
#endif
    const int count = *vu.count;
    if ((int64_t)blockIdx.x >= (int64_t)count * vu.heads_kv) return; /* past the list: the whole CTA */
    int unit, hk, b;
    cd_sm90_bwd_grouped_work(blockIdx.x, count, vu.heads_kv, vu.heads_kv,
                             SM90_BWD_LPT_GROUP > 0 ? SM90_BWD_LPT_GROUP : 1, &unit, &hk, &b);
    const int4 seq = vu.seqs[unit];
    const int2 blk = vu.blocks[unit];
    cd_sm90_bwd_args a = args;
    a.seqlen_q = seq.z;
    a.seqlen_k = seq.w;
    cd_sm90_bwd_wide_main<DQK, DV, kFp16, kDet, kSoftcap, true>(tm_q, tm_k, tm_v, tm_do, a, head_dim, head_dim_v,
                                                                softcap_pre, base, gbase, wg, blk.x, hk, 0, seq.x,
                                                                seq.y, blk.y);
  } else {
    int n_block, hk, b;
    cd_sm90_bwd_work_of_block<kDet>(args, n_block, hk, b);
    const int wg = cd_sm90_bwd_setup<ST>(tm_q, tm_k, tm_v, tm_do, bar_kv, bar_q_full, bar_q_empty);
    cd_sm90_bwd_wide_main<DQK, DV, kFp16, kDet, kSoftcap, false>(tm_q, tm_k, tm_v, tm_do, args, head_dim, head_dim_v,
                                                                 softcap_pre, base, gbase, wg, n_block, hk, b, 0, 0,
                                                                 0);
  }
}

template <int DQK, int DV, bool kFp16, int kDet>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_wide_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                            const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                            const cd_sm90_bwd_args args, const int head_dim, const int head_dim_v) {
  cd_sm90_bwd_wide_body<DQK, DV, kFp16, kDet, false>(tm_q, tm_k, tm_v, tm_do, args, head_dim, head_dim_v, 0.f,
                                                     cd_sm90_bwd_varlen_units{nullptr, nullptr, nullptr, 1});
}

/* The wide rows' softcap kernel (bwd_wide.cu: dense, not deterministic): softcap_pre = softmax_scale
 * / softcap, args.scale_log2 = softcap log2(e), as bwd_kernel.cuh's cd_sm90_bwd_softcap_kernel. */
template <int DQK, int DV, bool kFp16>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_wide_softcap_kernel(const __grid_constant__ CUtensorMap tm_q,
                                    const __grid_constant__ CUtensorMap tm_k,
                                    const __grid_constant__ CUtensorMap tm_v,
                                    const __grid_constant__ CUtensorMap tm_do, const cd_sm90_bwd_args args,
                                    const int head_dim, const int head_dim_v, const float softcap_pre) {
  cd_sm90_bwd_wide_body<DQK, DV, kFp16, CD_SM90_BWD_NONDET, true>(tm_q, tm_k, tm_v, tm_do, args, head_dim,
                                                                  head_dim_v, softcap_pre,
                                                                  cd_sm90_bwd_varlen_units{nullptr, nullptr, nullptr, 1});
}

/* The wide rows' varlen kernels (bwd_varlen.cu, where dispatch.h's CUDADENT_SM90_BWD_VARLEN_WIDE is
 * 1; not deterministic): a 1-d grid of the list's capacity x heads_kv CTAs over the packed tensors
 * (args.dk / dv batch strides 0), the padded dQ / LSE2 / delta layout of bwd_varlen_plan.cuh; the
 * softcap one's scores in units of softcap as the dense softcap kernel's. */
template <int DQK, int DV, bool kFp16>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_wide_varlen_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                                   const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                                   const cd_sm90_bwd_args args, const int head_dim, const int head_dim_v,
                                   const cd_sm90_bwd_varlen_units vu) {
  cd_sm90_bwd_wide_body<DQK, DV, kFp16, CD_SM90_BWD_NONDET, false, true>(tm_q, tm_k, tm_v, tm_do, args, head_dim,
                                                                         head_dim_v, 0.f, vu);
}

template <int DQK, int DV, bool kFp16>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_wide_varlen_softcap_kernel(const __grid_constant__ CUtensorMap tm_q,
                                           const __grid_constant__ CUtensorMap tm_k,
                                           const __grid_constant__ CUtensorMap tm_v,
                                           const __grid_constant__ CUtensorMap tm_do, const cd_sm90_bwd_args args,
                                           const int head_dim, const int head_dim_v,
                                           const cd_sm90_bwd_varlen_units vu, const float softcap_pre) {
  cd_sm90_bwd_wide_body<DQK, DV, kFp16, CD_SM90_BWD_NONDET, true, true>(tm_q, tm_k, tm_v, tm_do, args, head_dim,
                                                                        head_dim_v, softcap_pre, vu);
}

#endif /* CUDADENT_SM90_BWD_WIDE_KERNEL_CUH */
