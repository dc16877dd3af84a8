/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * mainloop_fwd.cuh - the roles of the sm90 forward kernels (fwd_kernel.cuh's body, dense and
 * varlen), each a function: the producer's loads of a tile (cd_sm90_fwd_load_q,
 * cd_sm90_fwd_load_kv) and a consumer's main loop over a tile's key
 * blocks (cd_sm90_fwd_mainloop), with its step (cd_sm90_fwd_consumer_step); the epilogue is
 * epilogue_fwd.cuh. Every function is inlined into the kernel.
 */
#ifndef CUDADENT_SM90_MAINLOOP_FWD_CUH
#define CUDADENT_SM90_MAINLOOP_FWD_CUH

#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include "kernels/sm90/config.cuh"
#include "kernels/sm90/fwd_tiles.cuh"
#include "kernels/sm90/fwd_trace.cuh"
#include "kernels/sm90/gemm.cuh"
#include "kernels/sm90/mask.cuh"
#include "kernels/sm90/named_barriers.cuh"
#include "kernels/sm90/pipeline.cuh"
#include "kernels/sm90/ptx_sm90.cuh"
#include "kernels/sm90/softmax.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

/* The kernel's arguments besides the tensor maps (fwd_launch.cuh fills them). */
struct cd_sm90_fwd_args {
  float *lse;        /* [batch][heads_q][seqlen_q] or NULL */
  float scale_log2;  /* softmax_scale * log2(e) */
  int seqlen_q, seqlen_k;
  cd_sm90_fwd_divisor by_group; /* query head h reads KV head h / group */
  int window_left, window_right;
  int num_tiles;
  cd_sm90_fwd_tile_order sched; /* the tiles' order (tile_scheduler.cuh), with heads_q */
};

/* The arguments of a softcap kernel (kSoftcap): scale_log2 is then softcap * log2(e), and the raw
 * scores are taken to t = tanh(s softcap_pre) (softmax.cuh cd_sm90_fwd_softcap). A struct of its
 * own, so the kernels without softcap keep their parameters as they were. */
struct cd_sm90_fwd_args_softcap : cd_sm90_fwd_args {
  float softcap_pre; /* softmax_scale / softcap */
};
template <bool kSoftcap> struct cd_sm90_fwd_args_of { typedef cd_sm90_fwd_args type; };
template <> struct cd_sm90_fwd_args_of<true> { typedef cd_sm90_fwd_args_softcap type; };

/* x broadcast from lane 0: the same value, but the compiler now knows it is warp-uniform. The
 * main-loop step passes its ring indices through it, so the wgmma descriptors and barrier
 * addresses derived from them live in uniform registers: without it each wgmma's descriptor was
 * built in vector registers and moved over (R2UR, IMAD.MOV), 60 instructions a d128 step; with
 * it the unmasked step is 522 -> 489 instructions (d128), 470 -> 444 (d64): d64 +0.6-2.5%, d128
 * -0.4..+1.5% up to 8k (docs/kernels/sm90_fwd.md sections 3.2, 7.2). */
__device__ __forceinline__ uint32_t cd_sm90_uniform(uint32_t x) {
  return __shfl_sync(0xffffffffu, x, 0);
}

/* The K/V ring's indices through cd_sm90_uniform: at the start of every main-loop step, or (the
 * row's RING_SHFL_LATE) where they were last changed, at the end of the step before and of the
 * tile's first block. Late, every value that reaches a step is a broadcast, so ptxas carries the
 * indices in uniform registers across the loop and drops the broadcasts inside it: no SHFL at
 * a step's start (where its latency stood before the K barrier's wait), 12 SHFL and 20 R2UR fewer
 * in the kernel (§3.2). */
