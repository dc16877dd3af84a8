/*
 * bwd_parts.cuh - the parts of the Hopper backward's main kernel (bwd_kernel.cuh) that its body
 * calls, and that the wide kernel (bwd_wide_kernel.cuh) shares: the shared-memory layout of the
 * narrow rows, the kernel arguments, the kernels' set-up (cd_sm90_bwd_setup) and query blocks
 * (cd_sm90_bwd_q_blocks), the product operands, the deterministic mode's turn rules, semaphores
 * and turn wait (cd_sm90_bwd_wait_turn), the launch order (which key block, KV head and batch a
 * CTA takes) and the dQ reduce-add of either mode. Moved out of bwd_kernel.cuh (and, for the
 * set-up, query blocks and turn wait, out of both kernels) with the kernels' machine code
 * unchanged (docs/kernels/sm90_bwd_varlen.md); the design is in bwd_kernel.cuh's
 * opening comment and docs/kernels/sm90_bwd.md sections 2 and 3. cd_sm90_bwd_smem and
 * cd_sm90_bwd_reduce_dq take the tile's BLOCK_M (default the row's; 80: the d128 row's dense 80-row
 * tile of config.cuh SM90_BWD_D128_BM80).
 */
#ifndef CUDADENT_SM90_BWD_PARTS_CUH
#define CUDADENT_SM90_BWD_PARTS_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels/common/mask_rule.cuh"
#include "kernels/sm90/config.cuh"
#include "kernels/sm90/bwd_dq_layout.cuh"
#include "kernels/sm90/bwd_schedule.cuh"
#include "kernels/sm90/bwd_tiles.cuh"
#include "kernels/sm90/gemm.cuh"
#include "kernels/sm90/named_barriers.cuh"
#include "kernels/sm90/ptx_sm90.cuh"

/* BM_: the tile's BLOCK_M, the row's (bwd_tiles.cuh) unless 80, the d128 row's 80-row tile of
 * config.cuh SM90_BWD_D128_BM80 (SWAP: dQ computed transposed, dS stored as dS). DQB: the dQ
 * staging's buffers (cd_sm90_bwd_dq_bufs: 2 only for the deterministic dQ warp, where they
 * fit). */
template <int D, int BM_ = cd_sm90_bwd_tile<D>::BLOCK_M, int DQB = 1> struct cd_sm90_bwd_smem {
  typedef cd_sm90_bwd_tile<D> tile;
  static constexpr int BM = BM_, BN = tile::BLOCK_N, ST = tile::STAGES;
  static constexpr bool SWAP = BM == 80;
  /* The non-deterministic dQ reduce leaves the SM by two paths (cd_sm90_bwd_reduce_dq): consumer
   * 0's part by 16-byte red.global from registers, consumer 1's staged and bulk-reduced. Measured
   * against both parts bulk-reduced (session 25, H200, CLI --bwd, bf16): d128 causal b4 4k +3.3%,
   * d64 b8 2k +3.6%. The 80-row tile with config.cuh SM90_BWD_BM80_DQ_SPLIT (the library's since
   * session 31: +3-4% at 4k-16k; session 25's first attempt made ptxas serialize its wgmmas,
   * C7512, and spill). Consumer 0's staging is then unused; the deterministic dQ warp stages all
   * 8 parts. */
  static constexpr bool DQ_SPLIT = !SWAP || SM90_BWD_BM80_DQ_SPLIT;
  static constexpr int KV_BYTES = BN * D * 2;    /* K or V */
  static constexpr int QT_BYTES = BM * D * 2;    /* one stage of Q or dO */
  static constexpr int ROW_BYTES = BM * 4;       /* one stage of LSE2 or delta */
  static constexpr int DS_BYTES = BN * BM * 2;   /* one dS^T (SWAP: dS) buffer */
  static constexpr int DQ_FLOATS = BM * D / 8;   /* a warp's share of the dQ part: 16 x DQ_N (SWAP 16 x 80) */
  static constexpr int DQ_WARP_BYTES = DQ_FLOATS * 4;
  static constexpr int K_OFF = 0;
  static constexpr int V_OFF = K_OFF + KV_BYTES;
  static constexpr int Q_OFF = V_OFF + KV_BYTES;
  static constexpr int DO_OFF = Q_OFF + ST * QT_BYTES;
  /* SWAP: LSE2 / delta after the dQ staging (16-byte alignment suffices; before dS the 1024-byte
   * alignment of DS_OFF would cost 768 B, 40 B over the limit) */
  static constexpr int LSE_OFF_ = DO_OFF + ST * QT_BYTES;
  static constexpr int DELTA_OFF_ = LSE_OFF_ + ST * ROW_BYTES;
  static constexpr int DS_OFF = SWAP ? DO_OFF + ST * QT_BYTES : (DELTA_OFF_ + ST * ROW_BYTES + 1023) / 1024 * 1024;
  static constexpr int DQ_OFF = DS_OFF + 2 * DS_BYTES;
  static constexpr int DQ_BUF_BYTES = 8 * DQ_WARP_BYTES; /* one block's 8 warp parts, contiguous */
  static constexpr int LSE_OFF = SWAP ? DQ_OFF + DQB * DQ_BUF_BYTES : LSE_OFF_;
  static constexpr int DELTA_OFF = LSE_OFF + ST * ROW_BYTES;
  static constexpr int BAR_OFF = SWAP ? DELTA_OFF + ST * ROW_BYTES : DQ_OFF + DQB * DQ_BUF_BYTES;
  static constexpr int NUM_BARS = 1 + 2 * ST;
  /* SM90_BWD_TRACE (a dev build, bwd_trace.cuh): the consumers' stamps of three blocks, [3][2][16] u32 */
  static constexpr int TRACE_OFF = BAR_OFF + 8 * NUM_BARS, TRACE_BYTES = SM90_BWD_TRACE ? 384 : 0;
  static constexpr int BYTES = BAR_OFF + 8 * NUM_BARS + TRACE_BYTES + 1024; /* + slack to align the base */
  static_assert(BM * D == 8192 || (SWAP && D == 128) || (D == 96 && BM == 64),
                "each consumer's dQ part is 64 x DQ_N (SWAP: 64 D columns x 80 rows)");
  static_assert(DS_OFF % 1024 == 0 && QT_BYTES % 1024 == 0, "swizzled slabs 1024-byte aligned");
  static_assert(BYTES <= 227 * 1024, "shared memory over the sm_90 limit");
  static_assert(DQB == 1 || (DQB == 2 && !SWAP), "two dQ staging buffers: the deterministic rows only");
};

