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
 * host does not send here; masked ones at knob 2 do): the producer loads nothing for them; the
 * consumers skip the K / V wait and the kv_empty arrival, run the epilogue (zero dK / dV) and
 * arrive on epi_done. At knob 1 the producer skips their epi_done waits, safe only while no two
 * empty units are consecutive (none are); knob 2's rule is below.
 * PDL (config.cuh SM90_BWD_PDL): launch_dependents once at the start (the post's griddepcontrol.wait
 * waits for this grid's completion, bwd_prepost.cuh); griddepcontrol.wait once by the producer
 * after its first K / V loads and once by every consumer thread after setmaxnreg, as the library.
 * The block trace (SM90_BWD_TRACE, a dev build's; bwd_trace.cuh's SM90_BWD_TRACE_PU_* macros): each
 * unit is traced as the library's CTA of its launch index would be (its header: %smid, its work,
 * start / end; its block records by the unit's own walk index it - it0, the stamp slots by the ring
 * position it), so that a trace of the library's grid (CUDADENT_SM90_BWD_PERSISTENT=0, the same
 * build) and one of the persistent CTAs have one layout. The producer copies a unit's last two
 * blocks' stamps after its last load (knob 1) or after the next unit's fetch (knob 2), waiting for
 * their release as it would before its next load anyway, and stamps a unit's end once its epi_done
 * wait for the unit passes (knob 1's last unit: a wait after its loop, the trace build's only).
 * At SM90_BWD_TRACE 0 the macros are empty.
 *
 * Knob 2, the dynamic scheduler (d64, d96, d128 at 64 rows; the 80-row tile, whose calls are all
 * unmasked, keeps the stride above: with an atomic in its producer ptxas serialized its wgmmas;
 * with config.cuh SM90_BWD_PERSIST_FETCH 1, the fetch a consumer's, it takes the scheduler too).
 * Scope: knob 1's plus masks (causal, windows). Units are fetched in the library's launch order
 * (bwd_schedule.cuh cd_sm90_bwd_order_work: SM90_BWD_LPT_GROUP chains a group, key blocks
 * ascending, where window_right >= 0; chain by chain otherwise): CTA c's unit 0 is launch index c;
 * unit k + 1's is G + atomicAdd(counter, 1) (cd_sm90_bwd_dyn_unit), fetched by the producer once
 * unit k's Q / dO are issued; an index >= units is the end marker. The counter: one int in the
 * workspace after delta (bwd_parts.cuh cd_sm90_bwd_unit_counter), zeroed by the pre kernel; the
 * producer's first atomic follows its griddepcontrol.wait, which returns once the pre grid has
 * completed and its writes are visible.
 * The producer's step k: [K / V of unit k if it has query blocks, after kv_empty as above]
 * [k = 0: griddepcontrol.wait | k > 0: wait epi_done phase k - 1, store unit k's index in slot
 * k & 1, arrive on unit_full] [the end marker: return] [Q / dO of unit k] [fetch unit k + 1's].
 *   unit_full (count 1, the producer): its phase j - 1 completes with unit j's index (j >= 1,
 *     the end marker included). Consumer threads (all 256), after unit k, wait parity k & 1 and
 *     read slot (k + 1) & 1. It cannot run two phases ahead: unit k + 2's index is published after
 *     epi_done phase k + 1, which needs every consumer warp past unit k + 1, i.e. past its wait.
 *   slots (2 ints): unit j's index is stored after epi_done phase j - 1; the slot's previous index,
 *     unit j - 2's, was read before unit j - 2 began, so before phase j - 2 (one slot would do).
 *   epi_done, the rule with empty units: the producer waits every phase, empty units included, in
 *     order (phase k - 1 at step k), and publishes unit k's index only after it; the consumers
 *     complete unit k only after reading that index. So at the producer's wait for phase k - 1 the
 *     barrier has completed phase k - 2 (waited at step k - 1) and not phase k: one ahead at most,
 *     whatever mix of empty and non-empty units. (Knob 1 skips empty units' waits: with no mask
 *     it has none; knob 2's masks do.)
 *   kv_full / kv_empty / the ring: as above (kv_n counts non-empty units on both sides).
 * Registers: the producer's 24 hold kv_n and k as four bits (parities, non-zero), decode in 32 bits
 * and re-read the decode's inputs from the parameters every unit (cd_sm90_bwd_dyn_work).
 * config.cuh SM90_BWD_PERSIST_FETCH 1 (dev, session 32): the fetch moves to consumer thread 128,
 * after its unit k (its epilogue and epi_done arrival): it stores unit k + 1's index in slot
 * (k + 1) & 1 of two more and arrives on fetch_full (count 1); the producer, in place of its
 * atomic, waits fetch_full's phase k (parity k & 1) and reads the slot. Never two phases ahead:
 * unit k + 1 ends only after its loads, which follow that wait; a slot is rewritten two units on,
 * after the producer's read. The next unit's K / V then load after the epilogue, not under it; the
 * 80-row tile takes the dynamic scheduler too (the atomic out of its producer: no C7512).
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

#include "kernels/sm90/bwd_trace.cuh"

/* The shared memory of the persistent kernel: the library kernel's (cd_sm90_bwd_smem, one dQ
 * staging buffer) and its two extra barriers after the others (before the alignment slack). */
template <int D, int BM_> struct cd_sm90_bwd_persist_smem {
  typedef cd_sm90_bwd_smem<D, BM_, 1> L;
  static constexpr int KV_EMPTY_OFF = L::BAR_OFF + 8 * L::NUM_BARS + L::TRACE_BYTES;
  static constexpr int EPI_DONE_OFF = KV_EMPTY_OFF + 8;
  /* knob 2: the unit_full barrier and the two index slots (int, slot k & 1 holds unit k's) */
  static constexpr int UNIT_FULL_OFF = EPI_DONE_OFF + 8, SLOT_OFF = UNIT_FULL_OFF + 8;
  /* config.cuh SM90_BWD_PERSIST_FETCH 1: the fetch_full barrier and its two slots (slot k & 1 holds
   * the index fetched during unit k - 1) */
  static constexpr int FETCH_FULL_OFF = SLOT_OFF + 8, FETCH_SLOT_OFF = FETCH_FULL_OFF + 8;
  static constexpr int BYTES =
      L::BYTES + (SM90_BWD_PERSISTENT != 2 ? 16 : SM90_BWD_PERSIST_FETCH == 1 ? 48 : 32);
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

/* Knob 2: launch index idx's unit in the library's order for the call's mask (bwd_schedule.cuh
 * cd_sm90_bwd_order_work, as cd_sm90_bwd_work_of_block; in 32 bits: the host sends fewer than
 * 2^30 units) and its query blocks; false (m_lo = m_hi = 0) for an index past the units: the end.
 * The producer and the consumers decode with it. Its inputs are re-read from the parameters on
 * every call (the empty asm: not hoisted out of the unit loop), so that no loop-invariant value
 * derived from them (the divisions' reciprocals) stays live across a unit: hoisted, they spilled
 * 60-64 B of the producer's 24 registers and serialized the 80-row tile's wgmmas (C7512). */
template <int BM, int BN>
__device__ __forceinline__ bool cd_sm90_bwd_dyn_work(const cd_sm90_bwd_args &args, int idx, int n_blocks,
                                                     int heads_kv, int batch, int *n_block, int *hk, int *b,
                                                     int *m_lo, int *m_hi) {
  cd_sm90_bwd_args a = args;
  asm volatile("" : "+r"(n_blocks), "+r"(heads_kv), "+r"(batch), "+r"(a.seqlen_q), "+r"(a.seqlen_k),
               "+r"(a.window_left), "+r"(a.window_right));
  *m_lo = *m_hi = 0;
  if (idx >= n_blocks * heads_kv * batch) return false;
  cd_sm90_bwd_order_work<int>(idx, n_blocks, heads_kv, heads_kv * batch, a.window_right, n_block, hk, b);
  cd_sm90_bwd_q_blocks<BM, BN>(a, *n_block, m_lo, m_hi);
  return true;
}

/* Knob 2's fetch: the next launch index, grid + atomicAdd(the workspace's unit counter, 1)
 * (bwd_schedule.cuh cd_sm90_bwd_dyn_unit); its inputs re-read from the parameters (the empty asm) so
 * that no address stays live across a unit */
__device__ __forceinline__ int cd_sm90_bwd_dyn_fetch(const cd_sm90_bwd_args &args, int batch) {
  const float *delta = args.delta;
  int hq = args.heads_q, sqp = args.sq_pad, grid, old;
  asm volatile("mov.u32 %0, %%nctaid.x;" : "=r"(grid));
  asm volatile("" : "+l"(delta), "+r"(hq), "+r"(sqp), "+r"(batch));
  asm volatile("atom.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(cd_sm90_bwd_unit_counter(delta, batch, hq, sqp))
               : "memory");
  return (int)cd_sm90_bwd_dyn_unit(grid, old);
}

/* The producer's K / V of key block n_block (rows from k0) of chain (hk, b) on bar_kv, which expects
 * their bytes (issued here). */
template <int D, int BM, int BN, typename L>
__device__ __forceinline__ void cd_sm90_bwd_persist_load_kv(const CUtensorMap &tm_k, const CUtensorMap &tm_v,
                                                            uint32_t sK, uint32_t sV, uint32_t bar_kv, int k0, int hk,
                                                            int b) {
  typedef cd_sm90_bwd_ops<D, BM, BN> O;
  constexpr int K_BLOCKS = D / O::K_COLS, QV_BLOCKS = D / O::QV_COLS; /* TMA boxes a row */
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
}

/* The producer's Q / dO / LSE2 / delta of one unit: query blocks [m_lo, m_hi) of each query head of
 * KV head hk, through the ring at position it (continued across units). kLean (knob 2): the LSE2 /
 * delta row in unsigned 32 x 32 -> 64 arithmetic (batch x heads_q below 2^31), which keeps no
 * sign-extended value live across the loop (the 24 registers spilled with the signed form). */
template <int D, int BM, int BN, int ST, typename L, bool kLean = false>
__device__ __forceinline__ void cd_sm90_bwd_persist_load_q(const cd_sm90_bwd_args &args, const CUtensorMap &tm_q,
                                                           const CUtensorMap &tm_do, uint32_t base,
                                                           uint32_t bar_q_full, uint32_t bar_q_empty, int m_lo,
                                                           int m_hi, int hk, int b, uint32_t &it,
                                                           int64_t trace_unit = 0) {
  typedef cd_sm90_bwd_ops<D, BM, BN> O;
  constexpr int QV_BLOCKS = D / O::QV_COLS;
  const uint32_t sQ = base + L::Q_OFF, sDO = base + L::DO_OFF;
  const int h_lo = hk * args.group, h_hi = h_lo + args.group;
  SM90_BWD_TRACE_PU_UNIT(trace_unit, it);
  for (int h = h_lo; h < h_hi; ++h)
    for (int m = m_lo; m < m_hi; ++m, ++it) {
      const uint32_t s = it % ST, ph = (it / ST) & 1;
      SM90_BWD_TRACE_PU_WAIT(it);
      cd_mbar_wait(bar_q_empty + 8 * s, ph ^ 1);
      SM90_BWD_TRACE_PU_LOAD(it);
      const uint32_t full = bar_q_full + 8 * s;
      cd_mbar_arrive_expect_tx(full, 2 * L::QT_BYTES + 2 * L::ROW_BYTES);
#pragma unroll
      for (int c = 0; c < QV_BLOCKS; ++c) {
        const uint32_t off = s * L::QT_BYTES + c * BM * O::QV_COLS * 2;
        cd_tma_load_4d(sQ + off, &tm_q, full, O::QV_COLS * c, m * BM, h, b);
        cd_tma_load_4d(sDO + off, &tm_do, full, O::QV_COLS * c, m * BM, h, b);
      }
      const int64_t row0 =
          kLean ? (int64_t)((uint64_t)(uint32_t)(b * args.heads_q + h) * (uint32_t)args.sq_pad + (uint32_t)(m * BM))
                : ((int64_t)b * args.heads_q + h) * args.sq_pad + (int64_t)m * BM;
      cd_bulk_load_1d(base + L::LSE_OFF + s * L::ROW_BYTES, args.lse2 + row0, L::ROW_BYTES, full);
      cd_bulk_load_1d(base + L::DELTA_OFF + s * L::ROW_BYTES, args.delta + row0, L::ROW_BYTES, full);
      SM90_BWD_TRACE_PU_COPY(it);
    }
  SM90_BWD_TRACE_PU_HDR(trace_unit, CD_SM90_BWD_TRACE_C_P_END);
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
  /* knob 2's dynamic scheduler; not on the 80-row tile, whose calls are unmasked (bwd_launch.cuh
   * cd_sm90_bwd_takes_bm80) and whose kernel, with any atom.global in its producer, had ptxas
   * serialize its wgmmas (C7512): it keeps knob 1's static stride, unless the consumers fetch
   * (config.cuh SM90_BWD_PERSIST_FETCH 1: the atomic in consumer thread 128 compiles clean) */
  constexpr bool kFetchC = SM90_BWD_PERSIST_FETCH == 1;
  constexpr bool kDyn = SM90_BWD_PERSISTENT == 2 && (BM_ != 80 || kFetchC);
  static_assert((ST & (ST - 1)) == 0, "the ring position wraps at 2^32: ST a power of two");
  static_assert(cd_sm90_regs_fit(tile::PRODUCER_REGS, 2, tile::CONSUMER_REGS),
                "setmaxnreg budgets within the launch allocation (reg_budget.cuh)");
  static_assert(BN * D * 2 <= ST * L::QT_BYTES, "dK / dV staging fits the Q / dO stages");

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (cd_smem_addr(smem_raw) + 1023u) & ~1023u; /* swizzle atoms: 1024 B */
  uint8_t *const gbase = smem_raw + (base - cd_smem_addr(smem_raw));
  const uint32_t sK = base + L::K_OFF, sV = base + L::V_OFF;
  const uint32_t bar_kv = base + L::BAR_OFF;
  const uint32_t bar_q_full = bar_kv + 8, bar_q_empty = bar_q_full + 8 * ST;
  const uint32_t bar_kv_empty = base + P::KV_EMPTY_OFF, bar_epi_done = base + P::EPI_DONE_OFF;
  const uint32_t bar_unit_full = base + P::UNIT_FULL_OFF; /* knob 2 */
  const uint32_t slots = base + P::SLOT_OFF; /* knob 2: int [2] */
  /* kFetchC: as offsets from slots (one register for the three) */
  const uint32_t bar_fetch_full = slots + (P::FETCH_FULL_OFF - P::SLOT_OFF);
  const uint32_t fetch_slots = slots + (P::FETCH_SLOT_OFF - P::SLOT_OFF);
  const int64_t chains = (int64_t)heads_kv * batch;

#if SM90_BWD_PDL
  cd_griddep_launch_dependents(); /* the post waits for this grid's completion (bwd_prepost.cuh) */
#endif
  if (threadIdx.x == 0) { /* before cd_sm90_bwd_setup's fence and __syncthreads */
    cd_mbar_init(bar_kv_empty, 8); /* lane 0 of each consumer warp, once a non-empty unit */
    cd_mbar_init(bar_epi_done, 8); /* likewise, once a unit */
    if constexpr (kDyn) cd_mbar_init(bar_unit_full, 1); /* the producer, once a fetched index */
    if constexpr (kDyn && kFetchC) cd_mbar_init(bar_fetch_full, 1); /* consumer thread 128, once a unit */
  }
  const int wg = cd_sm90_bwd_setup<ST>(tm_q, tm_k, tm_v, tm_do, bar_kv, bar_q_full, bar_q_empty);

  if (wg == 0) {
    /* ================================ producer ================================ */
    cd_setmaxnreg_dec<tile::PRODUCER_REGS>();
    if (threadIdx.x != 0) return;
    SM90_BWD_TRACE_PU_CLEAR();
    uint32_t it = 0;   /* ring position, continued across units (wraps harmlessly: ST divides 2^32) */
    uint32_t kv_n = 0; /* non-empty units loaded so far: kv_full's phase */
    int n_block, hk, b, m_lo, m_hi;
    if constexpr (kDyn) {
      /* the opening comment's order: [K / V of unit k] [k = 0: griddepcontrol.wait] [k > 0: wait
       * epi_done phase k - 1, then publish unit k's index] [Q / dO of unit k] [fetch unit k + 1's] */
      int idx = (int)blockIdx.x; /* unit 0: no fetch (the grid is at most the units) */
      /* kv_n and k (the unit count) as the four bits the waits use, in one register: bit 0 kv_n & 1,
       * bit 1 kv_n > 0, bit 2 k & 1, bit 3 k > 0 (two counters spilled from the 24 registers) */
      uint32_t phases = 0;
      for (;;) {
        const bool valid = cd_sm90_bwd_dyn_work<BM, BN>(args, idx, n_blocks, heads_kv, batch, &n_block, &hk, &b,
                                                        &m_lo, &m_hi);
        if (m_hi > m_lo) { /* K / V under the previous unit's epilogue, as at knob 1 (invalid: 0, 0) */
          if (phases & 2) cd_mbar_wait(bar_kv_empty, (phases & 1) ^ 1); /* phase kv_n - 1 */
          cd_sm90_bwd_persist_load_kv<D, BM, BN, L>(tm_k, tm_v, sK, sV, bar_kv, n_block * BN, hk, b);
          SM90_BWD_TRACE_PU_HDR(idx, CD_SM90_BWD_TRACE_C_P_START);
          phases = (phases ^ 1) | 2; /* ++kv_n */
        }
        if (phases & 8) { /* k > 0 */
          /* every unit's phase in order, empty ones too: unit k's index is published only after
           * phase k - 1, and the consumers cannot complete unit k before reading it */
          cd_mbar_wait(bar_epi_done, ((phases >> 2) & 1) ^ 1); /* phase k - 1 */
          SM90_BWD_TRACE_PU_END(); /* unit k - 1's */
          /* slot k & 1: its previous index, unit k - 2's, was read before unit k - 2 began */
          asm volatile("st.shared.b32 [%0], %1;" ::"r"(slots + 4 * ((phases >> 2) & 1)), "r"(idx) : "memory");
          cd_mbar_arrive(bar_unit_full); /* release: the slot's store before the arrival */
        } else {
#if SM90_BWD_PDL
          cd_griddep_wait(); /* k = 0: the counter (zeroed by the pre), LSE2 / delta: the pre's */
#endif
        }
        if (!valid) return; /* the end marker is published: the consumers stop too */
        cd_sm90_bwd_persist_load_q<D, BM, BN, ST, L, true>(args, tm_q, tm_do, base, bar_q_full, bar_q_empty, m_lo, m_hi,
                                                           hk, b, it, idx);
        phases = (phases ^ 4) | 8; /* ++k */
        if constexpr (kFetchC) {
          /* unit k + 1's index, fetched by consumer thread 128 after its unit k (the CTA's end, as
           * the hardware dispatches the library's grid): fetch_full's phase k, parity k & 1 (bit 2
           * now holds (k + 1) & 1), slot (k + 1) & 1. Never two phases ahead: the consumers end
           * unit k + 1 only after its loads, issued after this wait */
          cd_mbar_wait(bar_fetch_full, ((phases >> 2) & 1) ^ 1);
          asm volatile("ld.shared.b32 %0, [%1];" : "=r"(idx) : "r"(fetch_slots + 4 * ((phases >> 2) & 1)) : "memory");
        } else {
          /* unit k + 1's index, fetched once unit k's Q / dO are issued (close to when this CTA
           * frees: ~ST blocks and an epilogue before); its latency hides behind the next step's
           * kv_empty / epi_done waits */
          idx = cd_sm90_bwd_dyn_fetch(args, batch);
        }
        SM90_BWD_TRACE_PU_FLUSH(it);
      }
    } else {
      int k = 0;
      for (; cd_sm90_bwd_persist_work<BM, BN>(args, k, n_blocks, heads_kv, chains, &n_block, &hk, &b, &m_lo, &m_hi);
           ++k) {
        if (m_hi == m_lo) continue; /* nothing to load; the consumers write zero dK / dV */
        /* K / V of this unit once every consumer warp's last K / V product of the previous one has
         * completed; under the previous unit's epilogue */
        if (kv_n > 0) cd_mbar_wait(bar_kv_empty, (kv_n - 1) & 1);
        cd_sm90_bwd_persist_load_kv<D, BM, BN, L>(tm_k, tm_v, sK, sV, bar_kv, n_block * BN, hk, b);
        SM90_BWD_TRACE_PU_HDR(cd_sm90_bwd_persist_unit((int)blockIdx.x, k, (int)gridDim.x), CD_SM90_BWD_TRACE_C_P_START);
#if SM90_BWD_PDL
        if (kv_n == 0) cd_griddep_wait(); /* once: LSE2 / delta below are the pre kernel's */
#endif
        ++kv_n;
        /* the Q / dO stages hold the previous unit's dK / dV staging until its epilogue is done */
        if (k > 0) {
          cd_mbar_wait(bar_epi_done, (uint32_t)(k - 1) & 1);
          SM90_BWD_TRACE_PU_END(); /* unit k - 1's */
        }
        cd_sm90_bwd_persist_load_q<D, BM, BN, ST, L>(args, tm_q, tm_do, base, bar_q_full, bar_q_empty, m_lo, m_hi, hk,
                                                     b, it, cd_sm90_bwd_persist_unit((int)blockIdx.x, k, (int)gridDim.x));
        SM90_BWD_TRACE_PU_FLUSH(it);
      }
#if SM90_BWD_TRACE
      if (k > 0) { /* the last unit's end (phase k - 1: no later unit, so none ahead) */
        cd_mbar_wait(bar_epi_done, (uint32_t)(k - 1) & 1);
        SM90_BWD_TRACE_PU_END();
      }
#endif
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
  if constexpr (kDyn) {
    int idx = (int)blockIdx.x; /* unit 0: its own index */
    for (uint32_t k = 0;
         cd_sm90_bwd_dyn_work<BM, BN>(args, idx, n_blocks, heads_kv, batch, &n_block, &hk, &b, &m_lo, &m_hi);
         ++k) { /* false: the end marker */
      SM90_BWD_TRACE_PU_BEGIN(idx, n_block, hk, b, args.group * (m_hi - m_lo));
      cd_sm90_bwd_consumer_unit<D, kFp16, CD_SM90_BWD_NONDET, false, BM_, false, true>(
          args, base, gbase, n_block, hk, b, m_lo, m_hi, 0, 0, cw, warp, lane, head_dim, head_dim_v, 0.f, kv_n & 1,
          it, bar_kv_empty, bar_epi_done);
      if (m_hi > m_lo) ++kv_n;
      if constexpr (kFetchC) {
        if (threadIdx.x == 128) { /* unit k + 1's index for the producer: fetch_full's phase k */
          asm volatile("st.shared.b32 [%0], %1;" ::"r"(fetch_slots + 4 * ((k + 1) & 1)),
                       "r"(cd_sm90_bwd_dyn_fetch(args, batch)) : "memory");
          cd_mbar_arrive(bar_fetch_full); /* release: the slot's store before the arrival */
        }
      }
      /* unit k + 1's index: unit_full's phase k (every consumer thread waits), slot (k + 1) & 1 */
      cd_mbar_wait(bar_unit_full, k & 1);
      asm volatile("ld.shared.b32 %0, [%1];" : "=r"(idx) : "r"(slots + 4 * ((k + 1) & 1)) : "memory");
    }
  } else {
    for (int k = 0;
         cd_sm90_bwd_persist_work<BM, BN>(args, k, n_blocks, heads_kv, chains, &n_block, &hk, &b, &m_lo, &m_hi);
         ++k) {
      SM90_BWD_TRACE_PU_BEGIN(cd_sm90_bwd_persist_unit((int)blockIdx.x, k, (int)gridDim.x), n_block, hk, b,
                              args.group * (m_hi - m_lo));
      cd_sm90_bwd_consumer_unit<D, kFp16, CD_SM90_BWD_NONDET, false, BM_, false, true>(
          args, base, gbase, n_block, hk, b, m_lo, m_hi, 0, 0, cw, warp, lane, head_dim, head_dim_v, 0.f, kv_n & 1,
          it, bar_kv_empty, bar_epi_done);
      if (m_hi > m_lo) ++kv_n;
    }
  }
}

#endif /* CUDADENT_SM90_BWD_PERSIST_CUH */