template <int STAGES>
__device__ __forceinline__ void cd_sm90_fwd_uniform_ring(cd_sm90_pipe_state<STAGES> &k,
                                                     cd_sm90_pipe_state<STAGES, true> &v) {
  k.stage = cd_sm90_uniform(k.stage);
  k.phase = cd_sm90_uniform(k.phase);
  v.stage = cd_sm90_uniform(v.stage);
  v.phase = cd_sm90_uniform(v.phase);
}

/* V's layout with the 128-byte swizzle: MN-major; with the d64 ones region its LBO points at that
 * fixed region */
template <bool kOnesRegion> struct cd_sm90_fwd_v_operand_of { typedef cd_sm90_mn_major type; };
template <> struct cd_sm90_fwd_v_operand_of<true> { typedef cd_sm90_mn_major_fixed_lbo type; };

/* A row's operand layouts by its slabs (fwd_tiles.cuh SLAB_COLS): Q and K K-major in slabs of
 * BLOCK_M and BLOCK_N rows, V MN-major; v_desc: V's descriptor at the ring's stage 0, its LBO the
 * distance between V's slabs (with ROWSUM the next slab past V's is the ones), or (ROWSUM d64) to
 * the fixed ones region. 64-column slabs: the 128-byte swizzle (gemm.cuh). */
template <class Tile, int SLAB_COLS = cd_sm90_fwd_smem<Tile>::SLAB_COLS> struct cd_sm90_fwd_ops {
  typedef cd_sm90_fwd_smem<Tile> L;
  static constexpr bool kOnesRegion = L::ONES_BYTES > 0;
  typedef cd_sm90_k_major<Tile::BLOCK_M> Q;
  typedef cd_sm90_k_major<Tile::BLOCK_N> K;
  typedef typename cd_sm90_fwd_v_operand_of<kOnesRegion>::type V;
  static __device__ __forceinline__ uint64_t v_desc(uint32_t sV) {
    return cd_sm90_mn_major::desc(sV, kOnesRegion ? L::ONES_OFF - L::V_OFF : Tile::BLOCK_N * 128);
  }
};
/* 32-column slabs (the d96 rows): the 64-byte swizzle (gemm.cuh's SW64 layouts), column blocks
 * of a slab's bytes */
template <class Tile> struct cd_sm90_fwd_ops<Tile, 32> {
  typedef cd_sm90_fwd_smem<Tile> L;
  typedef cd_sm90_k_major_sw64<Tile::BLOCK_M * L::SLAB_ROW> Q;
  typedef cd_sm90_k_major_sw64<Tile::BLOCK_N * L::SLAB_ROW> K;
  typedef cd_sm90_mn_major_sw64<Tile::BLOCK_N * L::SLAB_ROW> V;
  static __device__ __forceinline__ uint64_t v_desc(uint32_t sV) { return V::desc(sV); }
};

/* S[64, N] = Q_w[64, D] K[N, D]^T (the row's layouts): N = BLOCK_N, or fewer for the stage's first
 * N keys */
template <class Tile, int N, bool kFp16>
__device__ __forceinline__ void cd_sm90_fwd_gemm_qk(float (&s)[N / 2], uint64_t desc_q,
                                                    uint64_t desc_k) {
  typedef cd_sm90_fwd_ops<Tile> Ops;
  cd_sm90_gemm_ss<N, Tile::HEAD_DIM, kFp16, false, typename Ops::Q, typename Ops::K>(s, desc_q,
                                                                                    desc_k);
}

/* V's descriptor moved by byte_offset (a ring stage) */
template <class Tile>
__device__ __forceinline__ uint64_t cd_sm90_fwd_v_desc_add(uint64_t desc, uint32_t byte_offset) {
  if constexpr (cd_sm90_fwd_smem<Tile>::ONES_BYTES > 0) return cd_sm90_desc_add_fixed_lbo(desc, byte_offset);
  else return cd_gmma_desc_add(desc, byte_offset);
}

/* O[64, DV] += P[64, BLOCK_N] V[BLOCK_N, DV]; with ROWSUM_MMA DV + 8 wide: the next slab in
 * reach of the descriptor is all ones, so o[DV/2 .. DV/2+3] accumulate the row sums of P. */
