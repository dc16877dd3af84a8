/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * fwd_varlen_kernel.cuh - the Hopper (sm_90a) forward on ragged batches (varlen, cudadent.h
 * "features of layout v2"; §2.6): the dense kernel's roles (fwd_kernel.cuh: warps, shared
 * memory, rings and barriers are the same, and so are the producer's loads, the consumers' main
 * loop and the epilogue's staging, mainloop_fwd.cuh / epilogue_fwd.cuh) over a tile list that a
 * device pre-pass built (fwd_varlen_plan.cuh), instead of the dense tile orders.
 *
 * Tiles. Persistent, one CTA an SM (the grid from host-known bounds only: CUDA-graph safe). CTA c
 * takes positions c, then round by round as the dense SNAKE order (odd rounds reversed) of the
 * list, heaviest unit first: position pos is unit pos / heads_q of the list, query head pos %
 * heads_q. The list's length is read from the workspace at the start (-1: the fallback order
 * for overlapping invalid ranges, fwd_varlen_plan.cuh). Producer and consumers walk the same
 * positions and read the same list entries (L2 hits), with no communication.
 *
 * A tile: the sequence's {q0, k0, len_q, len_k} and its query block; the roles run with a copy of
 * the kernel's arguments whose seqlen_q / seqlen_k are the sequence's (so the mask rule, the
 * key-block ranges and the bottom-right alignment are the sequence's: keys past len_k are masked
 * exactly as a dense call's ragged end), and load from tensor maps over the packed tensors
 * (head_dim, total, heads, 1) at rows q0 + m_block BLOCK_M (Q) and k0 + n BLOCK_N (K, V). Query
 * rows past the sequence's end load the next sequence's tokens (or zeros past total_q): computed,
 * never stored. Key rows past len_k load the next sequence's tokens (finite inputs) or zeros:
 * masked, P = 0. Units whose rows see no key run no load and no GEMM: the epilogue writes their
 * O = 0 and LSE = -inf. The epilogue (kVarlen): LSE at lse[h * total_q + q0 + row] for rows of the
 * sequence; O by TMA where a warp's 16 rows lie inside the sequence, else by predicated st.global.
 */
#ifndef CUDADENT_SM90_FWD_VARLEN_KERNEL_CUH
#define CUDADENT_SM90_FWD_VARLEN_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels/sm90/epilogue_fwd.cuh"
#include "kernels/sm90/fwd_tiles.cuh"
#include "kernels/sm90/fwd_trace.cuh"
#include "kernels/sm90/fwd_varlen_plan.cuh"
#include "kernels/sm90/mainloop_fwd.cuh"
#include "kernels/sm90/named_barriers.cuh"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/ptx_sm90.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

template <class Tile, bool kFp16>
__global__ void __launch_bounds__(128 * (1 + Tile::CONSUMER_WGS), 1)
    cd_sm90_fwd_varlen_kernel(const __grid_constant__ CUtensorMap tm_q,
                              const __grid_constant__ CUtensorMap tm_k,
                              const __grid_constant__ CUtensorMap tm_v,
                              const __grid_constant__ CUtensorMap tm_o, const cd_sm90_fwd_args args,
                              const __grid_constant__ cd_sm90_fwd_varlen_args va) {
  typedef cd_sm90_fwd_smem<Tile> L;
  constexpr int BM = Tile::BLOCK_M, BN = Tile::BLOCK_N, STAGES = Tile::STAGES;
  constexpr int NCW = Tile::CONSUMER_WGS, QS = Tile::Q_STAGES;
  constexpr bool kPingpong = NCW >= 2;

  extern __shared__ uint8_t smem_raw[];
  /* 1024-byte aligned base: the swizzle pattern of TMA and wgmma is anchored to 1024 B */
  const uint32_t base = (cd_smem_addr(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = base + L::Q_OFF, sK = base + L::K_OFF, sV = base + L::V_OFF;
  const uint32_t sO = base + L::O_OFF;
  typedef cd_sm90_pipeline<QS> QRing;
  typedef cd_sm90_pipeline<STAGES> KVRing;
  const QRing q_ring = QRing::at(base + L::BAR_OFF);
  const KVRing k_ring = KVRing::at(base + L::BAR_OFF + QRing::BAR_BYTES);
  const KVRing v_ring = KVRing::at(base + L::BAR_OFF + QRing::BAR_BYTES + KVRing::BAR_BYTES);

  const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0); /* uniform: fwd_kernel.cuh */
  if (threadIdx.x == 0) {
    cd_tma_prefetch_desc(&tm_q);
    cd_tma_prefetch_desc(&tm_k);
    cd_tma_prefetch_desc(&tm_v);
    cd_tma_prefetch_desc(&tm_o);
    for (int s = 0; s < QS; ++s) q_ring.init_stage(s, 1, 4 * NCW); /* an arrival per consumer warp */
    for (int s = 0; s < STAGES; ++s) {
      k_ring.init_stage(s, 1, 4 * NCW);
      v_ring.init_stage(s, 1, 4 * NCW);
    }
    cd_mbar_fence_init();
  }
  if constexpr (Tile::ROWSUM_MMA) { /* the ones of the row-sum columns, as fwd_kernel.cuh */
    const uint32_t one2 = kFp16 ? 0x3C003C00u : 0x3F803F80u;
    if constexpr (L::ONES_BYTES > 0) {
      for (int i = threadIdx.x; i < L::ONES_BYTES / 4; i += blockDim.x)
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(base + L::ONES_OFF + 4 * i), "r"(one2) : "memory");
    } else {
      for (int i = threadIdx.x; i < STAGES * BN * 32; i += blockDim.x)
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sV + (i / (BN * 32)) * L::V_STAGE_BYTES +
                                                           L::V_BYTES + 4 * (i % (BN * 32))),
                     "r"(one2)
                     : "memory");
    }
    cd_fence_proxy_async_smem();
  }
  __syncthreads();
  /* the list's length (the pre-pass ran before on this stream); -1: the fallback order */
  const int count = *va.count;
  const bool list = count >= 0;
  const int num_tiles = (list ? count : va.fallback_units) * args.sched.heads_q;

  if (wg == 0) {
    /* ================================ producer ================================ */
    cd_setmaxnreg_dec<Tile::PRODUCER_REGS>();
    if (threadIdx.x != 0) return;
    uint32_t q_iter = 0;
    cd_sm90_pipe_state<STAGES, true> kw = {0, 0};
    SM90_TRACE_DECL(0);
    for (int round = 0; round * (int)gridDim.x < num_tiles; ++round) {
      const int pos = cd_sm90_fwd_tile_position<false>(round, blockIdx.x, gridDim.x, SM90_SCHED_SNAKE);
      if (pos >= num_tiles) continue;
      cd_sm90_fwd_varlen_tile vt;
      if (!cd_sm90_fwd_varlen_tile_at<BM>(pos, list, va, args.sched, &vt)) continue;
      int n_lo, n_hi;
      cd_mask_kv_blocks<BM, BN>(vt.m_block, vt.len_q, vt.len_k, args.window_left,
                                args.window_right, &n_lo, &n_hi);
      if (n_hi <= n_lo) continue; /* consumers write O = 0 without waiting for anything */
      const cd_sm90_fwd_tile_coord tc = {0, vt.head, vt.m_block}; /* the maps' batch is 1 */
      const int hk = cd_sm90_fwd_div(vt.head, args.by_group);
      cd_sm90_fwd_load_q<Tile>(tc, &tm_q, sQ, q_ring,
                               cd_sm90_pipe_state<QS>::of_count(q_iter) SM90_TRACE_ARGS, vt.q0);
      ++q_iter;
      cd_sm90_fwd_load_kv<Tile>(tc, n_lo, n_hi, hk, &tm_k, &tm_v, sK, sV, k_ring, v_ring, kw,
                                vt.k0);
    }
    return;
  }

  /* ================================ consumers ================================ */
  cd_setmaxnreg_inc<Tile::CONSUMER_REGS>();
  const int cw = wg - 1; /* consumer index: query rows [64 cw, 64 cw + 64) */
  const int ct = threadIdx.x - 128 * wg;
  const int warp = ct / 32, lane = ct % 32;
  const int row_in_wg0 = 16 * warp + lane / 4; /* this thread's rows: row_in_wg0 and + 8 */

  const uint64_t desc_q0 = cd_sm90_k_major<BM>::desc(sQ + cw * 64 * 128);
  const uint64_t desc_k0 = cd_sm90_k_major<BN>::desc(sK);
  const uint64_t desc_v0 =
      cd_sm90_mn_major::desc(sV, L::ONES_BYTES > 0 ? L::ONES_OFF - L::V_OFF : BN * 128);
  const int next_cw = cd_sm90_fwd_turns::next_of(cw, NCW);
  if constexpr (kPingpong) {
    if (cw == NCW - 1) cd_sm90_fwd_turns::start(CD_SM90_BAR_FWD_TURN); /* consumer 0 goes first */
  }

  cd_sm90_pipe_state<STAGES> k = {0, 0};
  uint32_t q_iter = 0;
  SM90_TRACE_DECL(wg);
  for (int round = 0; round * (int)gridDim.x < num_tiles; ++round) {
    const int pos = cd_sm90_fwd_tile_position<false>(round, blockIdx.x, gridDim.x, SM90_SCHED_SNAKE);
    if (pos >= num_tiles) continue;
    cd_sm90_fwd_varlen_tile vt;
    if (!cd_sm90_fwd_varlen_tile_at<BM>(pos, list, va, args.sched, &vt)) continue;
    /* the sequence's lengths in the roles' arguments: its mask rule and ragged ends */
    cd_sm90_fwd_args sargs = args;
    sargs.seqlen_q = vt.len_q;
    sargs.seqlen_k = vt.len_k;
    const int shift = vt.len_k - vt.len_q;
    const cd_sm90_fwd_tile_coord tc = {0, vt.head, vt.m_block};
    int n_lo, n_hi;
    cd_mask_kv_blocks<BM, BN>(tc.m_block, vt.len_q, vt.len_k, args.window_left, args.window_right,
                              &n_lo, &n_hi);
    const int row0 = tc.m_block * BM + 64 * cw + row_in_wg0; /* row of the sequence */

    float o[L::O_REGS];
#pragma unroll
    for (int i = 0; i < L::O_REGS; ++i) o[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];
    if (n_hi > n_lo) {
      float s[BN / 2];
      uint32_t p[BN / 4];
      const cd_sm90_pipe_state<QS> qr = cd_sm90_pipe_state<QS>::of_count(q_iter);
      const uint32_t bar_q_empty = q_ring.empty_bar(qr.stage);
      const uint64_t desc_q = cd_gmma_desc_add(desc_q0, qr.stage * L::Q_BYTES);
      q_ring.consumer_wait(qr);
      ++q_iter;
      cd_sm90_fwd_step_args<STAGES> sa;
      sa.desc_q = desc_q;
      sa.desc_k0 = desc_k0;
      sa.desc_v0 = desc_v0;
      sa.k_ring = k_ring;
      sa.v_ring = v_ring;
      sa.bar_q_empty = bar_q_empty;
      sa.turns = cd_sm90_fwd_turns::make(CD_SM90_BAR_FWD_TURN, cw, next_cw);
      sa.lane = lane;
      sa.ct = ct;
      sa.row0 = row0;
      cd_sm90_fwd_mainloop<Tile, kFp16, kPingpong>(sa, sargs, tc, n_lo, n_hi, cw, shift, s, p, o,
                                                   m, l, alpha, k SM90_TRACE_ARGS);
    }
    cd_sm90_fwd_epilogue<Tile, kFp16, true>(o, m, l, tc, sargs, &tm_o, sO + cw * L::OW_BYTES, cw,
                                            warp, lane, &va, vt.q0);
  }
  if (lane == 0) cd_tma_store_wait_all<0>();
}

#endif /* CUDADENT_SM90_FWD_VARLEN_KERNEL_CUH */
