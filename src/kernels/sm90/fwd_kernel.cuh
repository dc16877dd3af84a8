/*
 * fwd_kernel.cuh - the Hopper (sm_90a) attention forward: O = softmax(scale * Q K^T + mask) V and
 * LSE = log of the softmax denominator, per (batch, query head), FlashAttention-3 style.
 *
 * Warps. A CTA is 1 + CONSUMER_WGS warpgroups of 128 threads, persistent over tiles
 * (tile_scheduler.cuh). A tile is BLOCK_M = 64 * CONSUMER_WGS query rows of one (batch, head).
 *   warpgroup 0, producer: after setmaxnreg.dec to PRODUCER_REGS, one thread issues every TMA
 *     load: the tile's Q once, then K and V blocks of BLOCK_N keys into a STAGES-deep ring,
 *     last key block first, K of block i before V of block i - 1. The other 127 threads exit.
 *   warpgroups 1.., consumers: after setmaxnreg.inc to CONSUMER_REGS, warpgroup w owns query
 *     rows [64 (w-1), 64 w) of the tile. Per key block: S = Q K^T (wgmma, both operands in shared
 *     memory, K-major, 128-byte swizzle) into 64 x BLOCK_N fp32 registers; mask; online softmax
 *     (exp2 with the scale folded in; after a row's first block from the running max as it
 *     stands, checked after: sm90_softmax_lazy); P converted to 16 bits in registers becomes the
 *     A operand of O += P V (wgmma with A from registers and V as an MN-major B descriptor). A
 *     consumer's first block is computed as its first 64 keys only where its rows see no more
 *     (d64 rows with LSE; sm90_first_block_half). In the OVERLAP variants of the 192-row tiles a
 *     consumer computes only the key blocks its own 64 rows see, and only releases (takes its
 *     GEMM turn and frees the stages of) the others.
 *   Variant OVERLAP: the consumer issues S_next = Q K_{j+1}^T and O += P_j V_j back to back,
 *     then does the softmax of S_next while the P V product runs (intra-warpgroup overlap, FA3
 *     paper section 3.2). O is rescaled only when some row of the warp got a new maximum.
 *   Variant OVERLAP_PINGPONG (the library's): OVERLAP, and named barriers make the consumer
 *     warpgroups take turns (round robin) issuing their GEMMs, so one's softmax runs under the
 *     others' GEMMs (FA3 section 3.1). SIMPLE (S, softmax, P V in order) is kept as the
 *     readable baseline for dev/sm90_fwd.
 *
 * Shared memory (every block 1024-byte aligned: the 128-byte swizzle atom is 8 rows x 128 B):
 *   Q  [Q_STAGES][D/64][BLOCK_M][64]  one box of 64 columns per 128-byte swizzled slab
 *   K  [STAGES][D/64][BLOCK_N][64]    the ring
 *   V  [STAGES][D/64][BLOCK_N][64]    (rows without LSE, d128: a third, all-ones slab per stage)
 *   O  [CONSUMER_WGS][D/64][64][64]   epilogue staging for the TMA store, one slab per consumer
 *   ones [16][64]                     rows without LSE, d64: the row-sum columns of P V
 *   mbarriers: q_full[Q_STAGES], q_empty[Q_STAGES], k_full[STAGES], k_empty[STAGES],
 *              v_full[STAGES], v_empty[STAGES]
 *
 * Pipeline. full barriers complete by TMA transaction bytes (expect_tx by the producer);
 * empty barriers by one arrival per consumer warp after the wgmma reading the stage has
 * completed (wgmma.wait_group). Tile t uses Q slot t % Q_STAGES; q_empty frees a slot after each
 * consumer's last Q K^T of its tile, so the next tile's Q loads under the current tile's last
 * P V (with two slots, under the whole current tile). The epilogue scales O by 1/l, and each
 * warp writes its 16 rows as 16-bit into the consumer's O slab with stmatrix (swizzled like the
 * TMA box), fences the proxy and issues its own TMA store of those rows from lane 0 (rows past
 * seqlen_q are clipped by TMA): no barrier across the warpgroup. LSE is written by one thread
 * per row. Fully masked rows get O = 0, LSE = -inf. Rows and keys past the sequence ends are
 * zero-filled by TMA loads and masked (keys) by the per-block mask.
 */
#ifndef CUDADENT_SM90_FWD_KERNEL_CUH
#define CUDADENT_SM90_FWD_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/common/ptx_sm90.cuh"
#include "kernels/sm90/fwd_trace.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

/* ---- the tile table: one row per configuration --------------------------------------------------
 * HEAD_DIM, CONSUMER_WGS consumer warpgroups of 64 query rows (BLOCK_M = 64 * CONSUMER_WGS),
 * BLOCK_N keys per block, a STAGES-deep K/V ring, Q_STAGES Q slots. Registers (65536 per SM,
 * one CTA per SM): 128 * PRODUCER_REGS + 128 * CONSUMER_WGS * CONSUMER_REGS <= 65536; a
 * consumer thread holds S (BLOCK_N / 2 fp32), P (BLOCK_N / 4) and O (HEAD_DIM / 2). Shared
 * memory: (Q_STAGES + 1) BLOCK_M HEAD_DIM 2 bytes (Q slots, O staging) + 2 STAGES BLOCK_N
 * HEAD_DIM 2 bytes (the ring) + barriers + 1 KiB alignment slack <= 227 KiB. Which row a call
 * uses: sm90_fwd_config() in fwd_launch.cuh (measured in dev/sm90_fwd/NOTES.md). */
enum { SM90_D64_M192 = 0, SM90_D64_M128 = 1, SM90_D128_M128 = 2, SM90_NOLSE = 3 };
/* Q slots: 2 let the producer load the next tile's Q (and then its K/V) while the consumers
 * still run the current tile's Q K^T. Per row, as measured (NOTES.md steps 8, 33, 38): 2 for the
 * d64 M192 rows (+1-1.5% at d64 non-causal, both LSE modes) and the no-LSE d64 M128 row (+3-4%
 * at causal 512 / 1k); 1 for the LSE d64 M128 row (-0.4..-0.8% with 2, in three runs) and for
 * d128 (no effect seen; the no-LSE d128 row has no room for a second). SM90_Q_STAGES sets every
 * row (experiments). */
#ifdef SM90_Q_STAGES
#define SM90_Q_SLOTS(n) SM90_Q_STAGES
#else
#define SM90_Q_SLOTS(n) (n)
#endif
template <int CFG> struct sm90_fwd_tile;
/* RING_SHFL_LATE: where the ring indices are broadcast (sm90_uniform_ring); late in the d64 M128
 * LSE row and the d128 rows (NOTES.md step 50: +0.3..+1.1% at d64 causal 512 / 1k in training,
 * d128 +0.5..+1.5%), not in the no-LSE d64 M128 row (-5 / -6.5% at d64 causal 512 / 1k, not
 * understood) nor the M192 rows (not measured apart: ptxas already compiles their steps'
 * broadcasts away, no SHFL is left in their loops either way).
 * HEAD_GROUPS: whether the row can take the SM90_SCHED_HEAD_GROUPS tile order (tile_scheduler.cuh;
 * the host picks it only for masked calls with more than 16 query blocks). TAIL: whether its
 * launches can deal their last rounds' tiles out by the host's table (sm90_tile_tail): the d128
 * rows and the LSE d64 M128 row (NOTES.md steps 44-45). Not the d64 M192 rows: their consumers
 * spill 20 bytes with it (d64 non-causal, where no tail is ever taken, ran 25-33% slower); not
 * the no-LSE d64 M128 row: it lost 2.3-2.5% at causal 512 / 1k with it. */
template <> struct sm90_fwd_tile<SM90_D64_M192> { /* d64 default: 1.5x K/V reuse, 12 warps */
  static constexpr int HEAD_DIM = 64, CONSUMER_WGS = 3, BLOCK_M = 192, BLOCK_N = 128, STAGES = 4;
  static constexpr int Q_STAGES = SM90_Q_SLOTS(2);
  static constexpr bool ROWSUM_MMA = false, HEAD_GROUPS = true, TAIL = false;
  static constexpr bool RING_SHFL_LATE = false;
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 160;
};
template <> struct sm90_fwd_tile<SM90_D64_M128> { /* d64 masked, seqlen_q < 2048: less waste */
  static constexpr int HEAD_DIM = 64, CONSUMER_WGS = 2, BLOCK_M = 128, BLOCK_N = 128, STAGES = 4;
  static constexpr int Q_STAGES = SM90_Q_SLOTS(1);
  static constexpr bool ROWSUM_MMA = false;
  static constexpr bool HEAD_GROUPS = false; /* at most 16 query blocks: HEAD_SNAKE */
  static constexpr bool TAIL = true, RING_SHFL_LATE = true;
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
};
template <> struct sm90_fwd_tile<SM90_D128_M128> {
  static constexpr int HEAD_DIM = 128, CONSUMER_WGS = 2, BLOCK_M = 128, BLOCK_N = 128, STAGES = 2;
  static constexpr int Q_STAGES = SM90_Q_SLOTS(1);
  static constexpr bool ROWSUM_MMA = false, HEAD_GROUPS = true, TAIL = true;
  static constexpr bool RING_SHFL_LATE = true;
  static constexpr int PRODUCER_REGS = 24, CONSUMER_REGS = 240;
};