template <class Tile, bool kFp16>
__device__ __forceinline__ void cd_sm90_fwd_gemm_pv(float (&o)[cd_sm90_fwd_smem<Tile>::O_REGS],
                                             const uint32_t (&p)[Tile::BLOCK_N / 4],
                                             uint64_t desc_v) {
  cd_sm90_gemm_rs<2 * cd_sm90_fwd_smem<Tile>::O_REGS, Tile::BLOCK_N, kFp16, true,
                  typename cd_sm90_fwd_ops<Tile>::V>(o, p, desc_v);
}

/* Whether a consumer's first (highest) key block n can be computed as its first half only: no
 * row of the consumer's 64 (those past seqlen_q included, their output clipped) sees a key at or
 * past n BLOCK_N + BLOCK_N / 2. Under causal masking in 128-row tiles over 128-key blocks this is
 * consumer 0's top block whatever seqlen_k - seqlen_q (its rows end 64 before the tile's, so it
 * sees at most the block's first 64 keys, or none of them): S = Q K^T as m64n64, the softmax on
 * 32 elements a thread, P's second half zero (the next step's P V multiplies those keys by 0, as
 * the mask made them before). Taken where SM90_HALF_FIRST and cd_sm90_fwd_half_first<Tile>. */
template <int BM, int BN>
__device__ __forceinline__ bool cd_sm90_fwd_first_block_half(int n, int m_block, int cw,
                                                      const cd_sm90_fwd_args &args) {
  const int q_last = m_block * BM + 64 * cw + 63; /* the consumer's last row */
  int k_last = args.seqlen_k - 1;                  /* the last key one of its rows sees */
  if (args.window_right >= 0)
    k_last = min(k_last, q_last + (args.seqlen_k - args.seqlen_q) + args.window_right);
  return k_last < n * BN + BN / 2;
}

/* What a consumer's main-loop step needs besides its registers. */
template <int STAGES> struct cd_sm90_fwd_step_args {
  uint64_t desc_q, desc_k0, desc_v0;
  cd_sm90_pipeline<STAGES> k_ring, v_ring;
  uint32_t bar_q_empty;
  cd_sm90_fwd_turns turns; /* pingpong */
  int lane, ct, row0;
  int lazy_from; /* blocks n <= lazy_from try the lazy softmax first (SM90_EXACT_BLOCKS) */
  float softcap_pre; /* kSoftcap only (softmax.cuh cd_sm90_fwd_softcap); else not set */
};

/* One step of the overlapped main loop for key block n: issue S = Q K_n^T, then O += P V for the
 * previous block (P in registers, its V stage v_stage), then the softmax of S under the P V
 * product; returns with both complete, p holding P_n, O rescaled to the new running max, and the
 * rings advanced. kMask: block n needs the per-element mask. kExactOnly: the exact softmax with
 * the row maxima taken before the P V wait (SM90_EXACT_MAX_EARLY); else the lazy one first where
 * n <= sa.lazy_from. O is rescaled at the end of the softmax (the P V product it must include is
 * complete there), not between the next step's GEMMs: the same cost (§4.3), and the
 * tile's first block, whose O is still zero, needs none.
 * Between the S wait and the P V wait there is no branch (predicated arrives; the mask chosen by
 * which run of the loop calls the step): with the branches there the kernel measured 3-15%
 * slower (§3.1). ptxas placed the P V wait before most of the softmax anyway, and
 * forcing it after (full intra-warpgroup overlap) measured slower, since issuing a consumer's
 * wgmmas blocks until they have nearly all run; the lazy softmax writes P into p and takes its
 * bound from the row-sum columns, so it follows the P V wait, and the exact softmax (a uniform
 * branch) only where the check fails. kSoftcap: S becomes tanh(S softcap_pre) right after its
 * wait, before the mask (softmax.cuh cd_sm90_fwd_softcap). */
