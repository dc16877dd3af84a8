/*
 * bwd_kernel.cuh - the Hopper (sm_90a) attention backward's main kernel: dK, dV of one key block
 * and the dQ contributions of that key block, given Q, K, V, dO, the forward's LSE (as log2,
 * cd_sm90_bwd_pre) and delta = rowsum(dO * O). FlashAttention-3 style: K/V-stationary, a producer
 * warp feeding TMA loads through a ring, two MMA warpgroups issuing wgmma for all five products.
 *
 * Grid: one CTA per (key block of BLOCK_N = 128 keys, KV head, batch); blockIdx.x is the key
 * block, lowest first (under causal masking the lowest key blocks see the most query blocks: the
 * heaviest CTAs start first). The CTA walks every (query head of its KV group, query block that
 * sees its keys), in that order.
 *
 * Warps. 3 warpgroups of 128 threads.
 *   warpgroup 0, producer: after setmaxnreg.dec to PRODUCER_REGS, one thread TMA-loads K and V of
 *     the key block once, then per iteration a Q and a dO block ([BLOCK_M, D], swizzled column
 *     blocks: shared memory below) and the block's log2-LSE and delta rows (1-d bulk copies) into a
 *     STAGES-deep ring. The other 127 threads exit, except in the deterministic kernels: warp 1 is
 *     the dQ warp (bwd_parts.cuh cd_sm90_bwd_dq_warp), which takes each block's staged dQ parts, waits
 *     for the key block's turn and issues the bulk reduce-adds, so that the consumers only stage.
 *   warpgroups 1, 2, consumers: after setmaxnreg.inc to CONSUMER_REGS, consumer w owns keys
 *     [64 w, 64 w + 64) of the block. Per iteration (the transposed products, FA3's SdP_swapAB,
 *     so that P^T and dS^T are register A operands of the dV and dK products):
 *       S^T  = K_w Q^T        [64, BLOCK_M]   wgmma, both operands K-major in shared memory
 *       dP^T = V_w dO^T       [64, BLOCK_M]   likewise
 *       P^T  = exp2(S^T * scale * log2(e) - LSE2[row])   (masked entries 0; LSE2 = +inf: P = 0)
 *       dS^T = P^T * (dP^T - delta[row])
 *       dV_w += P^T dO        [64, D]         A from registers, dO as an MN-major B
 *       dS^T -> shared memory (stmatrix), both consumers meet at a named barrier, then
 *       dQ_part = dS K        [64, 64]        A = dS (MN-major view of the stored dS^T),
 *                                             B = K (MN-major); consumer w takes query rows
 *                                             [64 w, +64) (BLOCK_M 128) or D columns [64 w, +64)
 *                                             (BLOCK_M 64), the key block's 128 keys as K
 *       dK_w += dS^T Q        [64, D]         A from registers, Q as an MN-major B; issued after
 *                                             dQ (FA3's order), so dQ is staged under it
 *     and the dQ part is added to the fp32 workspace by two paths out of the SM (L::DQ_SPLIT):
 *     consumer 1's warps each stage 16 x 64 floats (4 KiB, in accumulator-fragment order) and
 *     issue their own cp.reduce.async.bulk .add.f32 of those 4 KiB; consumer 0's warps add the
 *     same layout from registers by 16-byte red.global.add.v4.f32 (the 80-row tile too, with
 *     config.cuh SM90_BWD_BM80_DQ_SPLIT, the library's since session 31; at 0 all 8 warps bulk).
 *     cd_sm90_bwd_post turns the sums into dQ.
 *   The epilogue (bwd_epilogue.cuh) scales dK by softmax_scale, stages dK and dV in the (then free) Q / dO stages
 *   and writes them out as 16-byte row chunks (rows past seqlen_k are not written, nor columns
 *   past the call's real head_dim (dK) / head_dim_v (dV)).
 *
 * Widths: D (64, 96, 128; config.cuh SM90_BWD_D96) is the compiled width; a call's real
 * head_dim and head_dim_v are any multiples of 8 up to D (the kernel arguments; bwd.cu). The
 * tensor maps' innermost extents are the real dims, so Q and K load zeros past head_dim and V and
 * dO past head_dim_v: S^T sums over head_dim, dP^T over head_dim_v, and dV, dK and the dQ parts
 * get zero columns there, which the epilogue (dK, dV) and cd_sm90_bwd_post (dQ) do not store. The
 * real dims are separate kernel arguments, not fields of cd_sm90_bwd_args: a larger argument
 * struct changed the whole kernel's code (d64: a 40-byte spill); as arguments they change only the
 * epilogue.
 *
 * Shared memory (16-bit elements; 1024-byte aligned blocks, 128-byte swizzle as TMA writes it):
 *   K, V   [D/64][BLOCK_N][64]                    loaded once
 *   Q, dO  [STAGES][D/64][BLOCK_M][64]            the ring
 *   LSE2, delta [STAGES][BLOCK_M] fp32
 *   dS^T   [2][BLOCK_M/64][BLOCK_N][64]           double-buffered: one named barrier a block
 *   dQ     [2 consumers][4 warps][1024] fp32      each warp's staging for its bulk reduce (the
 *                                                 dQ warp: [DQB] of them, cd_sm90_bwd_dq_bufs;
 *                                                 consumer 0's unused under DQ_SPLIT)
 *   mbarriers: kv_full, q_full[STAGES], q_empty[STAGES]
 * d96 (bwd_parts.cuh cd_sm90_bwd_ops): K [6][BLOCK_N][16] 32-byte swizzle; V, Q, dO in blocks
 * [3][rows][32], 64-byte swizzle; the dQ parts 64 x 48 (16 x 48 floats a warp's staging).
 *
 * Synchronization. q_full completes by TMA transaction bytes; q_empty by one arrival per consumer
 * warp once the dV and dK products that read the stage have completed. The dS buffer of block i
 * is rewritten in block i + 2, after both consumers passed block i + 1's barrier, which each
 * reaches only after its block-i dQ product completed. A warp's dQ staging is rewritten after its
 * previous bulk reduce finished reading it (cp.async.bulk.wait_group.read). With config.cuh's
 * SM90_BWD_PDL (on in the library; launched with programmatic dependent launch after the pre kernel) the
 * set-up and the producer's K / V loads run before griddepcontrol.wait, everything that touches
 * the pre kernel's LSE2, delta, dQ accumulator or semaphores after it (cd_sm90_bwd_body).
 *
 * The 80-row tile (BM_ = 80 of cd_sm90_bwd_body and the dense kernel, d128 only, non-deterministic,
 * dense calls without a mask, never varlen, seqlen_q >= 4k: config.cuh SM90_BWD_D128_BM80, on
 * since session 21, experiment 4 of docs/kernels/sm90_bwd_next.md): S^T, dP^T
 * [64, 80]; dS stored as dS, [2 key slabs][80 rows][64 keys], by transposing stmatrix; consumer w's
 * dQ part is dQ^T_w = K^T dS^T [64 D columns, 80 rows] (A = K slab w MN-major, B = dS K-major),
 * 16 x 80 floats a warp (5 KiB staging); LSE2 / delta after the dQ staging (shared memory
 * 231,720 B); the mask only zeroes keys past seqlen_k.
 *
 * Softcap (kSoftcap of cd_sm90_bwd_body: cd_sm90_bwd_softcap_kernel, dense, and
 * cd_sm90_bwd_varlen_softcap_kernel; docs/kernels/sm90_bwd_softcap.md): S^T becomes
 * t = tanh(S^T softmax_scale / softcap) in place before the mask (masked t = -inf); after the dP^T
 * wait P^T = exp2(t softcap log2(e) - LSE2) and dS^T = P^T (dP^T - delta) (1 - t^2), the portable
 * backward's algebra, element by element.
 *
 * Code: the consumers' work on a unit (descriptors, the block loop above, the dQ reduce, the
 * epilogue) is bwd_unit.cuh's cd_sm90_bwd_consumer_unit, which this body calls once and the
 * persistent kernel of config.cuh SM90_BWD_PERSISTENT (a dev build's, bwd_persist.cuh) once a unit.
 *
 * Rows past seqlen_q (zero-filled by TMA) have LSE2 = +inf and delta = 0 (cd_sm90_bwd_pre), so they
 * add nothing. Keys past seqlen_k (zero-filled K and V) are masked in the last key block: their
 * P would otherwise be exp2(-LSE2), which can overflow.
 *
 * Varlen (cd_sm90_bwd_varlen_kernel; bwd_varlen_plan.cuh, docs/kernels/sm90_bwd_varlen.md): the
 * same body (cd_sm90_bwd_body, kVarlen) over a list of (sequence, key block) units built on the
 * device, heaviest first; a 1-d grid over (unit, KV head) in the dense LPT order (SM90_BWD_LPT_GROUP
 * KV heads at a time, units ascending across them: cd_sm90_bwd_grouped_work). The
 * sequence's lengths replace seqlen_q / seqlen_k; loads start at its first token of the packed
 * tensors, LSE2 / delta rows and dQ tiles at its padded tile. The tail of its last query block
 * holds the next sequence's tokens, whose LSE2 rows (padding) are +inf: P = dS = 0 there.
 */
