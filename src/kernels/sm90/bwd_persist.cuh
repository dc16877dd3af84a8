/*
 * bwd_persist.cuh - persistent CTAs for the Hopper backward's narrow-row main kernel (config.cuh
 * SM90_BWD_PERSISTENT, a dev build's; lever (d) of docs/kernels/sm90_bwd_next.md, section 10
 * there): one CTA a SM walks several units (key block, KV head, batch), so that the next unit's
 * K / V loads run under the current unit's dK / dV epilogue and an SM's CTA-to-CTA gap (launch,
 * prologue) is paid once instead of ~15 times a call.
 *
 * Scope (bwd_launch.cuh cd_sm90_bwd_persist_takes): dense, non-deterministic calls without a mask
 * (no causal, no window) and without softcap, on the narrow rows (d64, d96, d128 at 64 rows, the
 * d128 80-row tile). Their units are equal work, so a static stride is balanced: CTA c of a grid of
 * G = min(units, SMs) takes the launch indices c, c + G, c + 2G, ... of the non-persistent order
 * (bwd_schedule.cuh cd_sm90_bwd_persist_unit, cd_sm90_bwd_grouped_work with one chain a group: the
 * order of cd_sm90_bwd_work_of_block without a mask). Every other call keeps cd_sm90_bwd_kernel
 * and its grid.
 *
 * Warps: as cd_sm90_bwd_body's (bwd_kernel.cuh's opening comment): warpgroup 0 the producer (one
 * thread; setmaxnreg.dec once), warpgroups 1 and 2 the consumers (setmaxnreg.inc once), each
 * running the same per-unit code as the library's kernel (bwd_unit.cuh cd_sm90_bwd_consumer_unit,
 * kPersist true) once a unit. Set-up (tensor-map prefetch, barrier init, __syncthreads) once.
 *
 * Barriers across units (the rules, to review: a wrong parity hangs the GPU):
 *   kv_full (bar_kv, count 1 + K / V bytes): once per non-empty unit (m_hi > m_lo), the kv_n-th of
 *     them (kv_n counted identically by both sides) completes phase kv_n: the consumers wait
 *     parity kv_n & 1. It cannot run two phases ahead: the producer loads unit kv_n + 1's K / V
 *     only after kv_empty's phase kv_n, which needs the consumers past unit kv_n's wait.
 *   kv_empty (new, count 8: lane 0 of each consumer warp): each warp arrives once per non-empty
 *     unit after its block loop (the last K / V readers, S^T = K Q^T, dP^T = V dO^T and the dQ
 *     product, have completed by the last block's wgmma waits), before the epilogue. The producer,
 *     before unit kv_n's K / V (kv_n > 0), waits phase kv_n - 1: parity (kv_n - 1) & 1.
 *   epi_done (new, count 8): each consumer warp arrives once per unit, empty or not, after its
 *     epilogue's last shared-memory read of the dK / dV staging (which lies in the Q / dO stages:
 *     the epilogue stores to global memory from registers loaded by ld.shared), behind a
 *     fence.proxy.async (generic accesses before the TMA writes). The producer, before the first
 *     Q / dO / LSE2 / delta load of the CTA's k-th unit (k > 0), waits phase k - 1: parity
 *     (k - 1) & 1. The K / V loads of unit k do not wait for it: that is the overlap.
 *   q_full / q_empty: the ring as in the library, its position `it` continued across units on both
 *     sides (not reset), so the stage and phase of every block are those of one long walk.
 *   The dS double buffer (it & 1), the dQ staging (its bulk reads waited before restaging), the
 *   named barriers (BAR_DS, the epilogue's) are per block / per unit as in the library.
 * Units with no query block (m_hi == m_lo; no-mask calls have none unless seqlen_q is 0, which the
 * host does not send here): the producer loads nothing for them; the consumers skip the K / V wait
 * and the kv_empty arrival, run the epilogue (zero dK / dV) and arrive on epi_done.
 * PDL (config.cuh SM90_BWD_PDL): launch_dependents once at the start (the post's griddepcontrol.wait
 * waits for this grid's completion, bwd_prepost.cuh); griddepcontrol.wait once by the producer
 * after its first K / V loads and once by every consumer thread after setmaxnreg, as the library.
 * The block trace (SM90_BWD_TRACE) is per CTA and is not supported with the knob (#error).
 */
#ifndef CUDADENT_SM90_BWD_PERSIST_CUH
#define CUDADENT_SM90_BWD_PERSIST_CUH

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/sm90/config.cuh"
#include "kernels/sm90/bwd_schedule.cuh"
#include "kernels/sm90/bwd_tiles.cuh"
#include "kernels/sm90/ptx_sm90.cuh"
#include "kernels/sm90/reg_budget.cuh"
#include "kernels/sm90/bwd_parts.cuh"
#include "kernels/sm90/bwd_unit.cuh"

#if SM90_BWD_TRACE
#error "SM90_BWD_PERSISTENT: the block trace (SM90_BWD_TRACE) is per CTA; build one or the other"
#endif