template <class Tile, bool kFp16, bool kPingpong, bool kMask, bool kExactOnly, bool kSoftcap>
__device__ __forceinline__ void cd_sm90_fwd_consumer_step(
    const cd_sm90_fwd_step_args<Tile::STAGES> &sa, const cd_sm90_fwd_args &args,
    float (&s)[Tile::BLOCK_N / 2], uint32_t (&p)[Tile::BLOCK_N / 4],
    float (&o)[cd_sm90_fwd_smem<Tile>::O_REGS], float (&m)[2], float (&l)[2], int n, bool last,
    cd_sm90_pipe_state<Tile::STAGES> &k,
    cd_sm90_pipe_state<Tile::STAGES, true> &v SM90_TRACE_PARAMS) {
  typedef Tile tile;
  typedef cd_sm90_fwd_smem<Tile> L;
  constexpr int BN = tile::BLOCK_N;
  const int shift = args.seqlen_k - args.seqlen_q;
  if constexpr (!tile::RING_SHFL_LATE) cd_sm90_fwd_uniform_ring(k, v);
  sa.k_ring.consumer_wait(k);
  if constexpr (kPingpong) sa.turns.wait();
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_TURN, 0);
  cd_wgmma_fence();
  cd_sm90_fwd_gemm_qk<Tile, BN, kFp16>(s, sa.desc_q,
                                       cd_gmma_desc_add(sa.desc_k0, k.stage * L::K_BYTES));
  cd_wgmma_commit();
  sa.v_ring.consumer_wait(v);
  cd_sm90_fence_regs(o);
  cd_wgmma_fence();
  cd_sm90_fwd_gemm_pv<Tile, kFp16>(
      o, p, cd_sm90_fwd_v_desc_add<Tile>(sa.desc_v0, v.stage * L::V_STAGE_BYTES));
  cd_wgmma_commit();
  if constexpr (kPingpong) sa.turns.pass();
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_ISSUED, 0);
  cd_wgmma_wait<1>(); /* S done, P V may still run */
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_S_READY, 0);
  cd_sm90_fence_regs(s);
  sa.k_ring.consumer_release(k, sa.lane == 0);
  cd_mbar_arrive_if(sa.bar_q_empty, last && sa.lane == 0);
  if constexpr (kSoftcap) cd_sm90_fwd_softcap(s, sa.softcap_pre);
  if constexpr (kMask)
    cd_sm90_fwd_mask<BN>(s, n * BN, sa.row0, args.seqlen_k, shift, args.window_left,
                         args.window_right, sa.lane);
  float mx[2];
  if constexpr (kExactOnly) cd_sm90_fwd_row_max<BN>(s, mx); /* under the P V product */
  cd_wgmma_wait<0>(); /* P V done: p and the V stage are free, the row-sum columns complete */
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_PV_DONE, 0);
  cd_sm90_fence_regs(o);
  sa.v_ring.consumer_release(v, sa.lane == 0);
  float bound[2], alpha[2];
  cd_sm90_fwd_row_bound<tile::ROWSUM_MMA>(o, l, bound);
  if constexpr (kExactOnly) {
    cd_sm90_fwd_quad_min(bound);
    cd_sm90_fwd_softmax_exp<BN, tile::ROWSUM_MMA>(s, mx, m, l, alpha, bound, args.scale_log2);
    cd_sm90_fwd_rescale_o(o, alpha);
    cd_sm90_acc_to_a<BN, kFp16>(s, p);
  } else if (n > sa.lazy_from || !cd_sm90_fwd_softmax_lazy<BN, tile::ROWSUM_MMA, kFp16>(
                                     s, m, l, p, bound, args.scale_log2)) {
    cd_sm90_fwd_quad_min(bound);
    cd_sm90_fwd_softmax<BN, tile::ROWSUM_MMA>(s, m, l, alpha, bound, args.scale_log2);
    cd_sm90_fwd_rescale_o(o, alpha);
    cd_sm90_acc_to_a<BN, kFp16>(s, p);
  }
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_SOFTMAX, 0);
  v.stage = k.stage;
  v.phase = k.phase;
  k.advance();
  if constexpr (tile::RING_SHFL_LATE) cd_sm90_fwd_uniform_ring(k, v);
}