/* Rows SM90_NOLSE + r: row r with the row sums of P taken by the tensor core (ROWSUM_MMA), for
 * calls that want no LSE. The P V GEMM gets 8 more columns of B, all ones, so columns D..D+7 of
 * its accumulator are the running row sums l (rescaled with O), and the softmax adds nothing up
 * (72 instructions a thread and key block fewer: +3-13% by config, NOTES.md step 14). The sums are then of the 16-bit
 * P that the GEMM multiplies V by: O is as accurate as with fp32 sums (it is normalized by the
 * weights it used), but log(l) is off by up to ~1.5e-3 in bf16 (cuDNN and FA2 give ~1e-6), and
 * the backward's gradients measurably worse with such an LSE; so only calls without LSE (lse ==
 * NULL: inference) take these rows. Where the ones live, so that the descriptor reaches them: d64,
 * one 2 KiB region that the V descriptor's leading-dimension offset (the distance to the next
 * 64-column slab) points at from every V stage and k-step; d128, a third slab of each V stage
 * (the LBO there is the distance between V's two slabs). */
template <int R> struct sm90_fwd_tile_nolse : sm90_fwd_tile<R> {
  static constexpr bool ROWSUM_MMA = true;
  /* the d64 M128 twin runs without the tail: with it d64 causal 512 / 1k lost 2.3-2.5% where
   * the LSE row gained 1.5-2.2%; its wgmma descriptors left the uniform registers (+44 R2UR,
   * NOTES.md steps 45-47) */
  static constexpr bool TAIL = R == SM90_D64_M128 ? false : sm90_fwd_tile<R>::TAIL;
  static constexpr bool RING_SHFL_LATE = R == SM90_D64_M128 ? false : sm90_fwd_tile<R>::RING_SHFL_LATE;
  /* d128: the ones slabs take the room of a second Q slot; d64 M128: two (above) */
  static constexpr int Q_STAGES = sm90_fwd_tile<R>::HEAD_DIM == 128 ? 1
                                  : R == SM90_D64_M128           ? SM90_Q_SLOTS(2)
                                                                 : sm90_fwd_tile<R>::Q_STAGES;
};
template <> struct sm90_fwd_tile<SM90_NOLSE + SM90_D64_M192> : sm90_fwd_tile_nolse<SM90_D64_M192> {};
template <> struct sm90_fwd_tile<SM90_NOLSE + SM90_D64_M128> : sm90_fwd_tile_nolse<SM90_D64_M128> {};
template <> struct sm90_fwd_tile<SM90_NOLSE + SM90_D128_M128> : sm90_fwd_tile_nolse<SM90_D128_M128> {};

/* Kernel variants (dev/sm90_fwd measures each; the library uses SM90_FWD_VARIANT, fwd.cu). */
enum { SM90_FWD_SIMPLE = 0, SM90_FWD_OVERLAP = 1, SM90_FWD_OVERLAP_PINGPONG = 2 };

template <int CFG> struct sm90_fwd_smem {
  typedef sm90_fwd_tile<CFG> tile;
  static constexpr int D = tile::HEAD_DIM;
  static constexpr int CHUNKS = D / 64;                   /* 128-byte slabs per row */
  static constexpr int Q_BYTES = tile::BLOCK_M * D * 2;   /* [D/64][BLOCK_M][64] */
  static constexpr int KV_BYTES = tile::BLOCK_N * D * 2;  /* one stage of K or V */
  static constexpr int OW_BYTES = 64 * D * 2;             /* one consumer's O slab */
  /* row sums by the tensor core (ROWSUM_MMA rows): where the ones are */
  static constexpr bool ONES_SLAB = tile::ROWSUM_MMA && CHUNKS == 2; /* 3rd slab per V stage */
  static constexpr int ONES_BYTES = tile::ROWSUM_MMA && CHUNKS == 1 ? 2048 : 0; /* 16 keys */
  static constexpr int V_STAGE_BYTES = KV_BYTES + (ONES_SLAB ? tile::BLOCK_N * 128 : 0);
  static constexpr int O_REGS = D / 2 + (tile::ROWSUM_MMA ? 4 : 0); /* accumulator of P V */
  static constexpr int Q_OFF = 0;
  static constexpr int K_OFF = Q_OFF + tile::Q_STAGES * Q_BYTES;
  static constexpr int V_OFF = K_OFF + tile::STAGES * KV_BYTES;
  static constexpr int O_OFF = V_OFF + tile::STAGES * V_STAGE_BYTES;
  static constexpr int ONES_OFF = O_OFF + tile::CONSUMER_WGS * OW_BYTES;
  static constexpr int BAR_OFF = ONES_OFF + ONES_BYTES;
  static constexpr int NUM_BARS = 2 * tile::Q_STAGES + 4 * tile::STAGES;
  static constexpr int BYTES = BAR_OFF + 8 * NUM_BARS + 1024; /* + slack to align the base */
  static_assert(BYTES <= 227 * 1024, "shared memory of a tile-table row over the sm_90 limit");
};

struct sm90_fwd_args {
  float *lse;        /* [batch][heads_q][seqlen_q] or NULL */
  float scale_log2;  /* softmax_scale * log2(e) */
  int seqlen_q, seqlen_k;
  sm90_divisor by_group; /* query head h reads KV head h / group */
  int window_left, window_right;
  int num_tiles;
  sm90_tile_order sched; /* the tiles' order (tile_scheduler.cuh), with heads_q */
};

/* x broadcast from lane 0: the same value, but the compiler now knows it is warp-uniform. The
 * main-loop step passes its ring indices through it, so the wgmma descriptors and barrier
 * addresses derived from them live in uniform registers: without it each wgmma's descriptor was
 * built in vector registers and moved over (R2UR, IMAD.MOV), 60 instructions a d128 step; with
 * it the unmasked step is 522 -> 489 instructions (d128), 470 -> 444 (d64): d64 +0.6-2.5%, d128
 * -0.4..+1.5% up to 8k (NOTES.md steps 15, 18). */
__device__ __forceinline__ uint32_t sm90_uniform(uint32_t x) {
  return __shfl_sync(0xffffffffu, x, 0);
}

/* The K/V ring's indices through sm90_uniform: at the start of every main-loop step, or (the
 * row's RING_SHFL_LATE) where they were last changed, at the end of the step before and of the
 * tile's first block. Late, every value that reaches a step is a broadcast, so ptxas carries the
 * indices in uniform registers across the loop and drops the broadcasts inside it: no SHFL at
 * a step's start (where its latency stood before the K barrier's wait), 12 SHFL and 20 R2UR fewer
 * in the kernel (NOTES.md step 50). */
__device__ __forceinline__ void sm90_uniform_ring(uint32_t &stage, uint32_t &phase,
                                                  uint32_t &v_stage, uint32_t &v_phase) {
  stage = sm90_uniform(stage);
  phase = sm90_uniform(phase);
  v_stage = sm90_uniform(v_stage);
  v_phase = sm90_uniform(v_phase);
}

/* named barrier ids: 0 is __syncthreads; 5 + w: consumer w's turn to issue GEMMs (pingpong; up
 * to 4 consumers) */
#define SM90_BAR_TURN 5

template <bool kFp16>
__device__ __forceinline__ uint32_t sm90_pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (kFp16) {
    __half2 h = __floats2half2_rn(lo, hi);
    r = *reinterpret_cast<uint32_t *>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    r = *reinterpret_cast<uint32_t *>(&h);
  }
  return r;
}

