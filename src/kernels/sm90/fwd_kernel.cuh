/*
 * fwd_kernel.cuh - the Hopper (sm_90a) attention forward: O = softmax(scale * Q K^T + mask) V and
 * LSE = log of the softmax denominator, per (batch, query head), FlashAttention-3 style.
 *
 * Warps. A CTA is 1 + CONSUMER_WGS warpgroups of 128 threads, persistent over tiles
 * (tile_scheduler.cuh). A tile is BLOCK_M = 64 * CONSUMER_WGS query rows of one (batch, head);
 * the row of the tile table (fwd_tiles.cuh) fixes the shapes.
 *   warpgroup 0, producer: after setmaxnreg.dec to PRODUCER_REGS, one thread issues every TMA
 *     load (cd_sm90_fwd_load_q, cd_sm90_fwd_load_kv): the tile's Q once, then K and V blocks of BLOCK_N keys into a
 *     STAGES-deep ring, last key block first. The other 127 threads exit.
 *   warpgroups 1.., consumers: after setmaxnreg.inc to CONSUMER_REGS, warpgroup w owns query rows
 *     [64 (w-1), 64 w) of the tile (cd_sm90_fwd_mainloop). Per key block: S = Q K^T (wgmma, both
 *     operands in shared memory, K-major) into 64 x BLOCK_N fp32 registers; mask (mask.cuh);
 *     online softmax (softmax.cuh; exp2 with the scale folded in, lazily from the running max
 *     where that holds); P converted to 16 bits in registers becomes the A operand of O += P V
 *     (V an MN-major B operand). The consumer issues S_next = Q K_{j+1}^T and O += P_j V_j back
 *     to back and does the softmax of S_next while the P V product runs (intra-warpgroup
 *     overlap, FA3 paper section 3.2), and the consumers take turns issuing their GEMMs (named
 *     barriers, round robin: one's softmax runs under the others' GEMMs, FA3 section 3.1).
 *     Epilogue (epilogue_fwd.cuh): O / l through shared memory to a TMA store per warp, LSE.
 *     kSoftcap (rows d128 and d256 only, fwd_launch.cuh): S = tanh(S softmax_scale / softcap)
 *     before the mask, the softmax on it in units of softcap (softmax.cuh cd_sm90_fwd_softcap).
 *
 * Shared memory: cd_sm90_fwd_smem (fwd_tiles.cuh): Q slots, the K and V rings, O staging, the
 * row-sum ones, the barriers.
 *
 * Pipeline (pipeline.cuh). Three rings: Q (Q_STAGES slots, a use per tile), K and V (STAGES
 * each, a use per key block; K and V of a block share the stage index). Full barriers complete
 * by TMA transaction bytes, empty barriers by one arrival per consumer warp after the wgmma
 * reading the stage has retired. q_empty frees a slot after each consumer's last Q K^T of its
 * tile, so the next tile's Q loads under the current tile's last P V (with two slots, under the
 * whole tile). Fully masked rows get O = 0, LSE = -inf. Rows and keys past the sequence ends are
 * zero-filled by TMA loads and masked (keys) by the per-block mask; stores clip them.
 *
 * One body, two kernels (cd_sm90_fwd_body): cd_sm90_fwd_kernel (here: dense calls, the tiles of
 * the dense orders) and cd_sm90_fwd_varlen_kernel (fwd_varlen_kernel.cuh: ragged batches, the
 * tiles of a device-built list, the sequence's lengths and the kVarlen epilogue). Warps, shared
 * memory, rings, barriers and both roles' loops are this body's in both.
 */
#ifndef CUDADENT_SM90_FWD_KERNEL_CUH
#define CUDADENT_SM90_FWD_KERNEL_CUH

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

/* The sequence's first query and key token and lengths of a dense call's tile: 0, 0 and the
 * call's lengths (a varlen tile's come from its list entry, cd_sm90_fwd_varlen_tile_at). */
