/*
 * bwd_unit.cuh - the consumers' work on one unit (key block, KV head, batch) of the Hopper
 * backward's narrow-row main kernel: their operand descriptors, the dV / dK accumulators, the
 * K / V wait, the block loop over (query head, query block) with its five products, the dQ
 * reduce-add, and the dK / dV epilogue. Moved out of bwd_kernel.cuh's cd_sm90_bwd_body (whose
 * opening comment is the design: warps, shared memory, synchronization) unchanged, so that the
 * persistent kernel (bwd_persist.cuh, config.cuh SM90_BWD_PERSISTENT, a dev build's) runs the
 * same code on each of its units; the library's kernels call it once (kPersist false), with the
 * SASS they had (cuobjdump, function by function, docs/kernels/sm90_bwd_next.md section 10).
 *
 * kv_parity: the phase of the K / V barrier to wait for (0 for a one-unit CTA); it: the ring
 * position, continued by the caller across units. kPersist adds two arrivals (one a consumer
 * warp): on bar_kv_empty once the unit's last K / V reader has completed (before the epilogue),
 * and on bar_epi_done once the epilogue's last read of its staging in the Q / dO stages is done.
 */
#ifndef CUDADENT_SM90_BWD_UNIT_CUH
#define CUDADENT_SM90_BWD_UNIT_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/sm90/config.cuh"
#include "kernels/sm90/bwd_tiles.cuh"
#include "kernels/sm90/gemm.cuh"
#include "kernels/sm90/named_barriers.cuh"
#include "kernels/sm90/ptx_sm90.cuh"
#include "kernels/sm90/bwd_parts.cuh"    /* smem layout, arguments, dQ reduce */
#include "kernels/sm90/bwd_trace.cuh"    /* SM90_BWD_TRACE (dev): empty macros at 0 */
#include "kernels/sm90/bwd_epilogue.cuh" /* dK / dV out */
#include "kernels/sm80/ptx_sm80.cuh"     /* cd_softcap_tanh: the portable kernels' tanh (kSoftcap) */

/* Consumer warp (cw, warp, lane) of unit (n_block, hk, b), query blocks [m_lo, m_hi) of each query
 * head of the KV head; base / gbase: the 1024-aligned shared-memory base (address, pointer);
 * k_tok0, mt0: varlen's first key token and padded tile (0 dense). */