/* The shared memory of the persistent kernel: the library kernel's (cd_sm90_bwd_smem, one dQ
 * staging buffer) and its two extra barriers after the others (before the alignment slack). */
template <int D, int BM_> struct cd_sm90_bwd_persist_smem {
  typedef cd_sm90_bwd_smem<D, BM_, 1> L;
  static constexpr int KV_EMPTY_OFF = L::BAR_OFF + 8 * L::NUM_BARS + L::TRACE_BYTES;
  static constexpr int EPI_DONE_OFF = KV_EMPTY_OFF + 8;
  static constexpr int BYTES = L::BYTES + 16;
  static_assert(KV_EMPTY_OFF % 8 == 0, "mbarriers 8-byte aligned");
  static_assert(BYTES <= 227 * 1024, "shared memory over the sm_90 limit");
};

/* The k-th unit of this CTA (bwd_schedule.cuh cd_sm90_bwd_persist_unit, then the library's
 * unmasked order: cd_sm90_bwd_grouped_work with one chain a group) and its query blocks; false once
 * the CTA has none left. The producer and the consumers decode the same units with it. */
template <int BM, int BN>
__device__ __forceinline__ bool cd_sm90_bwd_persist_work(const cd_sm90_bwd_args &args, int k, int n_blocks,
                                                         int heads_kv, int64_t chains, int *n_block, int *hk,
                                                         int *b, int *m_lo, int *m_hi) {
  const int64_t linear = cd_sm90_bwd_persist_unit((int)blockIdx.x, k, (int)gridDim.x);
  if (linear >= (int64_t)n_blocks * chains) return false;
  cd_sm90_bwd_grouped_work(linear, n_blocks, heads_kv, chains, 1, n_block, hk, b);
  cd_sm90_bwd_q_blocks<BM, BN>(args, *n_block, m_lo, m_hi);
  return true;
}