/* Each consumer walks its own key range: the blocks its 64 query rows see, [c_lo, c_hi) within
 * the tile's [n_lo, n_hi), with the per-element mask decided for its rows alone; the tile's other
 * blocks it only releases (cd_sm90_fwd_release_block). Under causal masking a 192-row tile (d64)
 * spans two masked key blocks, a consumer's 64 rows at most one, and the top block is often
 * invisible to consumers 0 and 1 (§3.3). Compiled into the rows whose BLOCK_M is not BLOCK_N (d64
 * M192): in 128-row tiles over 128-key blocks a causal consumer has nothing to skip, and the short
 * causal d64 configs there measured ~1% slower with it (SM90_CONSUMER_RANGE). */

/* A key block of the tile that none of this consumer's rows sees: take and pass the GEMM turn (so
 * that the turns keep going round in step with the other consumers) and free the block's K and V
 * stages once they have been loaded (an arrival before the load would count for the stage's
 * previous use). */
template <int STAGES, bool kPingpong>
__device__ __forceinline__ void cd_sm90_fwd_release_block(const cd_sm90_fwd_step_args<STAGES> &sa,
                                                   cd_sm90_pipe_state<STAGES> &k) {
  sa.k_ring.consumer_wait(k);
  if constexpr (kPingpong) {
    sa.turns.wait();
    sa.turns.pass();
  }
  sa.k_ring.consumer_release(k, sa.lane == 0);
  sa.v_ring.consumer_wait(k);
  sa.v_ring.consumer_release(k, sa.lane == 0);
  k.advance();
}

/* Whether the row computes a consumer's first block as its first half where it can (d64 LSE rows
 * only, §3.3: the no-LSE d64 M128 row measured 3-6% slower at causal 512 / 1k with it, its
 * main loops gained 6-13 uniform instructions; the LSE d128 row 0.6-1% slower at causal 512 / 1k;
 * in the no-LSE d128 row the second branch of the first S GEMM leaves too few registers: ptxas
 * serializes every wgmma, C7511) */
template <class Tile>
struct cd_sm90_fwd_half_first {
  static constexpr bool value = SM90_HALF_FIRST && Tile::BLOCK_N == 128 && Tile::HEAD_DIM == 64 &&
                                !Tile::ROWSUM_MMA;
};

/* The producer's load of a tile's Q (one thread) into slot qw, once every consumer finished the
 * Q K^T of the tile that last used the slot. row0: the tensor row of the tile's query row 0 less
 * m_block BLOCK_M (a varlen sequence's first token; dense calls 0). */
template <class Tile>
__device__ __forceinline__ void cd_sm90_fwd_load_q(
    const cd_sm90_fwd_tile_coord &tc, const CUtensorMap *tm_q, uint32_t sQ,
    const cd_sm90_pipeline<Tile::Q_STAGES> &q_ring,
    const cd_sm90_pipe_state<Tile::Q_STAGES> &qw SM90_TRACE_PARAMS, int row0 = 0) {
  typedef cd_sm90_fwd_smem<Tile> L;
  constexpr int BM = Tile::BLOCK_M;
  q_ring.producer_acquire(qw);
  SM90_TRACE_EVENT(true, SM90_EV_P_Q, 0);
  q_ring.producer_expect_tx(qw, L::Q_BYTES);
#pragma unroll
  for (int c = 0; c < L::CHUNKS; ++c)
    cd_tma_load_4d(sQ + qw.stage * L::Q_BYTES + c * BM * L::SLAB_ROW, tm_q, q_ring.full_bar(qw.stage),
                   L::SLAB_COLS * c, row0 + tc.m_block * BM, tc.head, tc.batch);
}