#ifndef CUDADENT_SM90_BWD_KERNEL_CUH
#define CUDADENT_SM90_BWD_KERNEL_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/common/mask_rule.cuh"
#include "kernels/sm90/config.cuh"
#include "kernels/sm90/bwd_schedule.cuh"
#include "kernels/sm90/bwd_tiles.cuh"
#include "kernels/sm90/gemm.cuh"
#include "kernels/sm90/named_barriers.cuh"
#include "kernels/sm90/ptx_sm90.cuh"
#include "kernels/sm90/bwd_parts.cuh" /* smem layout, arguments, launch order, dQ reduce */
#include "kernels/sm90/bwd_trace.cuh" /* SM90_BWD_TRACE (dev): empty macros at 0 */
#include "kernels/sm90/bwd_epilogue.cuh" /* dK / dV out */
#include "kernels/sm90/bwd_unit.cuh"     /* the consumers' work on a unit: the block loop, epilogue */
#include "kernels/sm80/ptx_sm80.cuh"     /* cd_softcap_tanh: the portable kernels' tanh (kSoftcap) */

/* The varlen kernel's view of the unit list (bwd_varlen_plan.cuh builds it in the workspace): a
 * CTA's linear index is a (unit of the list, heaviest first, KV head) in the grouped order of
 * cd_sm90_bwd_grouped_work; seqs[u] = {q0, k0, len_q, len_k} of the unit's sequence (tokens, clamped),
 * blocks[u] = {key block, the sequence's first tile of the padded dQ / LSE2 / delta layout}. */
