/*
 * bwd_fused_post.cuh - the end of a CTA of the fused Hopper backward (config.cuh
 * SM90_BWD_FUSED_POST, a dev knob; bwd_kernel.cuh cd_sm90_bwd_fused_kernel): the dK / dV epilogue,
 * and the post kernel's work (dQ out of the fp32 accumulator) for the dQ tiles whose last
 * contributor this CTA is, so that the call runs two kernels, not three. The narrow rows' dense
 * non-deterministic calls only (softcap too; 64- and 80-row tiles alike).
 *
 * Counting. A dQ tile (batch, query head, query block m of BM rows) receives the dQ parts of every
 * key block whose query range [m_lo, m_hi) (bwd_parts.cuh cd_sm90_bwd_q_blocks) holds m, from each
 * of those key blocks' CTAs (one per KV head of the query head's group): their number is
 * n_hi - n_lo of mask_rule.cuh's cd_mask_kv_blocks(m) (the key blocks holding a key that a row of
 * the tile sees), the same relation read the other way (for every causal / window / Sq != Sk
 * case: checked exhaustively on the host over 1.4 million tiles, session 28). Each tile has an
 * int32 counter in the workspace, the deterministic mode's semaphore array (cd_sm90_bwd_sems,
 * zeroed by the pre kernel; the host sizes and passes it for these calls too). At its end each CTA
 * adds 1 to the counter of each tile it added to (every query head of its KV head's group x
 * [m_lo, m_hi)), one consumer thread a tile; the thread that reads the old value contributors - 1
 * holds the tile's last contribution, and its CTA converts the tile (cd_sm90_bwd_post_tile: the
 * post's code, by the 256 consumer threads, through a staging in the then free dS^T buffers).
 * Tiles that no key block adds to (the query rows that see no key: bottom-right causal or a
 * right window with seqlen_q > seqlen_k, exactly the blocks [0, m_lo) of key block 0, also
 * checked on the host) are converted (zeros, from the zeroed accumulator) by key block 0's CTA of
 * each (KV head, batch).
 *
 * Ordering (why the last contributor reads every sum). A CTA's dQ parts reach the accumulator
 * by two paths: consumer 1's warps (all 8 warps at the 80-row tile) issue bulk reduce-adds
 * (cp.reduce.async.bulk, async proxy), consumer 0's threads red.global.add (generic proxy,
 * relaxed). At the CTA's end, before counting:
 *   - each bulk issuer (lane 0 of each consumer warp) waits with cp.async.bulk.wait_group 0 (not
 *     .read: the writes complete, PTX ISA 9.7.9.25.4.4) and issues fence.proxy.async.global
 *     (the async-proxy writes ordered before its later generic-proxy operations), as the
 *     deterministic dQ warp before its count (bwd_parts.cuh cd_sm90_bwd_dq_walk);
 *   - each red issuer issues fence.acq_rel.gpu (its reductions ordered before what follows; the
 *     memory model's cumulativity would carry them through the barrier below anyway);
 *   - the 256 consumer threads meet (bar.sync: ordering at CTA scope), and then each counting
 *     thread adds 1 with atom.release.gpu (a release: everything ordered before it in this CTA,
 *     i.e. all of the CTA's sums into the tile, precedes the count).
 * The counts of a tile are read-modify-writes of one location, so they are totally ordered; the
 * thread that reads contributors - 1 reads the value written by the chain of all the other
 * contributors' releases (each a release RMW reading the previous one's value), and issues
 * fence.acq_rel.gpu after its atom (a strong read followed by a fence: an acquire pattern), then
 * fence.proxy.async.global, then a CTA barrier before any of the 256 threads reads the tile: by
 * causality order every contributor's sums precede those reads, so they see the complete sum.
 * Every contributor counts only after its last part of the tile, so no sum can arrive after
 * the conversion, and no counter is read past its last count (the pre zeroes them each call).
 * What this cannot show without a GPU: that the memory model's promise holds for the bulk
 * reduce's async-proxy writes read by another CTA's generic loads as it does for the dQ warp's
 * async-proxy reduces (the deterministic mode's tested pattern); the race-prone window is a
 * tile's last contribution, so a failure would show as dQ errors in the tests, intermittently.
 *
 * Where: between the epilogue's staging of dK / dV and its stores (cd_sm90_bwd_epilogue_stage /
 * _store, bwd_epilogue.cuh): the completion waits overlap the staging, and the counts' round
 * trips (the atom's old value is used only after) the dK / dV stores; the conversions come last,
 * so dK / dV leave before them. Threads: the consumers' 256 (the producer warpgroup's have
 * exited, at 24 registers); registers: dK and dV are dead after the staging.
 * Shared memory: the dS^T buffers (free once both consumers passed the epilogue's first barrier):
 * the tile staging (BM (2 D + 16) bytes), then the round's count and list of tiles to convert.
 * PDL: the fused kernel is the call's last, so it does not trigger launch_dependents (the post's
 * rule, bwd_prepost.cuh): what follows on the stream is released at its completion.
 */
#ifndef CUDADENT_SM90_BWD_FUSED_POST_CUH
#define CUDADENT_SM90_BWD_FUSED_POST_CUH

#include <stdint.h>

#include "kernels/common/mask_rule.cuh"
#include "kernels/sm90/bwd_epilogue.cuh"
#include "kernels/sm90/bwd_parts.cuh"
#include "kernels/sm90/bwd_post_tile.cuh"
#include "kernels/sm90/named_barriers.cuh"
#include "kernels/sm90/ptx_sm90.cuh"