struct cd_sm90_bwd_args {
  const float *lse2;  /* [batch][heads_q][sq_pad]: LSE * log2(e); +inf for rows that add nothing */
  const float *delta; /* [batch][heads_q][sq_pad]; in the deterministic mode followed (256-byte
                       * aligned) by the int32 semaphores [batch][heads_q][m_blocks]
                       * (cd_sm90_bwd_sems), zeroed by cd_sm90_bwd_pre */
  float *dq_acc;      /* [batch][heads_q][m_blocks][BLOCK_M * D], fragment order (cd_sm90_bwd_post) */
  void *dk, *dv;
  int64_t dk_sb, dk_ss, dk_sh, dv_sb, dv_ss, dv_sh; /* elements */
  float scale, scale_log2;
  int seqlen_q, seqlen_k, heads_q, group, m_blocks, sq_pad;
  int window_left, window_right; /* -1: unbounded; causal is window_right = 0 */
};

/* The main kernels' set-up, narrow and wide alike: thread 0 prefetches the four tensor maps and
 * initializes the K / V barrier (one arrival: the producer's) and each of the ST stages' Q-full
 * (one) and Q-empty (CONSUMER_WARPS: one arrival per consumer warp, 8 for two consumer warpgroups)
 * barriers; then the whole CTA meets. Returns the thread's warpgroup (warp-uniform: 0 the producer,
 * 1 and up the consumers). */
template <int ST, int CONSUMER_WARPS = 8>
__device__ __forceinline__ int cd_sm90_bwd_setup(const CUtensorMap &tm_q, const CUtensorMap &tm_k,
                                                 const CUtensorMap &tm_v, const CUtensorMap &tm_do,
                                                 uint32_t bar_kv, uint32_t bar_q_full,
                                                 uint32_t bar_q_empty) {
  const int wg = __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
  if (threadIdx.x == 0) {
    cd_tma_prefetch_desc(&tm_q);
    cd_tma_prefetch_desc(&tm_k);
    cd_tma_prefetch_desc(&tm_v);
    cd_tma_prefetch_desc(&tm_do);
    cd_mbar_init(bar_kv, 1);
    for (int s = 0; s < ST; ++s) {
      cd_mbar_init(bar_q_full + 8 * s, 1);
      cd_mbar_init(bar_q_empty + 8 * s, CONSUMER_WARPS); /* one arrival per consumer warp */
    }
    cd_mbar_fence_init();
  }
  __syncthreads();
  return wg;
}

/* The wide kernels' producer (bwd_wide_kernel.cuh, the E3 and E5 kernels): K and V of the CTA's
 * keys [key_row, + the box's rows), once, as SQK / SV 64-column slabs slab_bytes apart from k_smem /
 * v_smem, on the K / V barrier, which expects bytes. */