/* per-half max of two packed 16-bit pairs, NaN where either half is NaN */
template <bool kFp16>
__device__ __forceinline__ uint32_t sm90_max_nan2(uint32_t a, uint32_t b) {
  uint32_t r;
  if constexpr (kFp16)
    asm("max.NaN.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  else
    asm("max.NaN.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

template <int N>
__device__ __forceinline__ void sm90_fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) reg_fence(r[i]);
}

/* S[64, BN] = Q_w[64, D] K[BN, D]^T: D/16 wgmma k-steps; the k-step kk lives in slab kk / 4 at
 * byte column (kk % 4) * 32 (the descriptor start moves inside the swizzle atom). K's slabs are
 * K_ROWS (the stage's BLOCK_N) rows apart; BN < K_ROWS takes the stage's first BN keys. */
template <int D, int BM, int BN, bool kFp16, int K_ROWS = BN>
__device__ __forceinline__ void sm90_gemm_qk(float (&s)[BN / 2], uint64_t desc_q, uint64_t desc_k) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint64_t dq = gmma_desc_add(desc_q, (kk / 4) * BM * 128 + (kk % 4) * 32);
    const uint64_t dk = gmma_desc_add(desc_k, (kk / 4) * K_ROWS * 128 + (kk % 4) * 32);
    if constexpr (BN == 128) wgmma_m64n128k16_ss<kFp16>(s, dq, dk, kk > 0);
    else wgmma_m64n64k16_ss<kFp16>(s, dq, dk, kk > 0);
  }
}

/* The V descriptor moved by byte_offset (a stage, a k-step). With the d64 ones region its LBO
 * points at that fixed region, so it shrinks by what the start grows: both fields of the low word
 * change in one 32-bit add (start + off/16, LBO - off/16; neither field over- or underflows). */
template <int CFG>
__device__ __forceinline__ uint64_t sm90_v_desc_add(uint64_t desc, uint32_t byte_offset) {
  if constexpr (sm90_fwd_smem<CFG>::ONES_BYTES > 0) {
    const uint32_t k = byte_offset >> 4;
    const uint32_t lo = (uint32_t)desc + k - (k << 16), hi = (uint32_t)(desc >> 32);
    return ((uint64_t)hi << 32) | lo;
  } else {
    return gmma_desc_add(desc, byte_offset);
  }
}

/* O[64, D] += P[64, BLOCK_N] V[BLOCK_N, D]: BLOCK_N/16 k-steps of 16 keys = 16 rows of 128 B
 * (2048 bytes) of each V slab; V is MN-major (D contiguous), slabs BLOCK_N * 128 bytes apart.
 * With ROWSUM_MMA the GEMM is D + 8 wide: the next slab in reach of the descriptor is all ones,
 * so o[D/2 .. D/2+3] accumulate the row sums of P. */
template <int CFG, bool kFp16>
__device__ __forceinline__ void sm90_gemm_pv(float (&o)[sm90_fwd_smem<CFG>::O_REGS],
                                             const uint32_t (&p)[sm90_fwd_tile<CFG>::BLOCK_N / 4],
                                             uint64_t desc_v) {
  constexpr int N = 2 * sm90_fwd_smem<CFG>::O_REGS;
#pragma unroll
  for (int kk = 0; kk < sm90_fwd_tile<CFG>::BLOCK_N / 16; ++kk) {
    const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
    const uint64_t dv = sm90_v_desc_add<CFG>(desc_v, kk * 2048);
    if constexpr (N == 136) wgmma_m64n136k16_rs_tb<kFp16>(o, a, dv, 1);
    else if constexpr (N == 128) wgmma_m64n128k16_rs_tb<kFp16>(o, a, dv, 1);
    else if constexpr (N == 72) wgmma_m64n72k16_rs_tb<kFp16>(o, a, dv, 1);
    else wgmma_m64n64k16_rs_tb<kFp16>(o, a, dv, 1);
  }
}

/* Accumulator fragment of wgmma m64nN (per warp 16 rows): element 4j + 2r + e is row
 * 16 warp + lane/4 + 8r, column 8j + 2 (lane%4) + e. */
template <int BN, bool kLeft>
__device__ __forceinline__ void sm90_mask_apply(float (&s)[BN / 2], const int (&lo)[2],
                                                const int (&hi)[2]) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if ((kLeft && 8 * j + e < lo[r]) | (8 * j + e > hi[r])) s[4 * j + 2 * r + e] = -INFINITY;
}

template <int BN>
__device__ __forceinline__ void sm90_mask(float (&s)[BN / 2], int key0, int row0, int seqlen_k,
                                          int shift, int window_left, int window_right, int lane) {
  /* visible keys of each of the thread's two rows, relative to the thread's first column
   * key0 + 2 (lane % 4): [lo, hi], so each element compares its compile-time offset 8 j + e */
  const int c0 = key0 + 2 * (lane & 3);
  int lo[2], hi[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    lo[r] = row + shift - window_left - c0;
    hi[r] = (window_right >= 0 ? min(seqlen_k - 1, row + shift + window_right) : seqlen_k - 1) - c0;
  }
  if (window_left < 0) sm90_mask_apply<BN, false>(s, lo, hi); /* causal / right window only */
  else sm90_mask_apply<BN, true>(s, lo, hi);
}

/* When the running row max m moves (FlashAttention-4's trick, bounded; NOTES.md steps 19, 28):
 * not on every new maximum, which would rescale O in nearly every step of a row's first blocks
 * (a warp rescales when any of its 16 rows moved), but only when a block brings a P = 2^(scale S
 * - m) above the row's bound: 2^-SM90_STALE_SHARE_LOG2 of the row's sum so far, at least 1 and
 * at most 2^SM90_MAX_SLACK. A P above 1 is rounded to 16 bits where the exact max would make
 * the row's largest P exactly 1, and that one key weighs in O's error: with a fixed slack of 8
 * alone O's max error was the low-precision reference's (err / lowp mean 0.97 over 1000 seeds,
 * 0.4% outside the criterion) against 0.75 for the exact max. The bound keeps such a key to at
 * most 1/33 of its row's final weight (1/(2^SHARE + 1)): 0.754, as the exact max (share 1/9:
 * 0.80). The cap keeps P finite in fp16, and the LSE, m + log2(l) with the same m, is exact.
 * SM90_STALE_SHARE_LOG2 large: the exact running max (SM90_MAX_SLACK 0 likewise); -20: the
 * fixed slack alone. */
#ifndef SM90_MAX_SLACK
#define SM90_MAX_SLACK 8
#endif
#ifndef SM90_STALE_SHARE_LOG2
#define SM90_STALE_SHARE_LOG2 5
#endif

/* bound[r]: the largest P that row r may take without moving m (above), from the row's sum so
 * far in units of the current m: the quad's fp32 partial sums l added up (a butterfly: the same
 * bits in all four lanes), or (kRowSumMma) the row-sum columns of the O accumulator (every
 * column of the ones block holds the whole sum; complete only after the P V wait). The exact
 * softmax takes it through sm90_quad_min, which makes it uniform across the quad in any case. */
template <bool kRowSumMma, int NREG>
__device__ __forceinline__ void sm90_row_bound(const float (&o)[NREG], const float (&l)[2],
                                               float (&bound)[2]) {
  constexpr float kShare = SM90_STALE_SHARE_LOG2 >= 0 ? 1.f / (float)(1 << SM90_STALE_SHARE_LOG2)
                                                      : (float)(1 << -SM90_STALE_SHARE_LOG2);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum;
    if constexpr (kRowSumMma) {
      sum = o[NREG - 4 + 2 * r]; /* NREG - 4 = D / 2 */
    } else {
      sum = l[r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    }
    bound[r] = fminf(fmaxf(sum * kShare, 1.f), (float)(1 << SM90_MAX_SLACK));
  }
}

__device__ __forceinline__ void sm90_quad_min(float (&x)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    x[r] = fminf(x[r], __shfl_xor_sync(0xffffffffu, x[r], 1));
    x[r] = fminf(x[r], __shfl_xor_sync(0xffffffffu, x[r], 2));
  }
}

/* The row maxima of a block's scores (raw, before the scale), reduced over the row's quad.
 * Four independent partial maxima per row: short dependency chains (the "wait" stall dominated
 * ncu's breakdown with one serial chain of 32). */