template <int D, bool kFp16, int kDet, bool kVarlen, int BM_, bool kSoftcap, bool kPersist = false>
__device__ __forceinline__ void cd_sm90_bwd_consumer_unit(
    const cd_sm90_bwd_args &args_ref, const uint32_t base, uint8_t *const gbase, const int n_block, const int hk,
    const int b, const int m_lo, const int m_hi, const int k_tok0, const int mt0, const int cw, const int warp,
    const int lane, const int head_dim, const int head_dim_v, const float softcap_pre, const uint32_t kv_parity,
    uint32_t &it, const uint32_t bar_kv_empty = 0, const uint32_t bar_epi_done = 0) {
  const cd_sm90_bwd_args args = args_ref;
  typedef cd_sm90_bwd_tile<D> tile;
  constexpr bool kDqWarp = kDet != CD_SM90_BWD_NONDET;
  constexpr int DQB = cd_sm90_bwd_dq_bufs<D, BM_, kDet>();
  typedef cd_sm90_bwd_smem<D, BM_, DQB> L;
  constexpr int BM = BM_, BN = tile::BLOCK_N, ST = tile::STAGES;
  typedef cd_sm90_bwd_ops<D, BM, BN> O;
  constexpr bool SWAP = L::SWAP;
  /* the named barrier among the two consumers: their dS^T are in shared memory (the epilogue's,
   * CD_SM90_BAR_BWD_EPILOGUE, is bwd_epilogue.cuh's) */
  constexpr int BAR_DS = CD_SM90_BAR_BWD_DS;
  const uint32_t sK = base + L::K_OFF, sV = base + L::V_OFF, sQ = base + L::Q_OFF;
  const uint32_t sDO = base + L::DO_OFF, sDS = base + L::DS_OFF, sDQ = base + L::DQ_OFF;
  const uint32_t bar_kv = base + L::BAR_OFF;
  const uint32_t bar_q_full = bar_kv + 8, bar_q_empty = bar_q_full + 8 * ST;
  const int k0 = n_block * BN;
  const int h_lo = hk * args.group, h_hi = h_lo + args.group; /* the KV head's query heads */
  const int key_in_block0 = 64 * cw + 16 * warp + lane / 4; /* this thread's keys: this and + 8 */

  /* A of S^T / dP^T: this consumer's 64 keys start 64 cw rows into each K / V block */
  const uint64_t desc_k_a = O::desc_k_a(sK, cw);
  const uint64_t desc_v_a = O::desc_v_a(sV, cw);
  const uint64_t desc_q_b = O::desc_q_b(sQ);   /* + stage offset */
  const uint64_t desc_do_b = O::desc_q_b(sDO);
  /* B of dV / dK, MN-major: LBO = the distance between column blocks */
  const uint64_t desc_q_mn = O::desc_q_mn(sQ);
  const uint64_t desc_do_mn = O::desc_q_mn(sDO);
  /* dQ part: rows [64 cw, +64) from dS^T slab cw (BM 128), or columns [DQ_N cw, +DQ_N) of K (BM 64) */
  /* SWAP (BM 80): dQ^T's A = K slab cw read MN-major (D columns [64 cw, +64) x keys), its B = dS
   * K-major ([2 key slabs][BM rows][64 keys]) */
  const uint64_t desc_ds = SWAP ? cd_gmma_desc_sw128(sDS, 1, 1024)
                                : cd_gmma_desc_sw128(sDS + (BM == 128 ? cw * BN * 128 : 0), BN * 128, 1024);
  const uint64_t desc_k_mn = O::desc_k_mn(sK, cw);

  float dv[D / 2], dk[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) dv[i] = dk[i] = 0.f;

  const int shift = args.seqlen_k - args.seqlen_q;
  const bool key_tail = k0 + BN > args.seqlen_k;
  if (m_hi > m_lo) cd_mbar_wait(bar_kv, kv_parity);

  float dq[SWAP ? BM / 2 : tile::DQ_N / 2]; /* SWAP: dQ^T, element 4j + 2r + e is D column 64 cw +
                                             * 16 warp + lane / 4 + 8r, query row 8j + 2 (lane % 4) + e */

  for (int h = h_lo; h < h_hi; ++h)
    for (int j = m_lo; j < m_hi; ++j, ++it) {
      const int m = cd_sm90_bwd_walk_m<kDet>(j, m_lo, m_hi, n_block);
      const uint32_t s = it % ST, ph = (it / ST) & 1, buf = it & 1;
      cd_mbar_wait(bar_q_full + 8 * s, ph);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_Q_FULL);

      float st[BM / 2], dpt[BM / 2];
      cd_wgmma_fence();
      cd_sm90_gemm_ss<BM, D, kFp16, false, typename O::KA, typename O::QB>(
        st, desc_k_a, cd_gmma_desc_add(desc_q_b, s * L::QT_BYTES));
      cd_wgmma_commit();
      cd_sm90_gemm_ss<BM, D, kFp16, false, typename O::VA, typename O::QB>(
        dpt, desc_v_a, cd_gmma_desc_add(desc_do_b, s * L::QT_BYTES));
      cd_wgmma_commit();

      /* P^T: element 4j + 2r + e is key key_in_block0 + 8r, query row 8j + 2 (lane % 4) + e */
      const float *lse_s = (const float *)(gbase + L::LSE_OFF + s * L::ROW_BYTES);
      const float *delta_s = (const float *)(gbase + L::DELTA_OFF + s * L::ROW_BYTES);
      cd_wgmma_wait<1>();
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_ST_WAIT);
      cd_sm90_fence_regs(st);
      /* per-element mask where the block is not wholly inside the visible band, or holds keys past
       * seqlen_k */
      /* cd_mask_block_partial<BM, BN>(n_block, m, ..) written out with the loop-invariant key_tail:
       * the call compiled to different code (issue 22: SASS kept) */
      const int r0 = m * BM, rl = r0 + BM - 1;
      const bool need_mask = key_tail ||
                             (args.window_right >= 0 && k0 + BN - 1 > r0 + shift + args.window_right) ||
                             (args.window_left >= 0 && k0 < rl + shift - args.window_left);
      uint32_t p16[BM / 4];
      if constexpr (kSoftcap) {
        /* softcap: S^T becomes t = tanh(s softcap_pre) in place (the portable backward's tanh);
         * P and dS^T from it after the dP^T wait, below */
#pragma unroll
        for (int i = 0; i < BM / 2; ++i) st[i] = cd_softcap_tanh(st[i] * softcap_pre);
      } else {
#pragma unroll
      for (int j = 0; j < BM / 8; ++j) {
        const int col = 8 * j + 2 * (lane & 3);
        const float2 l2 = *reinterpret_cast<const float2 *>(lse_s + col);
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          st[4 * j + 2 * r] = cd_exp2(fmaf(st[4 * j + 2 * r], args.scale_log2, -l2.x));
          st[4 * j + 2 * r + 1] = cd_exp2(fmaf(st[4 * j + 2 * r + 1], args.scale_log2, -l2.y));
        }
      }
      }
      if constexpr (SWAP) {
        /* no mask (cd_sm90_bwd_takes_bm80): only the keys past seqlen_k, whole S^T rows */
        if (key_tail) {
#pragma unroll
          for (int r = 0; r < 2; ++r)
            if (k0 + key_in_block0 + 8 * r >= args.seqlen_k) {
#pragma unroll
              for (int j = 0; j < BM / 8; ++j) st[4 * j + 2 * r] = st[4 * j + 2 * r + 1] = 0.f;
            }
        }
      } else if (need_mask) {
#pragma unroll
        for (int j = 0; j < BM / 8; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int key = k0 + key_in_block0 + 8 * r;
              const int d = key - (r0 + 8 * j + 2 * (lane & 3) + e) - shift; /* key - diagonal */
              const bool vis = key < args.seqlen_k &&
                               (args.window_left < 0 || d >= -args.window_left) &&
                               (args.window_right < 0 || d <= args.window_right);
              /* softcap: t = -inf, so that P = 0 and the factor max(1 - t^2, 0) = 0 (the portable
               * backward's masking) */
              if (!vis) st[4 * j + 2 * r + e] = kSoftcap ? -__int_as_float(0x7f800000) : 0.f;
            }
      }
      uint32_t ds16[BM / 4];
      if constexpr ((SWAP || SM90_BWD_TRACE) && !kSoftcap) { /* the trace: the order ptxas gives every tile (bwd_trace.cuh) */
        /* FA3's order: P packed with dS after the dP^T wait (the peak S^T, dP^T, dV, dK: 208).
         * Session 20's ptxas: with the general mask code this tile spilled 20 B and serialized the
         * wgmmas (C7512) in either order, with the key-tail mask above neither; in both orders (and
         * in the 64-row tile's SASS) the packs land after the dP^T wait */
        cd_wgmma_wait<0>(); /* dP^T done */
        SM90_BWD_TRACE_EV(it, CD_BWD_EV_DPT_WAIT);
        cd_sm90_fence_regs(dpt);
#pragma unroll
        for (int j = 0; j < BM / 8; ++j) {
          const int col = 8 * j + 2 * (lane & 3);
          const float2 dl = *reinterpret_cast<const float2 *>(delta_s + col);
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            p16[2 * j + r] = cd_pack2<kFp16>(st[4 * j + 2 * r], st[4 * j + 2 * r + 1]);
            ds16[2 * j + r] = cd_pack2<kFp16>(st[4 * j + 2 * r] * (dpt[4 * j + 2 * r] - dl.x),
                                              st[4 * j + 2 * r + 1] * (dpt[4 * j + 2 * r + 1] - dl.y));
          }
        }
      } else if constexpr (kSoftcap) {
        /* P = exp2(t softcap log2(e) - LSE2) (args.scale_log2 is softcap log2(e)) and dS^T =
         * P (dP^T - delta) (1 - t^2), both packed after the dP^T wait (as the 80-row tile's packs):
         * t, P and dP^T are consumed element by element (softmax_scale is folded in later, as
         * without softcap) */
        cd_wgmma_wait<0>(); /* dP^T done */
        SM90_BWD_TRACE_EV(it, CD_BWD_EV_DPT_WAIT);
        cd_sm90_fence_regs(dpt);
        cd_sm90_bwd_softcap_p_ds<kFp16, BM / 8>(st, dpt, lse_s, delta_s, args.scale_log2, lane, p16, ds16);
      } else {
#pragma unroll
      for (int i = 0; i < BM / 4; ++i) p16[i] = cd_pack2<kFp16>(st[2 * i], st[2 * i + 1]);

      cd_wgmma_wait<0>(); /* dP^T done */
      cd_sm90_fence_regs(dpt);
#pragma unroll
      for (int j = 0; j < BM / 8; ++j) {
        const int col = 8 * j + 2 * (lane & 3);
        const float2 dl = *reinterpret_cast<const float2 *>(delta_s + col);
#pragma unroll
        for (int r = 0; r < 2; ++r)
          ds16[2 * j + r] = cd_pack2<kFp16>(st[4 * j + 2 * r] * (dpt[4 * j + 2 * r] - dl.x),
                                            st[4 * j + 2 * r + 1] * (dpt[4 * j + 2 * r + 1] - dl.y));
      }
      }

      /* dV += P^T dO */
      cd_wgmma_fence();
      cd_sm90_gemm_rs<D, BM, kFp16, true, typename O::QMn>(dv, p16,
                                                         cd_gmma_desc_add(desc_do_mn, s * L::QT_BYTES));
      cd_wgmma_commit();
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DV_ISSUED);

      /* dS^T to shared memory, [BM/64 slabs][BN keys][64 rows], 128-byte swizzle: matrix (j, r) of
       * the fragment is keys 16 warp + 8 r .. + 7 (its rows) x query rows 8 j .. + 7 (a 16-byte
       * chunk); stmatrix x4 takes matrices (j, 0), (j, 1), (j + 1, 0), (j + 1, 1), lane t giving
       * the address of row t % 8 of matrix t / 8 */
      if constexpr (SWAP) {
        /* dS, [2 key slabs][BM rows][64 keys], 128-byte swizzle, by transposing stmatrix: matrix
         * (j, r) of the fragment (keys 16 warp + 8 r .. + 7 x query rows 8 j .. + 7) is stored as
         * query rows 8 j .. + 7, each a 16-byte chunk of 8 keys (chunk 2 warp + r of slab cw); lane
         * t gives the address of row t % 8 of matrix t / 8 = (j + t / 16, (t / 8) % 2) */
        const uint32_t ds_buf = sDS + buf * L::DS_BYTES + cw * (BM * 128);
        const int chunk = 2 * warp + ((lane >> 3) & 1);
#pragma unroll
        for (int j = 0; j < BM / 8; j += 2) {
          const int row = 8 * (j + (lane >> 4)) + (lane & 7);
          const uint32_t addr = ds_buf + row * 128 + ((chunk ^ (row & 7)) << 4);
          cd_stmatrix_x4_trans(addr, ds16[2 * j], ds16[2 * j + 1], ds16[2 * j + 2], ds16[2 * j + 3]);
        }
      } else if constexpr (kSoftcap && D == 64) {
        /* the d64 softcap kernel: the same addresses as below, written so that one register holds them: j is even and
         * lane >> 4 is 0 or 1, so jj / 8 = j / 8 and jj % 8 = (j % 8) | (lane >> 4), whose XOR with
         * key & 7 is (j % 8) ^ ((lane >> 4) ^ (key & 7)); ds_buf + key * 128 is 128-byte aligned,
         * so the chunk's XOR with (j % 8) << 4 is one per-j constant on a per-thread address (the
         * form below made ptxas hold 16 per-j offsets across the block loop: the d64 row spilled
         * them; docs/kernels/sm90_bwd_softcap.md) */
        const int key = 64 * cw + 16 * warp + ((lane >> 3) & 1) * 8 + (lane & 7);
        const uint32_t row_addr = sDS + buf * L::DS_BYTES + key * 128 + ((((lane >> 4) ^ key) & 7) << 4);
#pragma unroll
        for (int j = 0; j < BM / 8; j += 2) {
          const uint32_t addr = (row_addr ^ ((j % 8) << 4)) + (j / 8) * (BN * 128);
          cd_stmatrix_x4(addr, ds16[2 * j], ds16[2 * j + 1], ds16[2 * j + 2], ds16[2 * j + 3]);
        }
      } else {
        const uint32_t ds_buf = sDS + buf * L::DS_BYTES;
        const int key = 64 * cw + 16 * warp + ((lane >> 3) & 1) * 8 + (lane & 7);
#pragma unroll
        for (int j = 0; j < BM / 8; j += 2) {
          const int jj = j + (lane >> 4); /* this lane's matrix's 8-row chunk of query rows */
          const uint32_t addr = ds_buf + (jj / 8) * (BN * 128) + key * 128 + (((jj % 8) ^ (key & 7)) << 4);
          cd_stmatrix_x4(addr, ds16[2 * j], ds16[2 * j + 1], ds16[2 * j + 2], ds16[2 * j + 3]);
        }
      }
      cd_fence_proxy_async_smem(); /* stmatrix (generic proxy) -> the dQ wgmma (async proxy) */
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DS_STORED);

      /* FA3's order: the barrier, dQ, then dK; dQ staged and reduced while dK runs (session 19:
       * +2-4% at d128 non-causal 2k-16k, +2.5-6.5% causal, 0 at GQA and d64; bwd.md 2.1) */
      cd_named_bar_sync(BAR_DS, 256);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_BAR_DS);
      cd_wgmma_fence();
      if constexpr (SWAP) /* dQ^T_cw [64 D columns, BM rows] = K^T [64, BN keys] dS^T [BN, BM] */
        cd_sm90_gemm_ss<BM, BN, kFp16, false, cd_sm90_mn_major, cd_sm90_k_major<BM>>(
          dq, desc_k_mn, cd_gmma_desc_add(desc_ds, buf * L::DS_BYTES));
      else
        cd_sm90_gemm_ss<tile::DQ_N, BN, kFp16, false, cd_sm90_mn_major, typename O::KMn>(
          dq, cd_gmma_desc_add(desc_ds, buf * L::DS_BYTES), desc_k_mn);
      cd_wgmma_commit();
      cd_sm90_gemm_rs<D, BM, kFp16, true, typename O::QMn>(dk, ds16,
                                                         cd_gmma_desc_add(desc_q_mn, s * L::QT_BYTES));
      cd_wgmma_commit();
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DQDK_ISSUED);
      cd_wgmma_wait<1>(); /* dV and dQ products done; dK pending (it reads Q: the stage stays) */
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DVDQ_WAIT);
      cd_sm90_fence_regs(dv);
      cd_sm90_fence_regs(p16);
      cd_sm90_fence_regs(dq);
      if constexpr (kDqWarp)
        cd_sm90_bwd_stage_dq_det<D, DQB>(dq, sDQ, it, cw, warp, lane);
      else if constexpr (SM90_BWD_SKIP_DQ != 1)
        cd_sm90_bwd_reduce_dq<D, BM>(dq, args, sDQ, b, h, mt0 + m, cw, warp, lane);
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_REDUCE);
      cd_wgmma_wait<0>(); /* dK done: the stage is free */
      SM90_BWD_TRACE_EV(it, CD_BWD_EV_DK_WAIT);
      cd_sm90_fence_regs(dk);
      cd_sm90_fence_regs(ds16);
      __syncwarp(); /* every lane's LSE2 / delta reads of the stage before lane 0 frees it */
      if (lane == 0) cd_mbar_arrive(bar_q_empty + 8 * s);
    }
  if constexpr (kPersist) {
    /* every K / V reader of the unit (S^T, dP^T, the dQ product) has completed in this warp (its
     * last block's waits): the producer may load the next unit's K / V (bwd_persist.cuh) */
    if (m_hi > m_lo) {
      __syncwarp();
      if (lane == 0) cd_mbar_arrive(bar_kv_empty);
    }
  }
  if (lane == 0) cd_tma_store_wait_read<0>(); /* shared memory stays until the reduces read it */

  static_assert(BN * D * 2 <= ST * L::QT_BYTES, "dK / dV staging fits the Q / dO stages");
  cd_sm90_bwd_epilogue_rows<D, kFp16, BN>(dk, dv, args, sQ, sDO, key_in_block0, lane, k0, k_tok0, hk, b,
                                          head_dim, head_dim_v);
  if constexpr (kPersist) {
    /* this warp's last reads of the dK / dV staging (in the Q / dO stages) are done: the producer
     * may load the next unit's Q / dO there (bwd_persist.cuh); the fence orders the staging's
     * generic-proxy accesses before those TMA writes */
    cd_fence_proxy_async_smem();
    __syncwarp();
    if (lane == 0) cd_mbar_arrive(bar_epi_done);
  }
}

#endif /* CUDADENT_SM90_BWD_UNIT_CUH */