template <int SQK, int SV>
__device__ __forceinline__ void cd_sm90_bwd_wide_load_kv(uint32_t k_smem, uint32_t v_smem, uint32_t slab_bytes,
                                                         const CUtensorMap *tm_k, const CUtensorMap *tm_v,
                                                         uint32_t bar_kv, uint32_t bytes, int key_row, int hk,
                                                         int b) {
  cd_mbar_arrive_expect_tx(bar_kv, bytes);
#pragma unroll
  for (int c = 0; c < SQK; ++c) cd_tma_load_4d(k_smem + c * slab_bytes, tm_k, bar_kv, 64 * c, key_row, hk, b);
#pragma unroll
  for (int c = 0; c < SV; ++c) cd_tma_load_4d(v_smem + c * slab_bytes, tm_v, bar_kv, 64 * c, key_row, hk, b);
}

/* The query blocks [*m_lo, *m_hi) whose rows see some key of key block n_block (cd_mask_q_blocks
 * with args' lengths and window): the blocks a CTA walks. */
template <int BM, int BN>
__device__ __forceinline__ void cd_sm90_bwd_q_blocks(const cd_sm90_bwd_args &args, int n_block,
                                                     int *m_lo, int *m_hi) {
  const int k0 = n_block * BN, k1 = min(k0 + BN, args.seqlen_k) - 1;
  cd_mask_q_blocks(k0, k1, args.seqlen_q, args.seqlen_k, args.window_left, args.window_right, BM,
                   m_lo, m_hi);
}

/* The products' operands (gemm.cuh layouts) of the narrow row D at tile (BM, BN), as loaded by
 * TMA boxes of K_COLS (K) and QV_COLS (Q, dO, V) columns whose rows are one swizzle span each
 * (bwd_launch.cuh: the host's tensor maps). A of S^T / dP^T: this consumer's 64 keys of K or V,
 * K-major in column blocks of BN rows (KA, VA); B: Q or dO of the stage, K-major in blocks of BM
 * rows (QB). B of dV / dK: dO or Q read the other way (QMn: MN-major, LBO = the distance between
 * blocks). dQ: dS^T read as dS (MN-major A, bwd_kernel.cuh) and K (KMn: MN-major B; consumer w's
 * columns [DQ_N w, +DQ_N) where BM is 64).
 * d64, d128: every operand in 128-byte-swizzle slabs of 64 columns. */
template <int D, int BM, int BN> struct cd_sm90_bwd_ops {
  static constexpr int K_COLS = 64, QV_COLS = 64;
  typedef cd_sm90_k_major<BN> KA, VA;
  typedef cd_sm90_k_major<BM> QB;
  typedef cd_sm90_mn_major QMn, KMn;
  static __device__ __forceinline__ uint64_t desc_k_a(uint32_t sK, int cw) {
    return cd_gmma_desc_sw128(sK + cw * 64 * 128, 1, 1024);
  }
  static __device__ __forceinline__ uint64_t desc_v_a(uint32_t sV, int cw) { return desc_k_a(sV, cw); }
  static __device__ __forceinline__ uint64_t desc_q_b(uint32_t sQ) { return cd_gmma_desc_sw128(sQ, 1, 1024); }
  static __device__ __forceinline__ uint64_t desc_q_mn(uint32_t sQ) { return cd_gmma_desc_sw128(sQ, BM * 128, 1024); }
  static __device__ __forceinline__ uint64_t desc_k_mn(uint32_t sK, int cw) {
    return cd_gmma_desc_sw128(sK + (BM != 128 ? cw * BN * 128 : 0), BN * 128, 1024);
  }
};
#if SM90_BWD_D96
/* d96 (config.cuh SM90_BWD_D96; FA3's layouts for it): Q, dO and V in 64-byte-swizzle blocks of
 * 32 columns (3 a row), K in 32-byte-swizzle blocks of 16 (6 a row): a consumer's dQ columns
 * [48 w, +48) are then 3 whole blocks of K read MN-major, where in 32-column blocks consumer 1's
 * would start mid-block (no descriptor reads N from the middle of a swizzle row). */