template <int D, bool kFp16, int BM_ = cd_sm90_bwd_tile<D>::BLOCK_M>
__global__ void __launch_bounds__(384, 1)
    cd_sm90_bwd_persist_kernel(const __grid_constant__ CUtensorMap tm_q, const __grid_constant__ CUtensorMap tm_k,
                               const __grid_constant__ CUtensorMap tm_v, const __grid_constant__ CUtensorMap tm_do,
                               const cd_sm90_bwd_args args, const int head_dim, const int head_dim_v,
                               const int n_blocks, const int heads_kv, const int batch) {
  typedef cd_sm90_bwd_tile<D> tile;
  typedef cd_sm90_bwd_persist_smem<D, BM_> P;
  typedef typename P::L L;
  constexpr int BM = BM_, BN = tile::BLOCK_N, ST = tile::STAGES;
  typedef cd_sm90_bwd_ops<D, BM, BN> O;
  constexpr int K_BLOCKS = D / O::K_COLS, QV_BLOCKS = D / O::QV_COLS; /* TMA boxes a row */
  static_assert((ST & (ST - 1)) == 0, "the ring position wraps at 2^32: ST a power of two");
  static_assert(cd_sm90_regs_fit(tile::PRODUCER_REGS, 2, tile::CONSUMER_REGS),
                "setmaxnreg budgets within the launch allocation (reg_budget.cuh)");
  static_assert(BN * D * 2 <= ST * L::QT_BYTES, "dK / dV staging fits the Q / dO stages");

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (cd_smem_addr(smem_raw) + 1023u) & ~1023u; /* swizzle atoms: 1024 B */
  uint8_t *const gbase = smem_raw + (base - cd_smem_addr(smem_raw));
  const uint32_t sK = base + L::K_OFF, sV = base + L::V_OFF, sQ = base + L::Q_OFF;
  const uint32_t sDO = base + L::DO_OFF;
  const uint32_t bar_kv = base + L::BAR_OFF;
  const uint32_t bar_q_full = bar_kv + 8, bar_q_empty = bar_q_full + 8 * ST;
  const uint32_t bar_kv_empty = base + P::KV_EMPTY_OFF, bar_epi_done = base + P::EPI_DONE_OFF;
  const int64_t chains = (int64_t)heads_kv * batch;

#if SM90_BWD_PDL
  cd_griddep_launch_dependents(); /* the post waits for this grid's completion (bwd_prepost.cuh) */
#endif
  if (threadIdx.x == 0) { /* before cd_sm90_bwd_setup's fence and __syncthreads */
    cd_mbar_init(bar_kv_empty, 8); /* lane 0 of each consumer warp, once a non-empty unit */
    cd_mbar_init(bar_epi_done, 8); /* likewise, once a unit */
  }
  const int wg = cd_sm90_bwd_setup<ST>(tm_q, tm_k, tm_v, tm_do, bar_kv, bar_q_full, bar_q_empty);

  if (wg == 0) {
    /* ================================ producer ================================ */
    cd_setmaxnreg_dec<tile::PRODUCER_REGS>();
    if (threadIdx.x != 0) return;
    uint32_t it = 0;   /* ring position, continued across units (wraps harmlessly: ST divides 2^32) */
    uint32_t kv_n = 0; /* non-empty units loaded so far: kv_full's phase */
    int n_block, hk, b, m_lo, m_hi;
    for (int k = 0; cd_sm90_bwd_persist_work<BM, BN>(args, k, n_blocks, heads_kv, chains, &n_block, &hk, &b,
                                                     &m_lo, &m_hi);
         ++k) {
      if (m_hi == m_lo) continue; /* nothing to load; the consumers write zero dK / dV */
      const int k0 = n_block * BN;
      /* K / V of this unit once every consumer warp's last K / V product of the previous one has
       * completed; under the previous unit's epilogue */
      if (kv_n > 0) cd_mbar_wait(bar_kv_empty, (kv_n - 1) & 1);
      cd_mbar_arrive_expect_tx(bar_kv, 2 * L::KV_BYTES);
      if constexpr (K_BLOCKS == QV_BLOCKS) {
#pragma unroll
        for (int c = 0; c < K_BLOCKS; ++c) {
          cd_tma_load_4d(sK + c * BN * O::K_COLS * 2, &tm_k, bar_kv, O::K_COLS * c, k0, hk, b);
          cd_tma_load_4d(sV + c * BN * O::QV_COLS * 2, &tm_v, bar_kv, O::QV_COLS * c, k0, hk, b);
        }
      } else { /* d96: K in blocks of 16 columns, V of 32 */
#pragma unroll
        for (int c = 0; c < K_BLOCKS; ++c)
          cd_tma_load_4d(sK + c * BN * O::K_COLS * 2, &tm_k, bar_kv, O::K_COLS * c, k0, hk, b);
#pragma unroll
        for (int c = 0; c < QV_BLOCKS; ++c)
          cd_tma_load_4d(sV + c * BN * O::QV_COLS * 2, &tm_v, bar_kv, O::QV_COLS * c, k0, hk, b);
      }
#if SM90_BWD_PDL
      if (kv_n == 0) cd_griddep_wait(); /* once: LSE2 / delta below are the pre kernel's */
#endif
      ++kv_n;
      /* the Q / dO stages hold the previous unit's dK / dV staging until its epilogue is done */
      if (k > 0) cd_mbar_wait(bar_epi_done, (uint32_t)(k - 1) & 1);
      const int h_lo = hk * args.group, h_hi = h_lo + args.group;
      for (int h = h_lo; h < h_hi; ++h)
        for (int m = m_lo; m < m_hi; ++m, ++it) {
          const uint32_t s = it % ST, ph = (it / ST) & 1;
          cd_mbar_wait(bar_q_empty + 8 * s, ph ^ 1);
          const uint32_t full = bar_q_full + 8 * s;
          cd_mbar_arrive_expect_tx(full, 2 * L::QT_BYTES + 2 * L::ROW_BYTES);
#pragma unroll
          for (int c = 0; c < QV_BLOCKS; ++c) {
            const uint32_t off = s * L::QT_BYTES + c * BM * O::QV_COLS * 2;
            cd_tma_load_4d(sQ + off, &tm_q, full, O::QV_COLS * c, m * BM, h, b);
            cd_tma_load_4d(sDO + off, &tm_do, full, O::QV_COLS * c, m * BM, h, b);
          }
          const int64_t row0 = ((int64_t)b * args.heads_q + h) * args.sq_pad + (int64_t)m * BM;
          cd_bulk_load_1d(base + L::LSE_OFF + s * L::ROW_BYTES, args.lse2 + row0, L::ROW_BYTES, full);
          cd_bulk_load_1d(base + L::DELTA_OFF + s * L::ROW_BYTES, args.delta + row0, L::ROW_BYTES, full);
        }
    }
    return;
  }

  /* ================================ consumers ================================ */
  cd_setmaxnreg_inc<tile::CONSUMER_REGS>();
#if SM90_BWD_PDL
  cd_griddep_wait(); /* once, before the dQ accumulator (zeroed by the pre) */
#endif
  const int cw = wg - 1; /* keys [64 cw, 64 cw + 64) of each key block */
  const int ct = threadIdx.x - 128 * wg;
  const int warp = ct / 32, lane = ct % 32;
  uint32_t it = 0, kv_n = 0; /* as the producer's */
  int n_block, hk, b, m_lo, m_hi;
  for (int k = 0;
       cd_sm90_bwd_persist_work<BM, BN>(args, k, n_blocks, heads_kv, chains, &n_block, &hk, &b, &m_lo, &m_hi);
       ++k) {
    cd_sm90_bwd_consumer_unit<D, kFp16, CD_SM90_BWD_NONDET, false, BM_, false, true>(
        args, base, gbase, n_block, hk, b, m_lo, m_hi, 0, 0, cw, warp, lane, head_dim, head_dim_v, 0.f, kv_n & 1,
        it, bar_kv_empty, bar_epi_done);
    if (m_hi > m_lo) ++kv_n;
  }
}

#endif /* CUDADENT_SM90_BWD_PERSIST_CUH */