__device__ __forceinline__ void cd_sm90_fwd_dense_seq(const cd_sm90_fwd_args &args,
                                                      cd_sm90_fwd_varlen_tile *vt) {
  vt->q0 = 0;
  vt->k0 = 0;
  vt->len_q = args.seqlen_q;
  vt->len_k = args.seqlen_k;
}

/* The coordinates of the tile at position pos, built once the tile is known to exist: dense, the
 * dense order's decoding; varlen, the list entry's head and query block (the maps' batch is 1). */
template <class Tile, bool kVarlen>
__device__ __forceinline__ cd_sm90_fwd_tile_coord cd_sm90_fwd_coord_of(
    int pos, const cd_sm90_fwd_varlen_tile &vt, const cd_sm90_fwd_args &args) {
  if constexpr (kVarlen) return {0, vt.head, vt.m_block};
  else return cd_sm90_fwd_decode_tile<Tile::HEAD_GROUPS>(pos, args.sched);
}

/* The epilogue's varlen arrays: the varlen kernel's, none for the dense one. */
__device__ __forceinline__ const cd_sm90_fwd_varlen_args *cd_sm90_fwd_varlen_of(
    const cd_sm90_fwd_varlen_args &va) {
  return &va;
}
__device__ __forceinline__ const cd_sm90_fwd_varlen_args *cd_sm90_fwd_varlen_of(
    const cd_sm90_fwd_tile_tail &) {
  return nullptr;
}

/* The kernel's body, dense (kVarlen false, Src cd_sm90_fwd_tile_tail: cd_sm90_fwd_kernel below) or
 * varlen (kVarlen, Src cd_sm90_fwd_varlen_args: cd_sm90_fwd_varlen_kernel, fwd_varlen_kernel.cuh).
 * The two differ only in where a round's tile comes from (the head of each role's tile loop), in
 * the lengths the roles see (varlen: the sequence's, in a copy of args) and in the epilogue
 * (kVarlen). The tile-level trace events are the dense kernel's only, as before the merge. The
 * tile lookup stays written out at the head of each role's loop: as one helper (returning a bool,
 * or the position with -1 for none) it changed the varlen kernels' SASS (+700..1460 instructions
 * a kernel); written out, the body compiles to the same cubins as the two kernels did. */
