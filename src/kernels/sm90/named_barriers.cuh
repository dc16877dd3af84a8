/*
 * named_barriers.cuh - the ids of the hardware named barriers (bar.sync / bar.arrive, 16 per
 * CTA) that the sm90 kernels use, in one enum so that no two uses collide.
 *
 * Usage: cd_named_bar_sync(CD_SM90_BAR_X + i, threads) / cd_named_bar_arrive(...) (ptx_sm90.cuh); the
 * thread count is that of every warp taking part (a multiple of 32). A kernel's entries are
 * listed under its name; a new kernel adds its own below (ids < CD_SM90_BAR_LIMIT).
 * Pingpong turns: cd_sm90_fwd_turns.
 */
#ifndef CUDADENT_SM90_NAMED_BARRIERS_CUH
#define CUDADENT_SM90_NAMED_BARRIERS_CUH

#include "kernels/sm90/ptx_sm90.cuh"

enum cd_sm90_fwd_named_barrier {
  CD_SM90_BAR_SYNCTHREADS = 0, /* __syncthreads: never named here */
  /* backward (bwd_kernel.cuh), the 8 consumer warps (256 threads): dS of a block staged (both
   * warpgroups' halves); the epilogue's staging; the wide rows' deterministic dQ turn per block
   * (bwd_wide_kernel.cuh) */
  CD_SM90_BAR_BWD_DS = 1,
  CD_SM90_BAR_BWD_EPILOGUE = 2,
  CD_SM90_BAR_BWD_DQ_TURN = 3,
  /* backward, the 192 / 128 row's E3 kernel (bwd_wide3_kernel.cuh, config.cuh SM90_BWD_WIDE3) with a
   * single P / dS buffer: every consumer's products of the last block completed, P / dS may be
   * rewritten (384 threads; its other barriers reuse BWD_DS and BWD_EPILOGUE with 384) */
  CD_SM90_BAR_BWD_PDS_FREE = 4,
  /* backward, the narrow rows' deterministic dQ warp (bwd_parts.cuh
   * cd_sm90_bwd_dq_warp): staging buffer i (< CD_SM90_BWD_DQ_MAX_BUFS) holds a block's dQ parts
   * (FULL + i: the 8 consumer warps arrive, the dQ warp waits; 288 threads) / is free again
   * (EMPTY + i: the dQ warp arrives, the consumer warps wait; 288) */
  CD_SM90_BAR_BWD_DQ_FULL = 9,
  CD_SM90_BAR_BWD_DQ_EMPTY = 11,
  CD_SM90_BWD_DQ_MAX_BUFS = 2,
  /* forward (fwd_kernel.cuh): consumer warpgroup w's turn to issue its GEMMs (pingpong), up to
   * CD_SM90_FWD_MAX_TURNS consumers */
  CD_SM90_BAR_FWD_TURN = 5,
  CD_SM90_FWD_MAX_TURNS = 4,
  CD_SM90_BAR_LIMIT = 16 /* the hardware's */
};
static_assert(CD_SM90_BAR_FWD_TURN + CD_SM90_FWD_MAX_TURNS <= CD_SM90_BAR_BWD_DQ_FULL, "barrier ids");
static_assert(CD_SM90_BAR_BWD_DQ_FULL + CD_SM90_BWD_DQ_MAX_BUFS <= CD_SM90_BAR_BWD_DQ_EMPTY &&
                  CD_SM90_BAR_BWD_DQ_EMPTY + CD_SM90_BWD_DQ_MAX_BUFS <= CD_SM90_BAR_LIMIT,
              "barrier ids");

/* Round-robin turns among NWG warpgroups (FA3's pingpong, paper section 3.1): warpgroup w waits
 * on barrier first + w, does its turn, then arrives on the next one's. Each barrier counts the
 * two warpgroups that meet there (256 threads). Before the first turn the last warpgroup calls
 * start(first) once, so that warpgroup 0 goes first. */
struct cd_sm90_fwd_turns {
  int mine, next; /* barrier ids */

  /* the warpgroup after w (of nwg) */
  static __device__ __forceinline__ int next_of(int w, int nwg) { return w + 1 == nwg ? 0 : w + 1; }
  /* warpgroup w's turns, next_w = next_of(w, nwg) */
  static __device__ __forceinline__ cd_sm90_fwd_turns make(int first, int w, int next_w) {
    cd_sm90_fwd_turns t;
    t.mine = first + w;
    t.next = first + next_w;
    return t;
  }
  /* the last warpgroup's arrival for warpgroup 0's first turn (a constant id: pass() from the
   * last warpgroup would compute it) */
  static __device__ __forceinline__ void start(int first) { cd_named_bar_arrive(first, 256); }
  __device__ __forceinline__ void wait() const { cd_named_bar_sync(mine, 256); }
  __device__ __forceinline__ void pass() const { cd_named_bar_arrive(next, 256); }
};

#endif /* CUDADENT_SM90_NAMED_BARRIERS_CUH */