/* The producer's loads of a tile's key blocks [n_lo, n_hi) (one thread): K and V blocks of
 * BLOCK_N keys into the ring, last key block first, K of block i before V of block i - 1: the
 * order the consumers use them in (S_i = Q K_i^T is issued before O += P_{i-1} V_{i-1}). K and V
 * of block i share stage i % STAGES; a K stage frees after its S GEMM, much earlier than the V
 * stage, so K loads run up to STAGES blocks ahead. kw: the ring position, advanced past the
 * tile's blocks. key0: the tensor row of key 0 (a varlen sequence's first key token; dense 0). */
template <class Tile>
__device__ __forceinline__ void cd_sm90_fwd_load_kv(
    const cd_sm90_fwd_tile_coord &tc, int n_lo, int n_hi, int hk, const CUtensorMap *tm_k,
    const CUtensorMap *tm_v, uint32_t sK, uint32_t sV, const cd_sm90_pipeline<Tile::STAGES> &k_ring,
    const cd_sm90_pipeline<Tile::STAGES> &v_ring, cd_sm90_pipe_state<Tile::STAGES, true> &kw,
    int key0 = 0) {
  typedef cd_sm90_fwd_smem<Tile> L;
  constexpr int BN = Tile::BLOCK_N;
  cd_sm90_pipe_state<Tile::STAGES, true> vw = kw;
  for (int n = n_hi - 1; n >= n_lo - 1; --n) {
    if (n >= n_lo) {
      k_ring.producer_acquire(kw);
      k_ring.producer_expect_tx(kw, L::K_BYTES);
#pragma unroll
      for (int c = 0; c < L::CHUNKS; ++c)
        cd_tma_load_4d(sK + kw.stage * L::K_BYTES + c * BN * L::SLAB_ROW, tm_k,
                       k_ring.full_bar(kw.stage), L::SLAB_COLS * c, key0 + n * BN, hk, tc.batch);
    }
    if (n < n_hi - 1) { /* V of the previous block, n + 1 */
      v_ring.producer_acquire(vw);
      v_ring.producer_expect_tx(vw, L::V_BYTES);
#pragma unroll
      for (int c = 0; c < L::V_CHUNKS; ++c)
        cd_tma_load_4d(sV + vw.stage * L::V_STAGE_BYTES + c * BN * L::SLAB_ROW, tm_v,
                       v_ring.full_bar(vw.stage), L::SLAB_COLS * c, key0 + (n + 1) * BN, hk, tc.batch);
      vw.advance_if(true);
    }
    kw.advance_if(n >= n_lo);
  }
}

/* A consumer's main loop over the tile's key blocks [n_lo, n_hi) (at least one), last to first:
 * its own range [c_lo, c_hi) (at least one block: a consumer whose rows see no key computes block
 * n_lo, fully masked; one whose rows all lie past seqlen_q computes what the last real row sees,
 * its output clipped, §8) with its mask decisions as a tile of 64 rows (kRange,
 * SM90_CONSUMER_RANGE), the tile's other blocks released. First block: S alone (its first half
 * only where cd_sm90_fwd_first_block_half); then the steps in three runs, those the right edge (end
 * of the keys, right window) cuts, the unmasked middle, those the left window cuts; then the last
 * P V. Returns with o, m, l complete and k past the tile's blocks. shift: seqlen_k - seqlen_q;
 * s, p, alpha: the caller's registers for S, P and the rescale factors (declared where the
 * kernel always had them: ptxas's register allocation follows their place). kSoftcap: every
 * block's S is capped (cd_sm90_fwd_softcap, sa.softcap_pre) before its mask and softmax. */