template <int BN>
__device__ __forceinline__ void sm90_row_max(const float (&s)[BN / 2], float (&mx)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mp[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
      mp[j % 4] = fmaxf(mp[j % 4], fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    mx[r] = fmaxf(fmaxf(mp[0], mp[1]), fmaxf(mp[2], mp[3]));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
  }
}

/* Online softmax of one block, in place, given its row maxima mx (sm90_row_max): s becomes P
 * (unnormalized, fp32); m is the running row max in log2 units (scaled; m moves to the block's
 * max only when that would bring a P above bound, which must be the same across the row's quad),
 * l the thread's partial row sum (not kept with kRowSumMma: the P V GEMM sums the rows), alpha
 * the factor O must be scaled by before P V is added. A row with no visible key so far keeps
 * m = -inf, P = 0. */
template <int BN, bool kRowSumMma>
__device__ __forceinline__ void sm90_softmax_exp(float (&s)[BN / 2], const float (&mx)[2],
                                                 float (&m)[2], float (&l)[2], float (&alpha)[2],
                                                 const float (&bound)[2], float scale_log2) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    /* m moves where the block's largest P would pass the bound (m = -inf: always, ex2(inf);
     * a row with no key in this block either: never, ex2(NaN) is NaN) */
    const float m_cand = mx[r] * scale_log2;
    const float m_new = ex2_approx(m_cand - m[r]) > bound[r] ? m_cand : m[r];
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    alpha[r] = ex2_approx(m[r] - m_use);
    m[r] = m_new;
    float sp[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float pv = ex2_approx(fmaf(s[4 * j + 2 * r + e], scale_log2, -m_use));
        s[4 * j + 2 * r + e] = pv;
        if constexpr (!kRowSumMma) sp[j % 4] += pv;
      }
    }
    if constexpr (!kRowSumMma) l[r] = l[r] * alpha[r] + ((sp[0] + sp[1]) + (sp[2] + sp[3]));
  }
}

/* The exact online softmax of one block: sm90_row_max, then sm90_softmax_exp. */
template <int BN, bool kRowSumMma>
__device__ __forceinline__ void sm90_softmax(float (&s)[BN / 2], float (&m)[2], float (&l)[2],
                                             float (&alpha)[2], const float (&bound)[2],
                                             float scale_log2) {
  float mx[2];
  sm90_row_max<BN>(s, mx);
  sm90_softmax_exp<BN, kRowSumMma>(s, mx, m, l, alpha, bound, scale_log2);
}

/* How many of a consumer's key blocks, from its first, take the exact softmax without trying the
 * lazy one (below): the first always (m = -inf); over the next ones the row sum is still small,
 * so the bound (above) is low and the check would fail on most of them, the lazy work wasted
 * (NOTES.md step 28: 8 against 4 and 1; step 30, with the cheaper exact steps below: 12 against
 * 8 +1.4% geomean, 16 no better, 24 slower at 4k-16k). */
#ifndef SM90_EXACT_BLOCKS
#define SM90_EXACT_BLOCKS 12
#endif
/* Those blocks, where unmasked, run as their own run of the main loop (kExactOnly steps): the
 * row maxima computed under the P V product, between the S wait and the P V wait, where the
 * lazy softmax has nothing to do (NOTES.md step 30: geomean +0.6-0.9%; d128 non-causal 512-1k
 * with LSE +2.5-4.8%, d64 causal 512-1k without LSE +4-7%). 0: they take the run-time choice of
 * the other blocks. */
#ifndef SM90_EXACT_MAX_EARLY
#define SM90_EXACT_MAX_EARLY 1
#endif

/* The main loop's softmax first tries the running max as it stands, without the block's max
 * (the max reduction, 74 FMNMX and 4 SHFL a step, and its dependency chain before the first
 * exp2): P = 2^(scale S - m) straight into the 16-bit p, then a check that every P of each row
 * is at most the row's bound, i.e. that the exact softmax would not move m either and would
 * compute these same P (per row a NaN-propagating max over the packed P, 15 VHMNMX in all, and a
 * warp vote). Where it fails (a P past the bound; a row that has seen no key yet: m = -inf gives
 * P = inf or NaN, NaN from -inf scores), the warp runs the exact softmax (sm90_softmax) on S,
 * which this path leaves intact. So the results are the exact path's (up to rounding at the
 * bound itself and the order of the fp32 row-sum additions); the check fails on a row's first
 * blocks and then rarely (NOTES.md steps 23, 27, 28). */

/* The lazy softmax of one block (above): p = 16-bit P of s with the running max m; returns
 * whether the whole warp passed the check (warp-uniform). With fp32 row sums (!kRowSumMma) l
 * takes the block's sums only on success. */
template <int BN, bool kRowSumMma, bool kFp16>
__device__ __forceinline__ bool sm90_softmax_lazy(const float (&s)[BN / 2], const float (&m)[2],
                                                  float (&l)[2], uint32_t (&p)[BN / 4],
                                                  const float (&bound)[2], float scale_log2) {
  float sp[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float a = ex2_approx(fmaf(s[4 * j + 2 * r], scale_log2, -m[r]));
      const float b = ex2_approx(fmaf(s[4 * j + 2 * r + 1], scale_log2, -m[r]));
      if constexpr (!kRowSumMma) sp[r][j % 4] += a + b;
      p[2 * j + r] = sm90_pack2<kFp16>(a, b);
    }
  /* per row, a max with NaN propagation over the packed pairs; then the rows' maxima side by
   * side (row 0 low, row 1 high) against the bounds in 16 bits: max(x, lim) == lim exactly when
   * both halves are at most their bound and neither is NaN */
  uint32_t mx[2] = {p[0], p[1]};
#pragma unroll
  for (int j = 1; j < BN / 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) mx[r] = sm90_max_nan2<kFp16>(mx[r], p[2 * j + r]);
  const uint32_t lows = __byte_perm(mx[0], mx[1], 0x5410), highs = __byte_perm(mx[0], mx[1], 0x7632);
  const uint32_t lim = sm90_pack2<kFp16>(bound[0], bound[1]);
  const uint32_t both = sm90_max_nan2<kFp16>(sm90_max_nan2<kFp16>(lows, highs), lim);
  const bool ok = __all_sync(0xffffffffu, both == lim);
  if constexpr (!kRowSumMma) {
    if (ok) {
#pragma unroll
      for (int r = 0; r < 2; ++r) l[r] += (sp[r][0] + sp[r][1]) + (sp[r][2] + sp[r][3]);
    }
  }
  return ok;
}

/* O *= alpha per row. Skipped (exactly: alpha is ex2(0) = 1) when no row of the warp got a new
 * maximum, which after the first blocks of a long row is the common case; the test is a warp
 * vote, so the branch is uniform. */
template <int NREG>
__device__ __forceinline__ void sm90_rescale_o(float (&o)[NREG], const float (&alpha)[2]) {
  if (!__any_sync(0xffffffffu, (alpha[0] != 1.f) | (alpha[1] != 1.f))) return;
#pragma unroll
  for (int j = 0; j < NREG / 4; ++j) {
    o[4 * j + 0] *= alpha[0];
    o[4 * j + 1] *= alpha[0];
    o[4 * j + 2] *= alpha[1];
    o[4 * j + 3] *= alpha[1];
  }
}

template <int BN, bool kFp16>
__device__ __forceinline__ void sm90_convert_p(const float (&s)[BN / 2], uint32_t (&p)[BN / 4]) {
#pragma unroll
  for (int i = 0; i < BN / 4; ++i) p[i] = sm90_pack2<kFp16>(s[2 * i], s[2 * i + 1]);
}

/* The first K elements of a register array, as an array: the accumulator of wgmma m64n(2K) is
 * the first K registers of m64nN's (element 4j + 2r + e is column 8j + 2 (lane % 4) + e in
 * both), and P's 16-bit pairs of keys [0, 2K) are the first K / 2 registers of p. */
template <int K, typename T, int N>
__device__ __forceinline__ T (&sm90_head(T (&a)[N]))[K] {
  static_assert(K <= N, "sm90_head: more than the array");
  return *reinterpret_cast<T(*)[K]>(&a[0]);
}

/* Whether a consumer's first (highest) key block n can be computed as its first half only: no
 * row of the consumer's 64 (those past seqlen_q included, their output clipped) sees a key at or
 * past n BLOCK_N + BLOCK_N / 2. Under causal masking in 128-row tiles over 128-key blocks this is
 * consumer 0's top block whatever seqlen_k - seqlen_q (its rows end 64 before the tile's, so it
 * sees at most the block's first 64 keys, or none of them): S = Q K^T as m64n64, the softmax on
 * 32 elements a thread, P's second half zero (the next step's P V multiplies those keys by 0, as
 * the mask made them before). SM90_HALF_FIRST 0: never (and the kernel's
 * kHalfFirst leaves out the rows where it does not fit). */