/* dQ's tensor, a kernel argument of its own (a larger cd_sm90_bwd_args changes every kernel's code) */
struct cd_sm90_bwd_dq_out {
  void *dq;
  int64_t dq_sb, dq_ss, dq_sh; /* elements */
};

/* The end of a consumer thread of the fused kernel: the epilogue, the counts, the conversions.
 * kSplit: consumer 0's dQ parts went by red.global (cd_sm90_bwd_smem DQ_SPLIT); stage: the dS^T
 * buffers' generic address (ds_bytes of them); k_tok0 is 0 (dense). */
template <int D, bool kFp16, int BM, int BN, bool kSplit>
__device__ __forceinline__ void cd_sm90_bwd_fused_end(const float (&dk)[D / 2], const float (&dv)[D / 2],
                                                      const cd_sm90_bwd_args &args, const cd_sm90_bwd_dq_out &out,
                                                      uint32_t sQ, uint32_t sDO, uint8_t *stage, int key_in_block0,
                                                      int cw, int lane, int k0, int hk, int b, int n_block,
                                                      int h_lo, int h_hi, int m_lo, int m_hi, int head_dim,
                                                      int head_dim_v) {
  constexpr int THREADS = 256, BAR = CD_SM90_BAR_BWD_EPILOGUE;
  constexpr int TILE_BYTES = BM * (D * 2 + 16); /* cd_sm90_bwd_post_tile's staging */
  const int tid = threadIdx.x - 128;
  volatile int *const s_n = (volatile int *)(stage + TILE_BYTES); /* tiles to convert this round */
  int *const s_list = (int *)(stage + TILE_BYTES) + 1;            /* [THREADS]: their indices */

  cd_sm90_bwd_epilogue_stage<D, kFp16>(dk, dv, args, sQ, sDO, key_in_block0, lane);
  /* this thread's dQ sums complete (the header's ordering argument) */
  if (lane == 0) {
    cd_tma_store_wait_all<0>();
    cd_sm90_bwd_fence_proxy_global();
  }
  if (kSplit && cw == 0) asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
  if (tid == 0) *s_n = 0;
  cd_named_bar_sync(BAR, THREADS); /* the epilogue's meeting: staging, sums and s_n before it */

  /* the counts: tile k of this CTA's (h_hi - h_lo) x nm is head h_lo + k / nm, block m_lo + k % nm */
  const int nm = m_hi - m_lo, tiles = (h_hi - h_lo) * nm;
  int *const sems = cd_sm90_bwd_sems(args);
  int k = tid, old = 0, target = 0;
  auto count = [&](int kk) {
    const int m = m_lo + kk % nm, h = h_lo + kk / nm;
    int *const sem = sems + ((b * args.heads_q + h) * args.m_blocks + m);
    asm volatile("atom.release.gpu.global.add.s32 %0, [%1], 1;\n" : "=r"(old) : "l"(sem) : "memory");
    int n_lo, n_hi;
    cd_mask_kv_blocks<BM, BN>(m, args.seqlen_q, args.seqlen_k, args.window_left, args.window_right, &n_lo, &n_hi);
    target = n_hi - n_lo; /* this tile's contributors (>= 1: this CTA) */
  };
  if (k < tiles) count(k);
  /* dK / dV out while the counts travel */
  cd_sm90_bwd_epilogue_store<D, BN>(args, sQ, sDO, k0, 0, hk, b, head_dim, head_dim_v);

  cd_sm90_bwd_io io; /* the fields cd_sm90_bwd_post_tile reads */
  io.dq = out.dq;
  io.dq_sb = out.dq_sb;
  io.dq_ss = out.dq_ss;
  io.dq_sh = out.dq_sh;
  io.dq_acc = args.dq_acc;
  io.heads_q = args.heads_q;
  io.seqlen_q = args.seqlen_q;
  io.sq_pad = args.sq_pad;
  io.head_dim = head_dim;
  io.scale = args.scale;
  for (int base = 0;;) {
    if (k < tiles && old == target - 1) { /* the tile's last contribution: acquire, list it */
      asm volatile("fence.acq_rel.gpu;\n" ::: "memory");
      cd_sm90_bwd_fence_proxy_global();
      s_list[atomicAdd((int *)s_n, 1)] = k;
    }
    cd_named_bar_sync(BAR, THREADS); /* the list, and the acquires before every reader */
    const int n = *s_n;
    for (int i = 0; i < n; ++i) {
      const int kk = s_list[i], h = h_lo + kk / nm;
      if (i > 0) cd_named_bar_sync(BAR, THREADS); /* the previous tile's stores have read the staging */
      cd_sm90_bwd_post_tile<kFp16, D, D, BM, THREADS, BAR>(io, (int64_t)b * args.heads_q + h, m_lo + kk % nm, h, b,
                                                           tid, stage);
    }
    base += THREADS;
    if (base >= tiles) break;
    /* more than 256 tiles (large groups): another round */
    cd_named_bar_sync(BAR, THREADS); /* s_n, the list and the staging read */
    if (tid == 0) *s_n = 0;
    cd_named_bar_sync(BAR, THREADS);
    k = base + tid;
    if (k < tiles) count(k);
  }
  /* the tiles that no key block adds to: key block 0's CTA converts them (zeros) */
  if (n_block == 0) {
    for (int h = h_lo; h < h_hi; ++h)
      for (int m = 0; m < m_lo; ++m) {
        cd_named_bar_sync(BAR, THREADS); /* the staging is free */
        cd_sm90_bwd_post_tile<kFp16, D, D, BM, THREADS, BAR>(io, (int64_t)b * args.heads_q + h, m, h, b, tid, stage);
      }
  }
}

#endif /* CUDADENT_SM90_BWD_FUSED_POST_CUH */