template <int BM, int BN> struct cd_sm90_bwd_ops<96, BM, BN> {
  static constexpr int K_COLS = 16, QV_COLS = 32;
  typedef cd_sm90_k_major_sw32<BN * K_COLS * 2> KA;
  typedef cd_sm90_k_major_sw64<BN * QV_COLS * 2> VA;
  typedef cd_sm90_k_major_sw64<BM * QV_COLS * 2> QB;
  typedef cd_sm90_mn_major_sw64<BM * QV_COLS * 2> QMn;
  typedef cd_sm90_mn_major_sw32<BN * K_COLS * 2> KMn;
  static constexpr int DQ_BLOCKS = cd_sm90_bwd_tile<96>::DQ_N / K_COLS; /* K's blocks a dQ part */
  static_assert(BM == 64, "d96: dQ parts split by columns");
  static __device__ __forceinline__ uint64_t desc_k_a(uint32_t sK, int cw) { return KA::desc(sK + cw * 64 * K_COLS * 2); }
  static __device__ __forceinline__ uint64_t desc_v_a(uint32_t sV, int cw) { return VA::desc(sV + cw * 64 * QV_COLS * 2); }
  static __device__ __forceinline__ uint64_t desc_q_b(uint32_t sQ) { return QB::desc(sQ); }
  static __device__ __forceinline__ uint64_t desc_q_mn(uint32_t sQ) { return QMn::desc(sQ); }
  static __device__ __forceinline__ uint64_t desc_k_mn(uint32_t sK, int cw) {
    return KMn::desc(sK + cw * DQ_BLOCKS * BN * K_COLS * 2);
  }
};
#endif

/* Deterministic mode: the key blocks that add to query block m's dQ do it one after the other,
 * lowest first; a key block's turn is its distance from the first key block any row of the block
 * sees (cd_mask_first_key_block). */
__device__ __forceinline__ int cd_sm90_bwd_first_key_block(int m, int bm, int bn, const cd_sm90_bwd_args &a) {
  return cd_mask_first_key_block(m, bm, bn, a.seqlen_q, a.seqlen_k, a.window_left);
}

/* Whether a deterministic call takes its dQ turns (and launches its key blocks) in descending
 * key-block order (config.cuh SM90_BWD_DET_DESCENDING): masks with a right bound. */
__device__ __forceinline__ bool cd_sm90_bwd_det_descending(const cd_sm90_bwd_args &a) {
  return SM90_BWD_DET_DESCENDING && a.window_right >= 0;
}

/* Deterministic calls without a mask whose chain of key blocks fits in the GPU at once (the host
 * decides: bwd.cu cd_sm90_bwd_det_rotates): key block n walks its query blocks from block n on,
 * wrapping (m = (n + j) mod nm at step j), and each query block's dQ turns go in the order in which
 * the key blocks reach it. In lockstep no key block then waits: at every step the nb key blocks of
 * a chain are at nb different query blocks, each the next in its turn order. Ascending turns
 * instead make key block n wait n turns at query block 0 and the chain take nm + nb steps. A
 * block may wait for one launched after it, so every CTA of the chain must be resident at once:
 * the host allows rotation only where the chain's CTAs fit in half the GPU's SMs. The mode is a
 * template value (kDet), not an argument: a larger argument struct made the d64 kernels spill. */
enum { CD_SM90_BWD_NONDET = 0, CD_SM90_BWD_DET = 1, CD_SM90_BWD_DET_ROTATED = 2 };

/* The dQ staging buffers of mode kDet (cd_sm90_bwd_smem's DQB): for the deterministic modes' dQ
 * warp two where a second buffer fits the 227 KiB (d128, BLOCK_M 64: 225.9 KiB; d96), else one
 * (d64, BLOCK_M 128: 40 B over); otherwise one. */
template <int D, int BM, int kDet> __host__ __device__ constexpr int cd_sm90_bwd_dq_bufs() {
  return kDet == CD_SM90_BWD_NONDET ? 1
         : cd_sm90_bwd_smem<D, BM>::BYTES + cd_sm90_bwd_smem<D, BM>::DQ_BUF_BYTES <= 227 * 1024 ? 2
                                                                                            : 1;
}
template <int kDet>
__device__ __forceinline__ int cd_sm90_bwd_walk_m(int j, int m_lo, int m_hi, int n_block) {
  return kDet == CD_SM90_BWD_DET_ROTATED ? cd_sm90_bwd_rotated_m(j, m_lo, m_hi, n_block) : j;
}

/* The (key block, KV head, batch) of this CTA. The hardware starts CTAs in linear block order
 * (x fastest), so the mapping is the launch order:
 *   - non-deterministic with a right mask bound (causal included; SM90_BWD_LPT_GROUP = G > 0):
 *     G chains at a time, key blocks ascending across them (n-major): the heaviest CTAs (low key
 *     blocks) of every chain start first instead of the last chain's starting last, while the
 *     CTAs in flight still share ~G chains' Q / dO in L2;
 *   - otherwise chain by chain ((KV head, batch) = blockIdx.y, z), key blocks ascending within a
 *     chain;
 *   - deterministic with descending turns (cd_sm90_bwd_det_descending): key blocks descending. */