template <class Tile, bool kFp16, bool kSoftcap, bool kVarlen, class Args, class Src>
__device__ __forceinline__ void cd_sm90_fwd_body(const CUtensorMap &tm_q, const CUtensorMap &tm_k,
                                                 const CUtensorMap &tm_v, const CUtensorMap &tm_o,
                                                 const Args &args, const Src &src) {
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

  /* warp-uniform by construction (a broadcast), so the compiler keeps more of what derives from
   * it (consumer index, descriptors, barrier addresses) in uniform registers: d64 +2-3%, and the
   * M192 row then spills 28 bytes, stored before the tile loop and reloaded once a tile in the
   * epilogue, none in the main loops (docs/kernels/sm90_fwd.md sections 3.2, 3.1) */
  const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
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
  if constexpr (Tile::ROWSUM_MMA) {
    /* the ones of the row-sum columns (every 16-bit element 1.0, so the swizzle does not matter),
     * written once; the fence makes them visible to wgmma (async proxy) */
    const uint32_t one2 = kFp16 ? 0x3C003C00u : 0x3F803F80u;
    if constexpr (L::ONES_BYTES > 0) {
      for (int i = threadIdx.x; i < L::ONES_BYTES / 4; i += blockDim.x)
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(base + L::ONES_OFF + 4 * i), "r"(one2) : "memory");
    } else {
      constexpr int WORDS = L::ONES_SLAB_BYTES / 4; /* a stage's ones slab */
      for (int i = threadIdx.x; i < STAGES * WORDS; i += blockDim.x)
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sV + (i / WORDS) * L::V_STAGE_BYTES +
                                                           L::V_BYTES + 4 * (i % WORDS)),
                     "r"(one2)
                     : "memory");
    }
    cd_fence_proxy_async_smem();
  }
  __syncthreads();
  const int shift_call = args.seqlen_k - args.seqlen_q; /* dense; a varlen tile: its sequence's */
  int num_tiles = args.num_tiles;
  bool list = false;
  if constexpr (kVarlen) { /* the list's length (the pre-pass ran before on this stream); -1: the
                            * fallback order */
    const int count = *src.count;
    list = count >= 0;
    num_tiles = (list ? count : src.fallback_units) * args.sched.heads_q;
  }

  if (wg == 0) {
    /* ================================ producer ================================ */
    cd_setmaxnreg_dec<Tile::PRODUCER_REGS>();
    if (threadIdx.x != 0) return;
    uint32_t q_iter = 0;
    cd_sm90_pipe_state<STAGES, true> kw = {0, 0};
    SM90_TRACE_DECL(0);
    for (int round = 0; round * (int)gridDim.x < num_tiles; ++round) {
      int pos; /* the tile: the dense orders, or the varlen list (fwd_varlen_kernel.cuh) */
      cd_sm90_fwd_varlen_tile vt;
      if constexpr (kVarlen) {
        pos = cd_sm90_fwd_tile_position<false>(round, blockIdx.x, gridDim.x, SM90_SCHED_SNAKE);
        if (pos >= num_tiles) continue;
        if (!cd_sm90_fwd_varlen_tile_at<BM>(pos, list, src, args.sched, &vt)) continue;
      } else {
        pos = cd_sm90_fwd_tile_position_tail<Tile::HEAD_GROUPS, Tile::TAIL>(
            round, blockIdx.x, gridDim.x, args.sched.order, num_tiles, src);
        if (pos >= num_tiles) continue;
        cd_sm90_fwd_dense_seq(args, &vt);
      }
      const cd_sm90_fwd_tile_coord tc = cd_sm90_fwd_coord_of<Tile, kVarlen>(pos, vt, args);
      int n_lo, n_hi;
      cd_mask_kv_blocks<BM, BN>(tc.m_block, vt.len_q, vt.len_k, args.window_left,
                                args.window_right, &n_lo, &n_hi);
      if constexpr (!kVarlen) SM90_TRACE_EVENT(true, SM90_EV_P_TILE, n_hi - n_lo);
      if (n_hi <= n_lo) continue; /* consumers write O = 0 without waiting for anything */
      const int hk = cd_sm90_fwd_div(tc.head, args.by_group);
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

  /* descriptors (the row's layouts, mainloop_fwd.cuh cd_sm90_fwd_ops): Q rows of this consumer
   * start 64 cw rows into each Q slab (8 or 4 KiB, atom aligned); V's LBO reaches its next slab
   * (with ROWSUM_MMA, past V's the ones) */
  typedef cd_sm90_fwd_ops<Tile> Ops;
  const uint64_t desc_q0 = Ops::Q::desc(sQ + cw * 64 * L::SLAB_ROW);
  const uint64_t desc_k0 = Ops::K::desc(sK);
  const uint64_t desc_v0 = Ops::v_desc(sV);
  const int next_cw = cd_sm90_fwd_turns::next_of(cw, NCW);
  if constexpr (kPingpong) {
    if (cw == NCW - 1) cd_sm90_fwd_turns::start(CD_SM90_BAR_FWD_TURN); /* consumer 0 goes first */
  }

  cd_sm90_pipe_state<STAGES> k = {0, 0};
  uint32_t q_iter = 0;
  SM90_TRACE_DECL(wg);
  for (int round = 0; round * (int)gridDim.x < num_tiles; ++round) {
    int pos; /* the tile: the dense orders, or the varlen list (fwd_varlen_kernel.cuh) */
    cd_sm90_fwd_varlen_tile vt;
    if constexpr (kVarlen) {
      pos = cd_sm90_fwd_tile_position<false>(round, blockIdx.x, gridDim.x, SM90_SCHED_SNAKE);
      if (pos >= num_tiles) continue;
      if (!cd_sm90_fwd_varlen_tile_at<BM>(pos, list, src, args.sched, &vt)) continue;
    } else {
      pos = cd_sm90_fwd_tile_position_tail<Tile::HEAD_GROUPS, Tile::TAIL>(
          round, blockIdx.x, gridDim.x, args.sched.order, num_tiles, src);
      if (pos >= num_tiles) continue;
      cd_sm90_fwd_dense_seq(args, &vt);
    }
    const cd_sm90_fwd_tile_coord tc = cd_sm90_fwd_coord_of<Tile, kVarlen>(pos, vt, args);
    /* varlen: the sequence's lengths in the roles' arguments (its mask rule and ragged ends) */
    cd_sm90_fwd_args sargs = args;
    sargs.seqlen_q = vt.len_q;
    sargs.seqlen_k = vt.len_k;
    const cd_sm90_fwd_args &targs = kVarlen ? static_cast<const cd_sm90_fwd_args &>(sargs)
                                            : static_cast<const cd_sm90_fwd_args &>(args);
    const int shift = kVarlen ? vt.len_k - vt.len_q : shift_call;
    int n_lo, n_hi;
    cd_mask_kv_blocks<BM, BN>(tc.m_block, vt.len_q, vt.len_k, args.window_left, args.window_right,
                              &n_lo, &n_hi);
    if constexpr (!kVarlen) SM90_TRACE_EVENT(ct == 0, SM90_EV_TILE, n_hi - n_lo);
    const int row0 = tc.m_block * BM + 64 * cw + row_in_wg0; /* query row (of the sequence) */

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
      if constexpr (!kVarlen) SM90_TRACE_EVENT(ct == 0, SM90_EV_Q_READY, 0);
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
      if constexpr (kSoftcap) sa.softcap_pre = args.softcap_pre;
      cd_sm90_fwd_mainloop<Tile, kFp16, kPingpong, kSoftcap>(sa, targs, tc, n_lo, n_hi, cw, shift,
                                                             s, p, o, m, l, alpha, k SM90_TRACE_ARGS);
      if constexpr (!kVarlen) SM90_TRACE_EVENT(ct == 0, SM90_EV_LOOP, 0);
    }
    cd_sm90_fwd_epilogue<Tile, kFp16, kVarlen>(o, m, l, tc, targs, &tm_o, sO + cw * L::OW_BYTES, cw,
                                               warp, lane, cd_sm90_fwd_varlen_of(src), vt.q0);
    if constexpr (!kVarlen) SM90_TRACE_EVENT(ct == 0, SM90_EV_EPI, 0);
  }
  if (lane == 0) cd_tma_store_wait_all<0>();
}

/* The dense kernel (fwd_launch.cuh cd_sm90_fwd_launch); kSoftcap: args is a
 * cd_sm90_fwd_args_softcap. */
template <class Tile, bool kFp16, bool kSoftcap>
__global__ void __launch_bounds__(128 * (1 + Tile::CONSUMER_WGS), 1)
    cd_sm90_fwd_kernel(const __grid_constant__ CUtensorMap tm_q,
                       const __grid_constant__ CUtensorMap tm_k,
                       const __grid_constant__ CUtensorMap tm_v,
                       const __grid_constant__ CUtensorMap tm_o,
                       const typename cd_sm90_fwd_args_of<kSoftcap>::type args,
                       const __grid_constant__ cd_sm90_fwd_tile_tail tail) {
  cd_sm90_fwd_body<Tile, kFp16, kSoftcap, false>(tm_q, tm_k, tm_v, tm_o, args, tail);
}

#endif /* CUDADENT_SM90_FWD_KERNEL_CUH */