#ifndef SM90_HALF_FIRST
#define SM90_HALF_FIRST 1
#endif
template <int BM, int BN>
__device__ __forceinline__ bool sm90_first_block_half(int n, int m_block, int cw,
                                                      const sm90_fwd_args &args) {
  const int q_last = m_block * BM + 64 * cw + 63; /* the consumer's last row */
  int k_last = args.seqlen_k - 1;                  /* the last key one of its rows sees */
  if (args.window_right >= 0)
    k_last = min(k_last, q_last + (args.seqlen_k - args.seqlen_q) + args.window_right);
  return k_last < n * BN + BN / 2;
}

/* What a consumer's main-loop step needs besides its registers. */
struct sm90_step_args {
  uint64_t desc_q, desc_k0, desc_v0;
  uint32_t bar_k_full, bar_k_empty, bar_v_full, bar_v_empty, bar_q_empty;
  int turn_bar, next_turn_bar; /* pingpong */
  int lane, ct, row0;
  int lazy_from; /* blocks n <= lazy_from try the lazy softmax first (SM90_EXACT_BLOCKS) */
};

/* One step of the overlapped main loop for key block n: issue S = Q K_n^T, then O += P V for the
 * previous block (P in registers, its V stage v_stage), then the softmax of S under the P V
 * product; returns with both complete, p holding P_n, O rescaled to the new running max, and the
 * rings advanced. kMask: block n needs the per-element mask. kExactOnly: the exact softmax with
 * the row maxima taken before the P V wait (SM90_EXACT_MAX_EARLY); else the lazy one first where
 * n <= sa.lazy_from. O is rescaled at the end of the softmax (the P V product it must include is
 * complete there), not between the next step's GEMMs: the same cost (NOTES.md step 30), and the
 * tile's first block, whose O is still zero, needs none.
 * Between the S wait and the P V wait there is no branch (predicated arrives; the mask chosen by
 * which run of the loop calls the step): with the branches there the kernel measured 3-15%
 * slower (NOTES.md step 13). ptxas placed the P V wait before most of the softmax anyway, and
 * forcing it after (full intra-warpgroup overlap) measured slower, since issuing a consumer's
 * wgmmas blocks until they have nearly all run; the lazy softmax writes P into p and takes its
 * bound from the row-sum columns, so it follows the P V wait, and the exact softmax (a uniform
 * branch) only where the check fails. */
template <int CFG, bool kFp16, bool kPingpong, bool kMask, bool kExactOnly>
__device__ __forceinline__ void sm90_consumer_step(
    const sm90_step_args &sa, const sm90_fwd_args &args, float (&s)[sm90_fwd_tile<CFG>::BLOCK_N / 2],
    uint32_t (&p)[sm90_fwd_tile<CFG>::BLOCK_N / 4], float (&o)[sm90_fwd_smem<CFG>::O_REGS],
    float (&m)[2], float (&l)[2], int n, bool last, uint32_t &stage,
    uint32_t &phase, uint32_t &v_stage, uint32_t &v_phase SM90_TRACE_PARAMS) {
  typedef sm90_fwd_tile<CFG> tile;
  typedef sm90_fwd_smem<CFG> L;
  constexpr int D = tile::HEAD_DIM, BM = tile::BLOCK_M, BN = tile::BLOCK_N;
  const int shift = args.seqlen_k - args.seqlen_q;
  if constexpr (!tile::RING_SHFL_LATE) sm90_uniform_ring(stage, phase, v_stage, v_phase);
  mbar_wait(sa.bar_k_full + 8 * stage, phase);
  if constexpr (kPingpong) named_bar_sync(sa.turn_bar, 256);
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_TURN, 0);
  wgmma_fence();
  sm90_gemm_qk<D, BM, BN, kFp16>(s, sa.desc_q, gmma_desc_add(sa.desc_k0, stage * L::KV_BYTES));
  wgmma_commit();
  mbar_wait(sa.bar_v_full + 8 * v_stage, v_phase);
  sm90_fence_regs(o);
  wgmma_fence();
  sm90_gemm_pv<CFG, kFp16>(o, p, sm90_v_desc_add<CFG>(sa.desc_v0, v_stage * L::V_STAGE_BYTES));
  wgmma_commit();
  if constexpr (kPingpong) named_bar_arrive(sa.next_turn_bar, 256);
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_ISSUED, 0);
  wgmma_wait<1>(); /* S done, P V may still run */
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_S_READY, 0);
  sm90_fence_regs(s);
  mbar_arrive_if(sa.bar_k_empty + 8 * stage, sa.lane == 0);
  mbar_arrive_if(sa.bar_q_empty, last && sa.lane == 0);
  if constexpr (kMask)
    sm90_mask<BN>(s, n * BN, sa.row0, args.seqlen_k, shift, args.window_left, args.window_right,
                  sa.lane);
  float mx[2];
  if constexpr (kExactOnly) sm90_row_max<BN>(s, mx); /* under the P V product */
  wgmma_wait<0>(); /* P V done: p and the V stage are free, the row-sum columns complete */
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_PV_DONE, 0);
  sm90_fence_regs(o);
  mbar_arrive_if(sa.bar_v_empty + 8 * v_stage, sa.lane == 0);
  float bound[2], alpha[2];
  sm90_row_bound<tile::ROWSUM_MMA>(o, l, bound);
  if constexpr (kExactOnly) {
    sm90_quad_min(bound);
    sm90_softmax_exp<BN, tile::ROWSUM_MMA>(s, mx, m, l, alpha, bound, args.scale_log2);
    sm90_rescale_o(o, alpha);
    sm90_convert_p<BN, kFp16>(s, p);
  } else if (n > sa.lazy_from ||
             !sm90_softmax_lazy<BN, tile::ROWSUM_MMA, kFp16>(s, m, l, p, bound, args.scale_log2)) {
    sm90_quad_min(bound);
    sm90_softmax<BN, tile::ROWSUM_MMA>(s, m, l, alpha, bound, args.scale_log2);
    sm90_rescale_o(o, alpha);
    sm90_convert_p<BN, kFp16>(s, p);
  }
  SM90_TRACE_EVENT(sa.ct == 0, SM90_EV_SOFTMAX, 0);
  v_stage = stage;
  v_phase = phase;
  if (++stage == tile::STAGES) {
    stage = 0;
    phase ^= 1;
  }
  if constexpr (tile::RING_SHFL_LATE) sm90_uniform_ring(stage, phase, v_stage, v_phase);
}

/* Each consumer walks its own key range: the blocks its 64 query rows see, [c_lo, c_hi) within
 * the tile's [n_lo, n_hi), with the per-element mask decided for its rows alone; the tile's other
 * blocks it only releases (sm90_release_block). Under causal masking a 192-row tile (d64) spans
 * two masked key blocks, a consumer's 64 rows at most one, and the top block is often invisible
 * to consumers 0 and 1 (NOTES.md step 21). Compiled into the rows whose BLOCK_M is not BLOCK_N
 * (d64 M192): in 128-row tiles over 128-key blocks a causal consumer has nothing to skip, and the
 * short causal d64 configs there measured ~1% slower with it. 0: every consumer computes the
 * tile's whole range. */
#ifndef SM90_CONSUMER_RANGE
#define SM90_CONSUMER_RANGE 1
#endif

/* A key block of the tile that none of this consumer's rows sees: take and pass the GEMM turn (so
 * that the turns keep going round in step with the other consumers) and free the block's K and V
 * stages once they have been loaded (an arrival before the load would count for the stage's
 * previous use). */
template <int STAGES, bool kPingpong>
__device__ __forceinline__ void sm90_release_block(const sm90_step_args &sa, uint32_t &stage,
                                                   uint32_t &phase) {
  mbar_wait(sa.bar_k_full + 8 * stage, phase);
  if constexpr (kPingpong) {
    named_bar_sync(sa.turn_bar, 256);
    named_bar_arrive(sa.next_turn_bar, 256);
  }
  mbar_arrive_if(sa.bar_k_empty + 8 * stage, sa.lane == 0);
  mbar_wait(sa.bar_v_full + 8 * stage, phase);
  mbar_arrive_if(sa.bar_v_empty + 8 * stage, sa.lane == 0);
  if (++stage == STAGES) {
    stage = 0;
    phase ^= 1;
  }
}

/* The end of a tile for one consumer: O / l -> 16-bit -> this warp's 16 rows of the consumer's O
 * slab (stmatrix) -> TMA store by the warp's lane 0 (no barrier across the warpgroup); LSE by one
 * thread a row. A row without a visible key (l = 0) gets O = 0 and LSE = -inf. The two rows of a
 * thread go side by side and the LSE stores are predicated, not branched over: this code is on
 * the path from a tile's last P V to the next tile's first S GEMM. */