template <int kDet>
__device__ __forceinline__ void cd_sm90_bwd_work_of_block(const cd_sm90_bwd_args &args, int &n_block,
                                                          int &hk, int &b) {
  if (!kDet && SM90_BWD_LPT_GROUP > 0) {
    /* a group of one chain is the chain-by-chain order, so other masks take the same code with
     * group 1 (a select, one path) */
    /* the rule of bwd_schedule.cuh cd_sm90_bwd_order_group, written out: calling it here changed
     * 22 library kernels' SASS (session 31), so the library keeps this form */
    const int group = args.window_right >= 0 ? SM90_BWD_LPT_GROUP : 1;
    const int64_t linear = blockIdx.x + (int64_t)gridDim.x * (blockIdx.y + (int64_t)gridDim.y * blockIdx.z);
    cd_sm90_bwd_grouped_work(linear, (int)gridDim.x, (int)gridDim.y, (int64_t)gridDim.y * gridDim.z,
                             group, &n_block, &hk, &b);
    return;
  }
  n_block = kDet && cd_sm90_bwd_det_descending(args) ? (int)gridDim.x - 1 - (int)blockIdx.x
                                                     : (int)blockIdx.x;
  hk = blockIdx.y;
  b = blockIdx.z;
}

/* The deterministic mode's semaphores, after delta in the workspace (bwd.cu); batch is gridDim.z.
 * Derived here rather than passed: a larger argument struct changed the whole kernel's code. */
__device__ __forceinline__ int *cd_sm90_bwd_sems(const cd_sm90_bwd_args &a) {
  const uint64_t bytes = (uint64_t)gridDim.z * a.heads_q * a.sq_pad * sizeof(float);
  return (int *)((const char *)a.delta + (bytes + 255) / 256 * 256);
}

/* config.cuh SM90_BWD_PERSISTENT 2 (a dev build's): the dynamic scheduler's unit counter, one int
 * right after delta (256-byte aligned; rows = batch * heads_q * sq_pad), where the deterministic
 * mode's semaphores start (cd_sm90_bwd_sems): the persistent kernel takes non-deterministic calls
 * only, so no call has both. Zeroed by the dense pre kernel (bwd_prepost.cuh) of non-deterministic
 * calls; bwd.cu's workspace size counts it at knob 2 only. */
__host__ __device__ __forceinline__ int *cd_sm90_bwd_unit_counter(const float *delta, int batch, int heads_q,
                                                                  int sq_pad) {
  const uint64_t bytes = (uint64_t)batch * heads_q * sq_pad * sizeof(float);
  return (int *)((const char *)delta + (bytes + 255) / 256 * 256);
}

/* The deterministic mode's wait, by one thread: key block n_block's turn at query block m (the
 * turn orders of docs/kernels/sm90_bwd.md section 3: rotated, descending or ascending), then a spin
 * on the block's semaphore sem until it counts that many earlier key blocks. */
template <int kDet, int BM, int BN>
__device__ __forceinline__ void cd_sm90_bwd_wait_turn(const cd_sm90_bwd_args &args, int *sem, int m,
                                                      int n_block) {
  const int turn = kDet == CD_SM90_BWD_DET_ROTATED ? cd_sm90_bwd_rotated_turn(n_block, m, (int)gridDim.x)
                   : cd_sm90_bwd_det_descending(args)
                       ? cd_mask_last_key_block(m, BM, BN, args.seqlen_q, args.seqlen_k,
                                                args.window_right, (int)gridDim.x) - n_block
                       : n_block - cd_sm90_bwd_first_key_block(m, BM, BN, args);
  int done;
  do {
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(done) : "l"(sem) : "memory");
  } while (done < turn);
}

/* 9.7.13.4 fence.proxy.async (global): orders this thread's generic-proxy global accesses and its
 * async-proxy ones (the bulk reduce) across the semaphore hand-over. */
__device__ __forceinline__ void cd_sm90_bwd_fence_proxy_global(void) {
  asm volatile("fence.proxy.async.global;\n" ::: "memory");
}

/* This warp's 16 x 64 floats of a dQ part (d96: 16 x 48; BM 80: 16 x 80 of dQ^T), staged in
 * fragment order (float4 i * 32 + lane holds registers 4i .. 4i + 3) and added to the workspace by
 * one bulk reduce of 4 KiB (d96: 3 KiB; BM 80: 5 KiB), in any order
 * (the non-deterministic mode; the deterministic one's dQ warp orders them). */