template <class Tile, bool kFp16, bool kPingpong, bool kSoftcap = false>
__device__ __forceinline__ void cd_sm90_fwd_mainloop(
    cd_sm90_fwd_step_args<Tile::STAGES> &sa, const cd_sm90_fwd_args &args,
    const cd_sm90_fwd_tile_coord &tc, int n_lo, int n_hi, int cw, int shift,
    float (&s)[Tile::BLOCK_N / 2], uint32_t (&p)[Tile::BLOCK_N / 4],
    float (&o)[cd_sm90_fwd_smem<Tile>::O_REGS], float (&m)[2], float (&l)[2], float (&alpha)[2],
    cd_sm90_pipe_state<Tile::STAGES> &k SM90_TRACE_PARAMS) {
  typedef cd_sm90_fwd_smem<Tile> L;
  constexpr int BM = Tile::BLOCK_M, BN = Tile::BLOCK_N;
  constexpr int STAGES = Tile::STAGES, NCW = Tile::CONSUMER_WGS;
  constexpr bool kHalfFirst = cd_sm90_fwd_half_first<Tile>::value;
  constexpr int BH = kHalfFirst ? BN / 2 : BN; /* the first block's keys where it is halved */
  constexpr bool kRange = SM90_CONSUMER_RANGE && BM != BN;
  constexpr int RM = kRange ? 64 : BM;
  const int lane = sa.lane, ct = sa.ct, row0 = sa.row0;
  const int sub = kRange ? tc.m_block * NCW + cw : tc.m_block;
  int c_lo = n_lo, c_hi = n_hi;
  if constexpr (kRange) {
    cd_mask_kv_blocks<RM, BN>(sub, args.seqlen_q, args.seqlen_k, args.window_left, args.window_right,
                          &c_lo, &c_hi);
    c_lo = max(c_lo, n_lo);
    c_hi = min(c_hi, n_hi);
    if (c_hi <= c_lo) {
      c_lo = n_lo;
      c_hi = n_lo + 1;
    }
  }
  sa.lazy_from = c_hi - 1 - SM90_EXACT_BLOCKS;
  if constexpr (kRange)
    for (int n = n_hi - 1; n >= c_hi; --n) cd_sm90_fwd_release_block<STAGES, kPingpong>(sa, k);
  {
    const int n = c_hi - 1;
    const bool half = kHalfFirst && cd_sm90_fwd_first_block_half<BM, BN>(n, tc.m_block, cw, args);
    sa.k_ring.consumer_wait(k);
    if constexpr (kPingpong) sa.turns.wait();
    const uint64_t dk = cd_gmma_desc_add(sa.desc_k0, k.stage * L::K_BYTES);
    /* each branch issues and retires its own wgmmas (a wgmma retired after a branch serializes
     * them all: ptxas C7515, §8) */
    if (half) {
      cd_wgmma_fence();
      cd_sm90_fwd_gemm_qk<Tile, BH, kFp16>(cd_sm90_head<BH / 2>(s), sa.desc_q, dk);
      cd_wgmma_commit();
      if constexpr (kPingpong) sa.turns.pass();
      cd_wgmma_wait<0>();
    } else {
      cd_wgmma_fence();
      cd_sm90_fwd_gemm_qk<Tile, BN, kFp16>(s, sa.desc_q, dk);
      cd_wgmma_commit();
      if constexpr (kPingpong) sa.turns.pass();
      cd_wgmma_wait<0>();
    }
    cd_sm90_fence_regs(s);
    SM90_TRACE_EVENT(ct == 0, SM90_EV_S0, 0);
    if (lane == 0) {
      cd_mbar_arrive(sa.k_ring.empty_bar(k.stage));
      if (c_hi - c_lo == 1) cd_mbar_arrive(sa.bar_q_empty);
    }
    const bool masked = cd_mask_block_partial<RM, BN>(n, sub, args.seqlen_q, args.seqlen_k,
                                                      args.window_left, args.window_right);
    const float first[2] = {1.f, 1.f}; /* m = -inf: moves in any case */
    if constexpr (kSoftcap) cd_sm90_fwd_softcap(s, sa.softcap_pre); /* (the half: its head) */
    if (half) {
      if (masked)
        cd_sm90_fwd_mask<BH>(cd_sm90_head<BH / 2>(s), n * BN, row0, args.seqlen_k, shift,
                         args.window_left, args.window_right, lane);
      cd_sm90_fwd_softmax<BH, Tile::ROWSUM_MMA>(cd_sm90_head<BH / 2>(s), m, l, alpha, first,
                                            args.scale_log2);
      cd_sm90_acc_to_a<BH, kFp16>(cd_sm90_head<BH / 2>(s), cd_sm90_head<BH / 4>(p));
#pragma unroll
      for (int i = BH / 4; i < BN / 4; ++i) p[i] = 0u; /* keys past the half: P = 0 */
    } else {
      if (masked)
        cd_sm90_fwd_mask<BN>(s, n * BN, row0, args.seqlen_k, shift, args.window_left,
                         args.window_right, lane);
      cd_sm90_fwd_softmax<BN, Tile::ROWSUM_MMA>(s, m, l, alpha, first, args.scale_log2);
      cd_sm90_acc_to_a<BN, kFp16>(s, p);
    }
  }
  cd_sm90_pipe_state<STAGES, true> v; /* V's position: a block behind K's */
  v.stage = k.stage;
  v.phase = k.phase;
  k.advance();
  if constexpr (Tile::RING_SHFL_LATE) cd_sm90_fwd_uniform_ring(k, v);
  int n_right, n_left;
  cd_mask_unmasked_blocks<RM, BN>(sub, args.seqlen_q, args.seqlen_k, args.window_left,
                               args.window_right, &n_left, &n_right);
  int n = c_hi - 2;
  for (; n >= c_lo && n >= n_right; --n)
    cd_sm90_fwd_consumer_step<Tile, kFp16, kPingpong, true, false, kSoftcap>(
        sa, args, s, p, o, m, l, n, n == c_lo, k, v SM90_TRACE_ARGS);
#if SM90_EXACT_MAX_EARLY
  /* the unmasked blocks that take the exact softmax in any case: the row max under the P V
   * product */
  for (; n >= c_lo && n >= n_left && n > sa.lazy_from; --n)
    cd_sm90_fwd_consumer_step<Tile, kFp16, kPingpong, false, true, kSoftcap>(
        sa, args, s, p, o, m, l, n, n == c_lo, k, v SM90_TRACE_ARGS);
#endif
  for (; n >= c_lo && n >= n_left; --n)
    cd_sm90_fwd_consumer_step<Tile, kFp16, kPingpong, false, false, kSoftcap>(
        sa, args, s, p, o, m, l, n, n == c_lo, k, v SM90_TRACE_ARGS);
  for (; n >= c_lo; --n)
    cd_sm90_fwd_consumer_step<Tile, kFp16, kPingpong, true, false, kSoftcap>(
        sa, args, s, p, o, m, l, n, n == c_lo, k, v SM90_TRACE_ARGS);
  /* last P V */
  sa.v_ring.consumer_wait(v);
  cd_sm90_fence_regs(o);
  cd_wgmma_fence();
  cd_sm90_fwd_gemm_pv<Tile, kFp16>(
      o, p, cd_sm90_fwd_v_desc_add<Tile>(sa.desc_v0, v.stage * L::V_STAGE_BYTES));
  cd_wgmma_commit();
  cd_wgmma_wait<0>();
  cd_sm90_fence_regs(o);
  if (lane == 0) cd_mbar_arrive(sa.v_ring.empty_bar(v.stage));
  /* the tile's blocks below this consumer's range (a left window): released */
  if constexpr (kRange)
    for (int n = c_lo - 1; n >= n_lo; --n) cd_sm90_fwd_release_block<STAGES, kPingpong>(sa, k);
}

#endif /* CUDADENT_SM90_MAINLOOP_FWD_CUH */