template <int CFG, bool kFp16>
__device__ __forceinline__ void sm90_epilogue(const float (&o)[sm90_fwd_smem<CFG>::O_REGS],
                                              const float (&m)[2], const float (&l)[2],
                                              const sm90_tile &tc, const sm90_fwd_args &args,
                                              const CUtensorMap *tm_o, uint32_t slab, int cw,
                                              int warp, int lane) {
  typedef sm90_fwd_tile<CFG> tile;
  typedef sm90_fwd_smem<CFG> L;
  constexpr int D = tile::HEAD_DIM, BM = tile::BLOCK_M;
  const int row_in_wg0 = 16 * warp + lane / 4;
  const int row0 = tc.m_block * BM + 64 * cw + row_in_wg0;
  float lt[2], inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) /* every column of the ones block holds the row's whole sum */
    lt[r] = tile::ROWSUM_MMA ? o[D / 2 + 2 * r] : l[r];
  if constexpr (!tile::ROWSUM_MMA) {
#pragma unroll
    for (int r = 0; r < 2; ++r) lt[r] += __shfl_xor_sync(0xffffffffu, lt[r], 1);
#pragma unroll
    for (int r = 0; r < 2; ++r) lt[r] += __shfl_xor_sync(0xffffffffu, lt[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) inv[r] = lt[r] > 0.f ? __fdividef(1.f, lt[r]) : 0.f;
  if (args.lse != nullptr) {
    /* l >= 1 where a row saw a key (its largest P is 1), so lg2 needs no subnormal care */
    float *lse_row = args.lse + ((int64_t)tc.batch * args.sched.heads_q + tc.head) * args.seqlen_q;
    const bool writer = (lane & 3) == 0;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float lse = lt[r] > 0.f ? (m[r] + lg2_approx(lt[r])) * 0.69314718055994531f : -INFINITY;
      if (writer && row0 + 8 * r < args.seqlen_q) lse_row[row0 + 8 * r] = lse;
    }
  }
  /* this warp's previous store must have finished reading its rows before they are rewritten */
  if (lane == 0) tma_store_wait_read<0>();
  __syncwarp();
  /* stmatrix x4 per 16 columns: matrices (rows 0-7, cols 8j..), (rows 8-15, 8j..), (rows 0-7,
   * 8j+8..), (rows 8-15, 8j+8..) of the warp's 16 rows; lane t addresses row t % 8 of matrix t / 8.
   * 128-byte swizzle: 16-byte chunk c of a row goes to chunk c ^ (row % 8). */
  const int st_row = 16 * warp + (lane & 7) + ((lane >> 3) & 1) * 8;
  const int st_chunk = lane >> 4;
#pragma unroll
  for (int j = 0; j < D / 8; j += 2) {
    const int chunk = j + st_chunk; /* 16-byte chunk across the whole row, 8 per 64-column slab */
    const uint32_t addr = slab + (chunk / 8) * (64 * 128) + st_row * 128 +
                          (((chunk % 8) ^ (st_row & 7)) << 4);
    stmatrix_x4(addr, sm90_pack2<kFp16>(o[4 * j + 0] * inv[0], o[4 * j + 1] * inv[0]),
                sm90_pack2<kFp16>(o[4 * j + 2] * inv[1], o[4 * j + 3] * inv[1]),
                sm90_pack2<kFp16>(o[4 * j + 4] * inv[0], o[4 * j + 5] * inv[0]),
                sm90_pack2<kFp16>(o[4 * j + 6] * inv[1], o[4 * j + 7] * inv[1]));
  }
  fence_proxy_async_smem(); /* stmatrix above (generic proxy) -> TMA store (async proxy) below */
  __syncwarp();
  if (lane == 0) {
    /* rows [16 warp, 16 warp + 16) of each 64-column slab: 2 KiB, 1024-byte aligned */
#pragma unroll
    for (int c = 0; c < L::CHUNKS; ++c)
      tma_store_4d(tm_o, slab + c * 64 * 128 + warp * 16 * 128, 64 * c,
                   tc.m_block * BM + 64 * cw + 16 * warp, tc.head, tc.batch);
    tma_store_commit();
  }
}