struct cd_sm90_bwd_varlen_units {
  const int *count;
  const int4 *seqs;
  const int2 *blocks;
  int heads_kv;
};

/* The main kernel's body, dense (kVarlen false: the grid is the work, cd_sm90_bwd_work_of_block)
 * or varlen (a unit of the list: its sequence's lengths replace seqlen_q / seqlen_k in a copy of
 * the arguments, so the mask rule, the query-block range and the key tail are the sequence's,
 * bottom-right aligned; the loads start at its tokens q_tok0 / k_tok0 of the packed tensors, the
 * LSE2 / delta rows and dQ tiles at its padded tile mt0, batch coordinate 0). At kVarlen false
 * the offsets are constant zeros: the dense kernels' code is what it was (docs/kernels/
 * sm90_bwd_varlen.md). */
template <int D, bool kFp16, int kDet, bool kVarlen, int BM_ = cd_sm90_bwd_tile<D>::BLOCK_M,
          bool kSoftcap = false>
__device__ __forceinline__ void cd_sm90_bwd_body(const CUtensorMap &tm_q, const CUtensorMap &tm_k,
                                                 const CUtensorMap &tm_v, const CUtensorMap &tm_do,
                                                 const cd_sm90_bwd_args &args_in, const int head_dim,
                                                 const int head_dim_v, const cd_sm90_bwd_varlen_units vu,
                                                 const float softcap_pre = 0.f) {
  typedef cd_sm90_bwd_tile<D> tile;
  /* the deterministic modes' dQ warp (bwd_parts.cuh cd_sm90_bwd_dq_warp): its staging buffers */
  constexpr bool kDqWarp = kDet != CD_SM90_BWD_NONDET;
  constexpr int DQB = cd_sm90_bwd_dq_bufs<D, BM_, kDet>();
  typedef cd_sm90_bwd_smem<D, BM_, DQB> L;
  constexpr int BM = BM_, BN = tile::BLOCK_N, ST = tile::STAGES;
  typedef cd_sm90_bwd_ops<D, BM, BN> O; /* the operands' layouts (bwd_parts.cuh) */
  constexpr int K_BLOCKS = D / O::K_COLS, QV_BLOCKS = D / O::QV_COLS; /* TMA boxes a row */
  /* the 80-row tile (config.cuh SM90_BWD_D128_BM80): dQ^T = K^T dS^T, dS stored as dS */
  constexpr bool SWAP = L::SWAP;
  static_assert(!SWAP || (D == 128 && kDet == CD_SM90_BWD_NONDET && !kVarlen),
                "the 80-row tile: d128, non-deterministic, dense");
  static_assert(!kSoftcap || !SWAP, "softcap: the rows' own tiles");
  static_assert((ST & (ST - 1)) == 0, "the ring position wraps at 2^32: ST a power of two");
  static_assert(cd_sm90_regs_fit(kDqWarp ? tile::PRODUCER_REGS_DET : tile::PRODUCER_REGS, 2, tile::CONSUMER_REGS),
                "setmaxnreg budgets within the launch allocation (reg_budget.cuh)");

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (cd_smem_addr(smem_raw) + 1023u) & ~1023u; /* swizzle atoms: 1024 B */
  uint8_t *const gbase = smem_raw + (base - cd_smem_addr(smem_raw));
  const uint32_t sK = base + L::K_OFF, sV = base + L::V_OFF, sQ = base + L::Q_OFF;
  const uint32_t sDO = base + L::DO_OFF, sDQ = base + L::DQ_OFF;
  const uint32_t bar_kv = base + L::BAR_OFF;
  const uint32_t bar_q_full = bar_kv + 8, bar_q_empty = bar_q_full + 8 * ST;

  cd_sm90_bwd_args args = args_in; /* varlen: with the sequence's lengths */
  int n_block, hk, b; /* this CTA's key block, KV head and batch (cd_sm90_bwd_work_of_block) */
  int q_tok0 = 0, k_tok0 = 0, mt0 = 0; /* varlen: the sequence's first query / key token, tile */
#if SM90_BWD_PDL
  /* Programmatic dependent launch (config.cuh SM90_BWD_PDL; this kernel and the post are launched
   * with it): the post may be scheduled once every CTA of this grid has started (all of them
   * resident or done: a deterministic turn never waits for a CTA kept off the GPU by the post's),
   * and waits for this grid's completion before reading the dQ accumulator. The set-up (barrier
   * init, tensor-map prefetch) depends on no earlier kernel: it runs before any wait. Varlen:
   * every thread waits (for the pre, whose completion follows the plan's: bwd_varlen_plan.cuh)
   * right after it, before reading the plan's unit list; the dense kernel's waits are the
   * producer's after its K / V loads and the consumers' below. */
  cd_griddep_launch_dependents();
  const int wg = cd_sm90_bwd_setup<ST>(tm_q, tm_k, tm_v, tm_do, bar_kv, bar_q_full, bar_q_empty);
  if constexpr (kVarlen) cd_griddep_wait();
#endif
  if constexpr (kVarlen) {
    /* the dense LPT order over (unit, KV head): SM90_BWD_LPT_GROUP KV heads at a time, units
     * (heaviest first) ascending across them, so that the CTAs in flight share a few heads' Q / dO
     * in L2; for every mask (a list's units are not uniform work, unlike a dense unmasked grid) */
    const int count = *vu.count;
    if ((int64_t)blockIdx.x >= (int64_t)count * vu.heads_kv) return; /* past the list: the whole CTA */
    int unit;
    cd_sm90_bwd_grouped_work(blockIdx.x, count, vu.heads_kv, vu.heads_kv,
                             SM90_BWD_LPT_GROUP > 0 ? SM90_BWD_LPT_GROUP : 1, &unit, &hk, &b);
    const int4 seq = vu.seqs[unit];
    const int2 blk = vu.blocks[unit];
    n_block = blk.x;
    mt0 = blk.y;
    b = 0;
    q_tok0 = seq.x;
    k_tok0 = seq.y;
    args.seqlen_q = seq.z;
    args.seqlen_k = seq.w;
  } else {
    cd_sm90_bwd_work_of_block<kDet>(args, n_block, hk, b);
  }
#if !SM90_BWD_PDL
  const int wg = cd_sm90_bwd_setup<ST>(tm_q, tm_k, tm_v, tm_do, bar_kv, bar_q_full, bar_q_empty);
#endif

  const int k0 = n_block * BN;
  int m_lo, m_hi;
  cd_sm90_bwd_q_blocks<BM, BN>(args, n_block, &m_lo, &m_hi);
  const int h_lo = hk * args.group, h_hi = h_lo + args.group; /* the KV head's query heads */
  SM90_BWD_TRACE_BEGIN(n_block, hk, b);

  if (wg == 0) {
    /* ================================ producer ================================ */
    cd_setmaxnreg_dec<kDqWarp ? tile::PRODUCER_REGS_DET : tile::PRODUCER_REGS>();
    if constexpr (kDqWarp) { /* warp 1: the dQ warp (bwd_parts.cuh cd_sm90_bwd_dq_warp) */
      if (threadIdx.x / 32 == 1) {
        if (m_hi > m_lo) cd_sm90_bwd_dq_warp<D, kDet, DQB>(args, sDQ, b, h_lo, h_hi, m_lo, m_hi, n_block);
        return;
      }
    }
    if (threadIdx.x != 0 || m_hi == m_lo) return;
    SM90_BWD_TRACE_PRODUCER_BEGIN(args.group * (m_hi - m_lo));
    cd_mbar_arrive_expect_tx(bar_kv, 2 * L::KV_BYTES);
    if constexpr (K_BLOCKS == QV_BLOCKS) {
#pragma unroll
      for (int c = 0; c < K_BLOCKS; ++c) {
        cd_tma_load_4d(sK + c * BN * O::K_COLS * 2, &tm_k, bar_kv, O::K_COLS * c, k_tok0 + k0, hk, b);
        cd_tma_load_4d(sV + c * BN * O::QV_COLS * 2, &tm_v, bar_kv, O::QV_COLS * c, k_tok0 + k0, hk, b);
      }
    } else { /* d96: K in blocks of 16 columns, V of 32 */
#pragma unroll
      for (int c = 0; c < K_BLOCKS; ++c)
        cd_tma_load_4d(sK + c * BN * O::K_COLS * 2, &tm_k, bar_kv, O::K_COLS * c, k_tok0 + k0, hk, b);
#pragma unroll
      for (int c = 0; c < QV_BLOCKS; ++c)
        cd_tma_load_4d(sV + c * BN * O::QV_COLS * 2, &tm_v, bar_kv, O::QV_COLS * c, k_tok0 + k0, hk, b);
    }
#if SM90_BWD_PDL
    /* K and V are the caller's (no kernel of this call writes them): their loads overlap the pre
     * kernel's tail. The LSE2 / delta rows below are the pre's: wait for its completion first
     * (the only thread of the producer that goes on; the consumers wait for themselves). */
    if constexpr (!kVarlen) cd_griddep_wait();
#endif
    uint32_t it = 0; /* ring position (wraps harmlessly: ST divides 2^32) */
    for (int h = h_lo; h < h_hi; ++h)
      for (int j = m_lo; j < m_hi; ++j, ++it) {
        const int m = cd_sm90_bwd_walk_m<kDet>(j, m_lo, m_hi, n_block);
        const uint32_t s = it % ST, ph = (it / ST) & 1;
        SM90_BWD_TRACE_PRODUCER_WAIT(it);
        cd_mbar_wait(bar_q_empty + 8 * s, ph ^ 1);
        SM90_BWD_TRACE_PRODUCER(it);
        const uint32_t full = bar_q_full + 8 * s;
        cd_mbar_arrive_expect_tx(full, 2 * L::QT_BYTES + 2 * L::ROW_BYTES);
#pragma unroll
        for (int c = 0; c < QV_BLOCKS; ++c) {
          const uint32_t off = s * L::QT_BYTES + c * BM * O::QV_COLS * 2;
          cd_tma_load_4d(sQ + off, &tm_q, full, O::QV_COLS * c, q_tok0 + m * BM, h, b);
          cd_tma_load_4d(sDO + off, &tm_do, full, O::QV_COLS * c, q_tok0 + m * BM, h, b);
        }
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
  /* every consumer thread, before anything the pre kernel writes: the dQ accumulator its bulk
   * reduce-adds add to (zeroed by the pre), the deterministic semaphores (likewise); its LSE2 /
   * delta come through the ring, loaded after the producer's wait. Costs nothing: the first ring
   * stage cannot fill before the pre completes anyway. */
  if constexpr (!kVarlen) cd_griddep_wait();
#endif
  const int cw = wg - 1; /* keys [64 cw, 64 cw + 64) of the block */
  const int ct = threadIdx.x - 128 * wg;
  const int warp = ct / 32, lane = ct % 32;

  uint32_t it = 0; /* ring position (continues across a persistent CTA's units: bwd_persist.cuh) */
  cd_sm90_bwd_consumer_unit<D, kFp16, kDet, kVarlen, BM_, kSoftcap>(args, base, gbase, n_block, hk, b, m_lo, m_hi,
                                                                  k_tok0, mt0, cw, warp, lane, head_dim,
                                                                  head_dim_v, softcap_pre, 0u, it);
  SM90_BWD_TRACE_END(cw, ct, it);
}

/* The dense kernel; BM_: the row's BLOCK_M, or 80 (the d128 row's 80-row tile, bwd_launch.cuh
 * cd_sm90_bwd_takes_bm80). */
template <int D, bool kFp16, int kDet, int BM_ = cd_sm90_bwd_tile<D>::BLOCK_M>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                       const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                       const cd_sm90_bwd_args args, const int head_dim, const int head_dim_v) {
  cd_sm90_bwd_body<D, kFp16, kDet, false, BM_>(tm_q, tm_k, tm_v, tm_do, args, head_dim, head_dim_v,
                                               cd_sm90_bwd_varlen_units{nullptr, nullptr, nullptr, 1});
}

/* The dense softcap kernel (bwd.cu cd_sm90_bwd_softcap: the 128 / 128 row at its BLOCK_M, and the
 * 64 / 64 row's behind dispatch.h's CUDADENT_SM90_BWD_D64_SOFTCAP; not deterministic;
 * docs/kernels/sm90_bwd_softcap.md): softcap_pre =
 * softmax_scale / softcap, args.scale_log2 = softcap log2(e) (the scores in units of softcap, as
 * the portable backward's); a kernel of its own, so that the kernels above keep their names,
 * parameters and code. */
template <int D, bool kFp16, int kDet>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_softcap_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                               const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                               const cd_sm90_bwd_args args, const int head_dim, const int head_dim_v,
                               const float softcap_pre) {
  cd_sm90_bwd_body<D, kFp16, kDet, false, cd_sm90_bwd_tile<D>::BLOCK_M, true>(
      tm_q, tm_k, tm_v, tm_do, args, head_dim, head_dim_v, cd_sm90_bwd_varlen_units{nullptr, nullptr, nullptr, 1},
      softcap_pre);
}