template <int D, int BM = cd_sm90_bwd_tile<D>::BLOCK_M, int NQ>
__device__ __forceinline__ void cd_sm90_bwd_reduce_dq(const float (&dq)[NQ], const cd_sm90_bwd_args &args,
                                                      uint32_t sDQ, int b, int h, int m, int cw,
                                                      int warp, int lane) {
  typedef cd_sm90_bwd_smem<D, BM> L;
  static_assert(NQ * 32 == L::DQ_FLOATS, "a warp's staging holds its lanes' dQ registers");
  if constexpr (L::DQ_SPLIT || SM90_BWD_SKIP_DQ == 3) {
    /* consumer 0's part added from registers (16-byte red.global in the bulk reduce's layout: the
     * second path out of the SM, L::DQ_SPLIT), or not at all (the dev measurement SKIP_DQ 3);
     * consumer 1's staged and bulk-reduced as below */
    if (cw == 0) {
      if constexpr (SM90_BWD_SKIP_DQ != 3) {
        const int64_t tile = ((int64_t)b * args.heads_q + h) * args.m_blocks + m;
        float *const tile_dq = args.dq_acc + tile * (BM * D);
        /* the lane's first float; the 80-row tile's as an unsigned 32-bit offset (bwd_dq_layout.cuh:
         * its int form spilled there), the other tiles' as measured */
        static_assert(!L::SWAP || L::DQ_FLOATS == CD_SM90_BWD_DQ80_PART_FLOATS, "the 80-row parts");
        float *const dst = L::SWAP ? tile_dq + cd_sm90_bwd_dq80_lane_off(warp, lane)
                                   : tile_dq + warp * L::DQ_FLOATS + lane * 4;
#pragma unroll
        for (int i = 0; i < NQ / 4; ++i)
          asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst + i * 128), "f"(dq[4 * i]),
                       "f"(dq[4 * i + 1]), "f"(dq[4 * i + 2]), "f"(dq[4 * i + 3])
                       : "memory");
      }
      return;
    }
  }
  const uint32_t stage_dq = sDQ + (cw * 4 + warp) * L::DQ_WARP_BYTES;
  if (lane == 0) cd_tma_store_wait_read<0>(); /* the previous reduce has read the staging */
  __syncwarp();
#pragma unroll
  for (int i = 0; i < NQ / 4; ++i)
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(stage_dq + (i * 32 + lane) * 16),
                 "f"(dq[4 * i]), "f"(dq[4 * i + 1]), "f"(dq[4 * i + 2]), "f"(dq[4 * i + 3])
                 : "memory");
  cd_fence_proxy_async_smem(); /* st.shared (generic) -> the bulk reduce (async proxy) */
  __syncwarp();
  if (lane == 0) {
    const int64_t tile = ((int64_t)b * args.heads_q + h) * args.m_blocks + m;
    float *dst = args.dq_acc + tile * (BM * D) + (cw * 4 + warp) * L::DQ_FLOATS;
    if constexpr (SM90_BWD_SKIP_DQ == 2)
      cd_bulk_store(dst, stage_dq, L::DQ_WARP_BYTES); /* dev measurement (config.cuh) */
    else
      cd_bulk_reduce_add_f32(dst, stage_dq, L::DQ_WARP_BYTES);
    cd_tma_store_commit();
  }
}

/* The deterministic mode (kDet: a turn order, docs/kernels/sm90_bwd.md section 3): the query
 * block's semaphore counts the key blocks whose reduces have completed, and a key block adds its
 * part only on its turn. The turn is the dQ warp's, not the consumers' (FA3's dQ warp; the
 * consumers' own turn, one count and one wait a block, measured 0.61-0.73x of the
 * non-deterministic kernel at d64 and 0.68x at d128 on an H200, was deleted in session 23).
 * Staging buffer i of DQB (32 KiB, d96 24: the 8 consumer warps' 16 x DQ_N parts in the order of
 * cd_sm90_bwd_reduce_dq, which is the order of the query block's accumulator tile, so one block's
 * parts are contiguous at both ends) is
 * handed over by two named barriers of 288 threads: FULL + i (the 8 consumer warps arrive once
 * they staged, the dQ warp waits) and EMPTY + i (the dQ warp arrives once its reduces have read
 * the buffer, the consumer warps wait before staging into it). Block it uses buffer it % DQB.
 *
 * A consumer warp's part of block it: wait until the buffer is free (the dQ warp's arrival after
 * block it - DQB, or its initial one), stage, fence, arrive. No turn, no bulk operation. */
template <int D, int DQB, int NQ>
__device__ __forceinline__ void cd_sm90_bwd_stage_dq_det(const float (&dq)[NQ], uint32_t sDQ, uint32_t it,
                                                         int cw, int warp, int lane) {
  typedef cd_sm90_bwd_smem<D, cd_sm90_bwd_tile<D>::BLOCK_M, DQB> L;
  const int i = DQB == 1 ? 0 : (int)(it % DQB);
  const uint32_t stage_dq = sDQ + i * L::DQ_BUF_BYTES + (cw * 4 + warp) * L::DQ_WARP_BYTES;
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_DQ_EMPTY + i, 288); /* the dQ warp has read it */
  static_assert(NQ * 32 == L::DQ_FLOATS, "a warp's staging holds its lanes' dQ registers");