template <int CFG, bool kFp16, int VARIANT>
__global__ void __launch_bounds__(128 * (1 + sm90_fwd_tile<CFG>::CONSUMER_WGS), 1)
    sm90_fwd_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                    const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_o,
                    const sm90_fwd_args args, const __grid_constant__ sm90_tile_tail tail) {
  typedef sm90_fwd_tile<CFG> tile;
  typedef sm90_fwd_smem<CFG> L;
  constexpr int D = tile::HEAD_DIM;
  constexpr int BM = tile::BLOCK_M, BN = tile::BLOCK_N, STAGES = tile::STAGES;
  constexpr int NCW = tile::CONSUMER_WGS;
  constexpr int QS = tile::Q_STAGES;
  constexpr bool kOverlap = VARIANT != SM90_FWD_SIMPLE;
  constexpr bool kPingpong = VARIANT == SM90_FWD_OVERLAP_PINGPONG && NCW >= 2;
  /* the d64 LSE rows only (NOTES.md step 40): there d64 causal 512 / 1k / 2k +2 / +2 / +3%; the
   * no-LSE d64 M128 row measured 3-6% slower at causal 512 / 1k with it (its main loops gained
   * 6-13 uniform instructions), the LSE d128 row 0.6-1% slower at causal 512 / 1k, and in the
   * no-LSE d128 row the second branch of the first S GEMM leaves too few registers: ptxas
   * serializes every wgmma (C7511) */
  constexpr bool kHalfFirst = SM90_HALF_FIRST && BN == 128 && D == 64 && !tile::ROWSUM_MMA;
  constexpr int BH = kHalfFirst ? BN / 2 : BN; /* the first block's keys where it is halved */

  extern __shared__ uint8_t smem_raw[];
  /* 1024-byte aligned base: the swizzle pattern of TMA and wgmma is anchored to 1024 B */
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = base + L::Q_OFF, sK = base + L::K_OFF, sV = base + L::V_OFF;
  const uint32_t sO = base + L::O_OFF;
  const uint32_t bar_q_full = base + L::BAR_OFF, bar_q_empty = bar_q_full + 8 * QS;
  const uint32_t bar_k_full = bar_q_empty + 8 * QS, bar_k_empty = bar_k_full + 8 * STAGES;
  const uint32_t bar_v_full = bar_k_empty + 8 * STAGES, bar_v_empty = bar_v_full + 8 * STAGES;

  /* warp-uniform by construction (a broadcast), so the compiler keeps more of what derives from
   * it (consumer index, descriptors, barrier addresses) in uniform registers: d64 +2-3%, and the
   * M192 row then spills 28 bytes, stored before the tile loop and reloaded once a tile in the
   * epilogue, none in the main loops (NOTES.md steps 11, 13) */
  const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
  if (threadIdx.x == 0) {
    tma_prefetch_desc(&tm_q);
    tma_prefetch_desc(&tm_k);
    tma_prefetch_desc(&tm_v);
    tma_prefetch_desc(&tm_o);
    for (int s = 0; s < QS; ++s) {
      mbar_init(bar_q_full + 8 * s, 1);
      mbar_init(bar_q_empty + 8 * s, 4 * NCW); /* one arrival per consumer warp */
    }
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bar_k_full + 8 * s, 1);
      mbar_init(bar_k_empty + 8 * s, 4 * NCW);
      mbar_init(bar_v_full + 8 * s, 1);
      mbar_init(bar_v_empty + 8 * s, 4 * NCW);
    }
    mbar_fence_init();
  }
  if constexpr (tile::ROWSUM_MMA) {
    /* the ones of the row-sum columns (every 16-bit element 1.0, so the swizzle does not matter),
     * written once; the fence makes them visible to wgmma (async proxy) */
    const uint32_t one2 = kFp16 ? 0x3C003C00u : 0x3F803F80u;
    if constexpr (L::ONES_BYTES > 0) {
      for (int i = threadIdx.x; i < L::ONES_BYTES / 4; i += blockDim.x)
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(base + L::ONES_OFF + 4 * i), "r"(one2) : "memory");
    } else {
      for (int i = threadIdx.x; i < STAGES * BN * 32; i += blockDim.x)
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sV + (i / (BN * 32)) * L::V_STAGE_BYTES +
                                                           L::KV_BYTES + 4 * (i % (BN * 32))),
                     "r"(one2)
                     : "memory");
    }
    fence_proxy_async_smem();
  }
  __syncthreads();

  const int shift = args.seqlen_k - args.seqlen_q;

  if (wg == 0) {
    /* ================================ producer ================================ */
    setmaxnreg_dec<tile::PRODUCER_REGS>();
    if (threadIdx.x != 0) return;
    uint32_t stage = 0, phase = 0, q_iter = 0;
    SM90_TRACE_DECL(0);
    for (int round = 0; round * (int)gridDim.x < args.num_tiles; ++round) {
      const int pos = sm90_tile_position_tail<tile::HEAD_GROUPS, tile::TAIL>(
          round, blockIdx.x, gridDim.x, args.sched.order, args.num_tiles, tail);
      if (pos >= args.num_tiles) continue;
      const sm90_tile tc = sm90_decode_tile<tile::HEAD_GROUPS>(pos, args.sched);
      int n_lo, n_hi;
      sm90_kv_range<BM, BN>(tc.m_block, args.seqlen_q, args.seqlen_k, args.window_left,
                            args.window_right, &n_lo, &n_hi);
      SM90_TRACE_EVENT(true, SM90_EV_P_TILE, n_hi - n_lo);
      if (n_hi <= n_lo) continue; /* consumers write O = 0 without waiting for anything */
      const int hk = sm90_div(tc.head, args.by_group);
      /* Q: wait until every consumer finished the Q K^T of the tile that last used the slot */
      const uint32_t q_slot = q_iter % QS, q_phase = (q_iter / QS) & 1;
      mbar_wait(bar_q_empty + 8 * q_slot, q_phase ^ 1);
      SM90_TRACE_EVENT(true, SM90_EV_P_Q, 0);
      mbar_arrive_expect_tx(bar_q_full + 8 * q_slot, L::Q_BYTES);
#pragma unroll
      for (int c = 0; c < L::CHUNKS; ++c)
        tma_load_4d(sQ + q_slot * L::Q_BYTES + c * BM * 128, &tm_q, bar_q_full + 8 * q_slot,
                    64 * c, tc.m_block * BM, tc.head, tc.batch);
      ++q_iter;
      /* K of block i before V of block i - 1, the order the consumers use them in
       * (S_i = Q K_i^T is issued before O += P_{i-1} V_{i-1}); K and V of block i share stage
       * i % STAGES. A K slot frees after its S GEMM, much earlier than the V slot, so K loads run
       * up to STAGES blocks ahead. */
      uint32_t v_stage = stage, v_phase = phase;
      for (int n = n_hi - 1; n >= n_lo - 1; --n) {
        if (n >= n_lo) {
          mbar_wait(bar_k_empty + 8 * stage, phase ^ 1);
          mbar_arrive_expect_tx(bar_k_full + 8 * stage, L::KV_BYTES);
#pragma unroll
          for (int c = 0; c < L::CHUNKS; ++c)
            tma_load_4d(sK + stage * L::KV_BYTES + c * BN * 128, &tm_k, bar_k_full + 8 * stage,
                        64 * c, n * BN, hk, tc.batch);
        }
        if (n < n_hi - 1) { /* V of the previous block, n + 1 */
          mbar_wait(bar_v_empty + 8 * v_stage, v_phase ^ 1);
          mbar_arrive_expect_tx(bar_v_full + 8 * v_stage, L::KV_BYTES);
#pragma unroll
          for (int c = 0; c < L::CHUNKS; ++c)
            tma_load_4d(sV + v_stage * L::V_STAGE_BYTES + c * BN * 128, &tm_v,
                        bar_v_full + 8 * v_stage, 64 * c, (n + 1) * BN, hk, tc.batch);
          if (++v_stage == STAGES) {
            v_stage = 0;
            v_phase ^= 1;
          }
        }
        if (n >= n_lo && ++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
      }
    }
    return;
  }

  /* ================================ consumers ================================ */
  setmaxnreg_inc<tile::CONSUMER_REGS>();
  const int cw = wg - 1;              /* consumer index: query rows [64 cw, 64 cw + 64) */
  const int ct = threadIdx.x - 128 * wg;
  const int warp = ct / 32, lane = ct % 32;
  const int row_in_wg0 = 16 * warp + lane / 4; /* this thread's rows: row_in_wg0 and + 8 */

  /* descriptors: Q rows of this consumer start 64 cw rows into each Q slab (8 KiB, atom aligned) */
  const uint64_t desc_q0 = gmma_desc_sw128(sQ + cw * 64 * 128, 1, 1024);
  const uint64_t desc_k0 = gmma_desc_sw128(sK, 1, 1024);
  /* V: LBO = distance to the next 64-column slab (d128: V's second; with ROWSUM_MMA the ones) */
  const uint64_t desc_v0 =
      gmma_desc_sw128(sV, L::ONES_BYTES > 0 ? L::ONES_OFF - L::V_OFF : BN * 128, 1024);

  /* turns go round the consumers 0, 1, .., NCW-1, 0, ..: each waits on its own barrier and, once
   * its GEMMs are issued, arrives on the next one's; the last pre-arrives so that 0 goes first */
  const int next_cw = cw + 1 == NCW ? 0 : cw + 1;
  if constexpr (kPingpong) {
    if (cw == NCW - 1) named_bar_arrive(SM90_BAR_TURN + 0, 256);
  }

  uint32_t stage = 0, phase = 0, q_iter = 0;
  SM90_TRACE_DECL(wg);
  for (int round = 0; round * (int)gridDim.x < args.num_tiles; ++round) {
    const int pos = sm90_tile_position_tail<tile::HEAD_GROUPS, tile::TAIL>(
        round, blockIdx.x, gridDim.x, args.sched.order, args.num_tiles, tail);
    if (pos >= args.num_tiles) continue;
    const sm90_tile tc = sm90_decode_tile<tile::HEAD_GROUPS>(pos, args.sched);
    int n_lo, n_hi;
    sm90_kv_range<BM, BN>(tc.m_block, args.seqlen_q, args.seqlen_k, args.window_left,
                          args.window_right, &n_lo, &n_hi);
    SM90_TRACE_EVENT(ct == 0, SM90_EV_TILE, n_hi - n_lo);
    const int row0 = tc.m_block * BM + 64 * cw + row_in_wg0; /* global query row */

    float o[L::O_REGS];
#pragma unroll
    for (int i = 0; i < L::O_REGS; ++i) o[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f}, alpha[2];

    if (n_hi > n_lo) {
      float s[BN / 2];
      uint32_t p[BN / 4];
      const uint32_t q_slot = q_iter % QS;
      const uint32_t bar_q_full_t = bar_q_full + 8 * q_slot, bar_q_empty_t = bar_q_empty + 8 * q_slot;
      const uint64_t desc_q = gmma_desc_add(desc_q0, q_slot * L::Q_BYTES);
      mbar_wait(bar_q_full_t, (q_iter / QS) & 1);
      ++q_iter;
      SM90_TRACE_EVENT(ct == 0, SM90_EV_Q_READY, 0);
      const int nblk = n_hi - n_lo;

      if constexpr (!kOverlap) {
        for (int i = 0; i < nblk; ++i) {
          const int n = n_hi - 1 - i;
          mbar_wait(bar_k_full + 8 * stage, phase);
          wgmma_fence();
          sm90_gemm_qk<D, BM, BN, kFp16>(s, desc_q, gmma_desc_add(desc_k0, stage * L::KV_BYTES));
          wgmma_commit();
          wgmma_wait<0>();
          sm90_fence_regs(s);
          if (lane == 0) {
            mbar_arrive(bar_k_empty + 8 * stage);
            if (i == nblk - 1) mbar_arrive(bar_q_empty_t);
          }
          if (sm90_block_needs_mask<BM, BN>(n, tc.m_block, args.seqlen_q, args.seqlen_k,
                                            args.window_left, args.window_right))
            sm90_mask<BN>(s, n * BN, row0, args.seqlen_k, shift, args.window_left,
                          args.window_right, lane);
          float bound[2];
          sm90_row_bound<tile::ROWSUM_MMA>(o, l, bound); /* the last P V is waited for */
          sm90_quad_min(bound);
          sm90_softmax<BN, tile::ROWSUM_MMA>(s, m, l, alpha, bound, args.scale_log2);
          sm90_rescale_o(o, alpha);
          sm90_convert_p<BN, kFp16>(s, p);
          mbar_wait(bar_v_full + 8 * stage, phase);
          sm90_fence_regs(o);
          wgmma_fence();
          sm90_gemm_pv<CFG, kFp16>(o, p, sm90_v_desc_add<CFG>(desc_v0, stage * L::V_STAGE_BYTES));
          wgmma_commit();
          wgmma_wait<0>();
          sm90_fence_regs(o);
          if (lane == 0) mbar_arrive(bar_v_empty + 8 * stage);
          if (++stage == STAGES) {
            stage = 0;
            phase ^= 1;
          }
        }
      } else {
        sm90_step_args sa;
        sa.desc_q = desc_q;
        sa.desc_k0 = desc_k0;
        sa.desc_v0 = desc_v0;
        sa.bar_k_full = bar_k_full;
        sa.bar_k_empty = bar_k_empty;
        sa.bar_v_full = bar_v_full;
        sa.bar_v_empty = bar_v_empty;
        sa.bar_q_empty = bar_q_empty_t;
        sa.turn_bar = SM90_BAR_TURN + cw;
        sa.next_turn_bar = SM90_BAR_TURN + next_cw;
        sa.lane = lane;
        sa.ct = ct;
        sa.row0 = row0;
        /* this consumer's key blocks [c_lo, c_hi) (at least one: a consumer whose rows see no
         * key computes block n_lo, fully masked; one whose rows all lie past seqlen_q computes
         * what the last real row sees, its output clipped, NOTES.md step 22), and its mask
         * decisions: as a tile of BLOCK_M 64 with index sub (kRange, SM90_CONSUMER_RANGE) */
        constexpr bool kRange = SM90_CONSUMER_RANGE && BM != BN;
        constexpr int RM = kRange ? 64 : BM;
        const int sub = kRange ? tc.m_block * NCW + cw : tc.m_block;
        int c_lo = n_lo, c_hi = n_hi;
        if constexpr (kRange) {
          sm90_kv_range<RM, BN>(sub, args.seqlen_q, args.seqlen_k, args.window_left,
                                args.window_right, &c_lo, &c_hi);
          c_lo = max(c_lo, n_lo);
          c_hi = min(c_hi, n_hi);
          if (c_hi <= c_lo) {
            c_lo = n_lo;
            c_hi = n_lo + 1;
          }
        }
        sa.lazy_from = c_hi - 1 - SM90_EXACT_BLOCKS;
        if constexpr (kRange)
          for (int n = n_hi - 1; n >= c_hi; --n)
            sm90_release_block<STAGES, kPingpong>(sa, stage, phase);
        /* first block: S alone; only its first half where this consumer's rows see no key
         * past it (sm90_first_block_half) */
        {
          const int n = c_hi - 1;
          const bool half = kHalfFirst && sm90_first_block_half<BM, BN>(n, tc.m_block, cw, args);
          mbar_wait(bar_k_full + 8 * stage, phase);
          if constexpr (kPingpong) named_bar_sync(SM90_BAR_TURN + cw, 256);
          const uint64_t dk = gmma_desc_add(desc_k0, stage * L::KV_BYTES);
          /* each branch issues and retires its own wgmmas (a wgmma retired after a branch
           * serializes them all: ptxas C7515, NOTES.md step 17) */
          if (half) {
            wgmma_fence();
            sm90_gemm_qk<D, BM, BH, kFp16, BN>(sm90_head<BH / 2>(s), desc_q, dk);
            wgmma_commit();
            if constexpr (kPingpong) named_bar_arrive(SM90_BAR_TURN + next_cw, 256);
            wgmma_wait<0>();
          } else {
            wgmma_fence();
            sm90_gemm_qk<D, BM, BN, kFp16>(s, desc_q, dk);
            wgmma_commit();
            if constexpr (kPingpong) named_bar_arrive(SM90_BAR_TURN + next_cw, 256);
            wgmma_wait<0>();
          }
          sm90_fence_regs(s);
          SM90_TRACE_EVENT(ct == 0, SM90_EV_S0, 0);
          if (lane == 0) {
            mbar_arrive(bar_k_empty + 8 * stage);
            if (c_hi - c_lo == 1) mbar_arrive(bar_q_empty_t);
          }
          const bool masked = sm90_block_needs_mask<RM, BN>(n, sub, args.seqlen_q, args.seqlen_k,
                                                            args.window_left, args.window_right);
          const float first[2] = {1.f, 1.f}; /* m = -inf: moves in any case */
          if (half) {
            if (masked)
              sm90_mask<BH>(sm90_head<BH / 2>(s), n * BN, row0, args.seqlen_k, shift,
                                args.window_left, args.window_right, lane);
            sm90_softmax<BH, tile::ROWSUM_MMA>(sm90_head<BH / 2>(s), m, l, alpha, first,
                                               args.scale_log2);
            sm90_convert_p<BH, kFp16>(sm90_head<BH / 2>(s), sm90_head<BH / 4>(p));
#pragma unroll
            for (int i = BH / 4; i < BN / 4; ++i) p[i] = 0u; /* keys past the half: P = 0 */
          } else {
            if (masked)
              sm90_mask<BN>(s, n * BN, row0, args.seqlen_k, shift, args.window_left,
                            args.window_right, lane);
            sm90_softmax<BN, tile::ROWSUM_MMA>(s, m, l, alpha, first, args.scale_log2);
            sm90_convert_p<BN, kFp16>(s, p);
          }
        }
        uint32_t v_stage = stage, v_phase = phase;
        if (++stage == STAGES) {
          stage = 0;
          phase ^= 1;
        }
        if constexpr (tile::RING_SHFL_LATE) sm90_uniform_ring(stage, phase, v_stage, v_phase);
        /* blocks c_hi - 2 .. c_lo, last to first, in three runs: those the right edge (end of
         * the keys, right window) cuts, the unmasked middle, those the left window cuts */
        int n_right, n_left;
        sm90_unmasked_blocks<RM, BN>(sub, args.seqlen_q, args.seqlen_k, args.window_left,
                                     args.window_right, &n_left, &n_right);
        int n = c_hi - 2;
        for (; n >= c_lo && n >= n_right; --n)
          sm90_consumer_step<CFG, kFp16, kPingpong, true, false>(
              sa, args, s, p, o, m, l, n, n == c_lo, stage, phase, v_stage,
              v_phase SM90_TRACE_ARGS);
#if SM90_EXACT_MAX_EARLY
        /* the unmasked blocks that take the exact softmax in any case: the row max under the P V
         * product */
        for (; n >= c_lo && n >= n_left && n > sa.lazy_from; --n)
          sm90_consumer_step<CFG, kFp16, kPingpong, false, true>(
              sa, args, s, p, o, m, l, n, n == c_lo, stage, phase, v_stage,
              v_phase SM90_TRACE_ARGS);
#endif
        for (; n >= c_lo && n >= n_left; --n)
          sm90_consumer_step<CFG, kFp16, kPingpong, false, false>(
              sa, args, s, p, o, m, l, n, n == c_lo, stage, phase, v_stage,
              v_phase SM90_TRACE_ARGS);
        for (; n >= c_lo; --n)
          sm90_consumer_step<CFG, kFp16, kPingpong, true, false>(
              sa, args, s, p, o, m, l, n, n == c_lo, stage, phase, v_stage,
              v_phase SM90_TRACE_ARGS);
        /* last P V */
        mbar_wait(bar_v_full + 8 * v_stage, v_phase);
        sm90_fence_regs(o);
        wgmma_fence();
        sm90_gemm_pv<CFG, kFp16>(o, p, sm90_v_desc_add<CFG>(desc_v0, v_stage * L::V_STAGE_BYTES));
        wgmma_commit();
        wgmma_wait<0>();
        sm90_fence_regs(o);
        if (lane == 0) mbar_arrive(bar_v_empty + 8 * v_stage);
        /* the tile's blocks below this consumer's range (a left window): released */
        if constexpr (kRange)
          for (int n = c_lo - 1; n >= n_lo; --n)
            sm90_release_block<STAGES, kPingpong>(sa, stage, phase);
        SM90_TRACE_EVENT(ct == 0, SM90_EV_LOOP, 0);
      }
    }

    sm90_epilogue<CFG, kFp16>(o, m, l, tc, args, &tm_o, sO + cw * L::OW_BYTES, cw, warp, lane);
    SM90_TRACE_EVENT(ct == 0, SM90_EV_EPI, 0);
  }
  if (lane == 0) tma_store_wait_all<0>();
}

#endif /* CUDADENT_SM90_FWD_KERNEL_CUH */