/* The varlen kernel (bwd_varlen.cu): a 1-d grid of the list's capacity x heads_kv CTAs; args.dk /
 * dv and the tensor maps over the packed tensors (head_dim, total, heads, 1), args.sq_pad the
 * padded rows of a head, args.m_blocks its tiles. Not deterministic (bwd.cu supports()). Always the
 * row's BLOCK_M: the 80-row tile (config.cuh SM90_BWD_D128_BM80) is a dense-only experiment (its
 * mask handles only keys past seqlen_k, and the varlen plan's tiles, workspace and post kernel are
 * laid out in the row's BLOCK_M; cd_sm90_bwd_takes_bm80 refuses varlen calls). */
template <int D, bool kFp16>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_varlen_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                              const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                              const cd_sm90_bwd_args args, const int head_dim, const int head_dim_v,
                              const cd_sm90_bwd_varlen_units vu) {
  cd_sm90_bwd_body<D, kFp16, CD_SM90_BWD_NONDET, true>(tm_q, tm_k, tm_v, tm_do, args, head_dim,
                                                       head_dim_v, vu);
}

/* The varlen softcap kernel (bwd_varlen.cu: the 128 / 128 row only, not deterministic): the varlen
 * body with kSoftcap, softcap_pre and args.scale_log2 as the dense softcap kernel's; a kernel of
 * its own, so that the one above keeps its name, parameters and code. */
template <int D, bool kFp16>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_varlen_softcap_kernel(const __grid_constant__ CUtensorMap tm_q,
                                      const __grid_constant__ CUtensorMap tm_k,
                                      const __grid_constant__ CUtensorMap tm_v,
                                      const __grid_constant__ CUtensorMap tm_do, const cd_sm90_bwd_args args,
                                      const int head_dim, const int head_dim_v,
                                      const cd_sm90_bwd_varlen_units vu, const float softcap_pre) {
  cd_sm90_bwd_body<D, kFp16, CD_SM90_BWD_NONDET, true, cd_sm90_bwd_tile<D>::BLOCK_M, true>(
      tm_q, tm_k, tm_v, tm_do, args, head_dim, head_dim_v, vu, softcap_pre);
}

#endif /* CUDADENT_SM90_BWD_KERNEL_CUH */