#pragma unroll
  for (int k = 0; k < NQ / 4; ++k)
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(stage_dq + (k * 32 + lane) * 16),
                 "f"(dq[4 * k]), "f"(dq[4 * k + 1]), "f"(dq[4 * k + 2]), "f"(dq[4 * k + 3])
                 : "memory");
  cd_fence_proxy_async_smem(); /* st.shared (generic) -> the dQ warp's bulk reduce (async proxy) */
  cd_named_bar_arrive_any_pc(CD_SM90_BAR_BWD_DQ_FULL + i, 288);
}

/* The dQ warp's walk in one turn order, kOrder (0 ascending, 1 descending, 2 rotated: the turns of
 * cd_sm90_bwd_wait_turn), a compile-time value: with the order chosen once per CTA instead of per
 * block, the loop keeps only its own order's invariants within the producer's 24 registers (the
 * run-time choice of cd_sm90_bwd_wait_turn spilled 24-28 B). */
template <int D, int kDet, int DQB, int kOrder>
__device__ __forceinline__ void cd_sm90_bwd_dq_walk(const cd_sm90_bwd_args &args, uint32_t sDQ, int b, int h_lo,
                                                    int h_hi, int m_lo, int m_hi, int n_block) {
  constexpr int BM = cd_sm90_bwd_tile<D>::BLOCK_M, BN = cd_sm90_bwd_tile<D>::BLOCK_N;
  typedef cd_sm90_bwd_smem<D, BM, DQB> L;
  constexpr uint32_t HALF = L::DQ_BUF_BYTES / 2; /* a consumer warpgroup's 4 parts */
  const bool leader = threadIdx.x % 32 == 0;
  int *const sems = cd_sm90_bwd_sems(args);
  uint32_t it = 0, blocks = (uint32_t)((h_hi - h_lo) * (m_hi - m_lo));
  /* tile indices in 32 bits (the accumulator holds 32 KiB a tile: 2^31 tiles would be 64 TiB), so
   * that the walk keeps no 64-bit index (with one it spilled 4-8 B) */
  for (int h = h_lo; h < h_hi; ++h)
    for (int j = m_lo; j < m_hi; ++j, ++it) {
      const int m = cd_sm90_bwd_walk_m<kDet>(j, m_lo, m_hi, n_block);
      const int i = DQB == 1 ? 0 : (int)(it % DQB);
      const int tile = (b * args.heads_q + h) * args.m_blocks + m;
      __syncwarp();
      cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_DQ_FULL + i, 288); /* the 8 parts are staged */
      if (leader) {
        const int turn = kOrder == 2   ? cd_sm90_bwd_rotated_turn(n_block, m, (int)gridDim.x)
                         : kOrder == 1 ? cd_mask_last_key_block(m, BM, BN, args.seqlen_q, args.seqlen_k,
                                                                args.window_right, (int)gridDim.x) - n_block
                                       : n_block - cd_sm90_bwd_first_key_block(m, BM, BN, args);
        int done;
        do {
          asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(done) : "l"(sems + tile) : "memory");
        } while (done < turn);
        cd_sm90_bwd_fence_proxy_global(); /* the earlier blocks' sums, seen by the async proxy */
        float *const dst = args.dq_acc + (int64_t)tile * (BM * D);
        const uint32_t src = sDQ + i * L::DQ_BUF_BYTES;
        cd_bulk_reduce_add_f32(dst, src, HALF);
        cd_bulk_reduce_add_f32(dst + HALF / 4, src + HALF, HALF);
        cd_tma_store_commit();
        cd_tma_store_wait_read<0>(); /* the buffer has been read */
      }
      __syncwarp();
      if (it + DQB < blocks) cd_named_bar_arrive_any_pc(CD_SM90_BAR_BWD_DQ_EMPTY + i, 288);
      if (leader) {
        cd_tma_store_wait_all<0>(); /* the sums are in the accumulator */
        cd_sm90_bwd_fence_proxy_global();
        asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(sems + tile) : "memory");
      }
    }
  __syncwarp();
}

/* The dQ warp (warp 1 of the producer warpgroup, at its PRODUCER_REGS): the CTA's walk (the same h /
 * j loop and cd_sm90_bwd_walk_m order as the consumers', cd_sm90_bwd_dq_walk), and per block: wait
 * for the staged parts (FULL), then lane 0 waits for the key block's turn on the query block's
 * semaphore (the turn orders of section 3: the semaphore counts key blocks), issues the block's
 * reduce as two bulk reduce-adds of 16 KiB (d96: 12; one a consumer warpgroup), waits until they have read
 * the buffer and frees it (EMPTY), then waits until they have completed and counts the key block
 * (+1, release; a fence.proxy.async.global after the turn's acquire and before the count): a
 * count is released only after its reduces completed, and before the dQ warp waits for its next
 * block. The
 * CTA stays resident until this warp has counted its last block (it returns only then), and no
 * other code writes the staging buffers (the epilogue stages dK / dV in the Q / dO stages).
 * Deadlock-free (section 3): the dQ warp of key block n waits for the counts of key blocks before
 * it in the turn order, launched before it (descending, ascending) or resident with it (rotated:
 * the host's check); the consumers of block n wait only for their own dQ warp's progress on
 * earlier blocks of their own walk, never for another CTA. The arrivals are balanced: EMPTY gets
 * one for each block that stages (the first DQB initial, the others after block it - DQB), FULL
 * one a block. */
template <int D, int kDet, int DQB>
__device__ __forceinline__ void cd_sm90_bwd_dq_warp(const cd_sm90_bwd_args &args, uint32_t sDQ, int b, int h_lo,
                                                    int h_hi, int m_lo, int m_hi, int n_block) {
  const uint32_t blocks = (uint32_t)((h_hi - h_lo) * (m_hi - m_lo));
#if SM90_BWD_PDL
  cd_griddep_wait(); /* the semaphores and the accumulator are the pre kernel's (zeroed) */
#endif
#pragma unroll
  for (int i = 0; i < DQB; ++i)
    if ((uint32_t)i < blocks) cd_named_bar_arrive_any_pc(CD_SM90_BAR_BWD_DQ_EMPTY + i, 288); /* free */
  if constexpr (kDet == CD_SM90_BWD_DET_ROTATED)
    cd_sm90_bwd_dq_walk<D, kDet, DQB, 2>(args, sDQ, b, h_lo, h_hi, m_lo, m_hi, n_block);
  else if (cd_sm90_bwd_det_descending(args))
    cd_sm90_bwd_dq_walk<D, kDet, DQB, 1>(args, sDQ, b, h_lo, h_hi, m_lo, m_hi, n_block);
  else
    cd_sm90_bwd_dq_walk<D, kDet, DQB, 0>(args, sDQ, b, h_lo, h_hi, m_lo, m_hi, n_block);
}

/* Softcap's P^T and dS^T (docs/kernels/sm90_bwd_softcap.md), after the dP^T wait, for a consumer's
 * NJ column groups of 8 (the narrow rows: BLOCK_M / 8; the wide rows: 4): st holds t = tanh(s
 * softcap_pre) (-inf where masked), dpt dP^T; P^T = exp2(t softcap log2(e) - LSE2) (scale_log2 is
 * softcap log2(e) in a softcap launch) and dS^T = P^T (dP^T - delta) max(1 - t^2, 0), packed in
 * pairs into p16 / ds16 (a masked t gives P = 0 and a factor 0). lse_s / delta_s: the block's
 * LSE2 / delta rows, from the consumer's first column. */
template <bool kFp16, int NJ>
__device__ __forceinline__ void cd_sm90_bwd_softcap_p_ds(const float (&st)[4 * NJ], const float (&dpt)[4 * NJ],
                                                         const float *lse_s, const float *delta_s,
                                                         float scale_log2, int lane, uint32_t (&p16)[2 * NJ],
                                                         uint32_t (&ds16)[2 * NJ]) {
#pragma unroll
  for (int j = 0; j < NJ; ++j) {
    const int col = 8 * j + 2 * (lane & 3);
    const float2 l2 = *reinterpret_cast<const float2 *>(lse_s + col);
    const float2 dl = *reinterpret_cast<const float2 *>(delta_s + col);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float t0 = st[4 * j + 2 * r], t1 = st[4 * j + 2 * r + 1];
      const float p0 = cd_exp2(fmaf(t0, scale_log2, -l2.x));
      const float p1 = cd_exp2(fmaf(t1, scale_log2, -l2.y));
      p16[2 * j + r] = cd_pack2<kFp16>(p0, p1);
      ds16[2 * j + r] = cd_pack2<kFp16>(p0 * (dpt[4 * j + 2 * r] - dl.x) * fmaxf(fmaf(-t0, t0, 1.f), 0.f),
                                        p1 * (dpt[4 * j + 2 * r + 1] - dl.y) * fmaxf(fmaf(-t1, t1, 1.f), 0.f));
    }
  }
}

#endif /* CUDADENT_SM90_BWD_PARTS_CUH */
