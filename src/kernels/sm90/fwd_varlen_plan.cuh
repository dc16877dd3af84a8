/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * fwd_varlen_plan.cuh - the tile list of a varlen (ragged batch) call of the sm90 forward (§2.6):
 * the device pre-pass that builds it (cd_sm90_fwd_varlen_plan), the per-tile lookup the varlen
 * kernel (fwd_varlen_kernel.cuh) does with it (cd_sm90_fwd_varlen_tile), and the clamping of a
 * sequence's ranges (cudadent.h, "features of layout v2"; the same rule as the portable kernels,
 * sm80/fwd_kernel.cuh cd_sm80_fwd_varlen_q / _k, and kernels/varlen.cu's gap fill). The clamping,
 * the cost bins and the heaviest-first scan are varlen_plan_common.cuh's, shared with the
 * backward's pre-pass (bwd_varlen_plan.cuh).
 *
 * The host never sees the lengths: the grid and the workspace come from host-known bounds.
 * A unit is a (sequence, query block) of BLOCK_M rows; a tile is a unit and a query head (heads
 * fastest: consecutive positions share the unit's K/V under GQA). The pre-pass, one CTA of
 * SM90_VARLEN_PLAN_THREADS threads on the call's stream before the kernel:
 *   1. each thread clamps sequences b = tid, tid + threads, ..., and counts each of their units
 *      into a shared histogram by cost (the key blocks the unit's rows see, cd_mask_kv_blocks;
 *      clipped at SM90_VARLEN_COST_BINS - 1);
 *   2. a block scan turns the histogram, heaviest bin first, into each bin's first slot;
 *   3. each thread writes its units to their bins' next slots (shared atomics): the list is
 *      sorted by cost, heaviest first (the order within a bin is not fixed; results do not
 *      depend on it, each tile is computed alone). Units with no visible key (cost 0: their
 *      rows get O = 0, LSE = -inf, no load, no GEMM) come last. Query blocks at or past their
 *      sequence's end are not units at all.
 * Workspace (256-byte aligned, cd_sm90_fwd_varlen_workspace): int count at 0 (units in the list;
 * -1: the list did not fit, see below), int4 seqs[cap] at 16 ({q0, k0, len_q, len_k}: the
 * sequence's first query and key token and its clamped lengths, len_k after seqused_k), int
 * m_blocks[cap] after it. cap = min(batch * ceil(max_seqlen_q / 128), ceil(total_q / 128) +
 * batch): every row has BLOCK_M >= 128, and with valid arrays the units number at most
 * sum(ceil(len_b / BLOCK_M)) < total_q / BLOCK_M + batch. Only invalid arrays whose query ranges
 * overlap (cu_seqlens_q decreasing) can have more: then the pre-pass writes count = -1 and the
 * kernel walks every (sequence, query block < ceil(max_seqlen_q / BLOCK_M)) in order instead,
 * reading and clamping cu_seqlens per tile and skipping the blocks past a sequence's end (the
 * portable kernels' grid order; unbalanced, but only for arrays the contract calls invalid).
 */
#ifndef CUDADENT_SM90_FWD_VARLEN_PLAN_CUH
#define CUDADENT_SM90_FWD_VARLEN_PLAN_CUH

#include <stdint.h>
#include "kernels/common/mask_rule.cuh"
#include "kernels/sm90/tile_scheduler.cuh"
#include "kernels/sm90/varlen_plan_common.cuh"

#define SM90_VARLEN_UNIT_ROWS 128  /* the smallest BLOCK_M of the tile table: the list's bound */

/* What the varlen kernel and the pre-pass read besides cd_sm90_fwd_args (fwd_launch_varlen in
 * fwd_varlen.cu fills it). max_q / max_k: max_seqlen_q / max_seqlen_k. */
struct cd_sm90_fwd_varlen_args {
  const int32_t *cu_q, *cu_k, *used; /* used (seqused_k) may be NULL */
  int total_q, total_k, max_q, max_k;
  int *count;          /* workspace: units in the list, or -1: walk the fallback order */
  int4 *seqs;          /* workspace [cap]: {q0, k0, len_q, len_k} of each unit's sequence */
  int *m_blocks;       /* workspace [cap]: each unit's query block */
  int cap;             /* the list's capacity */
  int mb_max;          /* ceil(max_q / BLOCK_M): the fallback order's query blocks a sequence */
  int fallback_units;  /* batch * mb_max (clipped so that it times heads_q fits int32) */
  uint16_t *o;         /* O, for the rows of a warp that straddles its sequence's end */
  int64_t o_ss, o_sh;  /* O's token and head strides, elements */
  int dv;              /* the call's head_dim_v: O's columns to store */
};

/* Sequence b's clamped ranges: {q0, k0, len_q, len_k} (varlen_plan_common.cuh). */
__device__ __forceinline__ int4 cd_sm90_fwd_varlen_seq(const cd_sm90_fwd_varlen_args &va, int b) {
  return cd_sm90_varlen_seq(va.cu_q, va.cu_k, va.used, va.total_q, va.total_k, va.max_q, va.max_k,
                            b);
}

/* The pre-pass's walk over the units (steps 1 and 3): thread t's sequences b = t, t + threads,
 * ..., each query block m of each, and its cost bin (the key blocks its rows see, clipped). kPlace
 * false: count the unit into its bin; true: write it to its bin's next slot (slot: each bin's
 * next slot after the scan). */
template <int BM, int BN, bool kPlace>
__device__ __forceinline__ void cd_sm90_fwd_varlen_units(const cd_sm90_fwd_varlen_args &va, int t,
                                                         int batch, int window_left,
                                                         int window_right, int *slot) {
  for (int b = t; b < batch; b += SM90_VARLEN_PLAN_THREADS) {
    const int4 s = cd_sm90_fwd_varlen_seq(va, b);
    const int mb = (s.z + BM - 1) / BM;
    for (int m = 0; m < mb; ++m) {
      int lo, hi;
      cd_mask_kv_blocks<BM, BN>(m, s.z, s.w, window_left, window_right, &lo, &hi);
      const int at = atomicAdd(&slot[cd_sm90_varlen_cost_bin(lo, hi)], 1);
      if constexpr (kPlace) {
        va.seqs[at] = s;
        va.m_blocks[at] = m;
      }
    }
  }
}

/* The plan: one CTA of SM90_VARLEN_PLAN_THREADS (see the header comment). */
template <int BM, int BN>
__global__ void __launch_bounds__(SM90_VARLEN_PLAN_THREADS)
    cd_sm90_fwd_varlen_plan(const cd_sm90_fwd_varlen_args va, int batch, int window_left,
                            int window_right) {
  __shared__ int slot[SM90_VARLEN_COST_BINS]; /* counts, then each bin's next slot */
  __shared__ long long warp_sum[SM90_VARLEN_PLAN_THREADS / 32];
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  slot[t] = 0;
  __syncthreads();
  cd_sm90_fwd_varlen_units<BM, BN, false>(va, t, batch, window_left, window_right, slot);
  __syncthreads();
  long long total;
  const long long first = cd_sm90_varlen_scan_bins(slot, warp_sum, t, lane, w, &total);
  if (total > va.cap) { /* only overlapping (invalid) query ranges: the fallback order */
    if (t == 0) *va.count = -1;
    return; /* the whole CTA: no barrier follows */
  }
  slot[SM90_VARLEN_COST_BINS - 1 - t] = (int)first;
  __syncthreads();
  cd_sm90_fwd_varlen_units<BM, BN, true>(va, t, batch, window_left, window_right, slot);
  if (t == 0) *va.count = (int)total;
}

/* A tile of the varlen kernel: its sequence's {q0, k0, len_q, len_k}, query block and head. */
struct cd_sm90_fwd_varlen_tile {
  int q0, k0, len_q, len_k, m_block, head;
};

/* Tile pos of the kernel's order (pos < units * heads_q): in list mode (list) the unit's entry;
 * else the fallback order's (sequence pos / heads_q / mb_max, block pos / heads_q % mb_max).
 * Returns false for a fallback block at or past its sequence's end (no tile: skip it). */
template <int BM>
__device__ __forceinline__ bool cd_sm90_fwd_varlen_tile_at(int pos, bool list,
                                                           const cd_sm90_fwd_varlen_args &va,
                                                           const cd_sm90_fwd_tile_order &o,
                                                           cd_sm90_fwd_varlen_tile *t) {
  const int unit = cd_sm90_fwd_div(pos, o.by_heads_q);
  t->head = pos - unit * o.heads_q;
  int4 s;
  if (list) {
    s = __ldg(va.seqs + unit);
    t->m_block = __ldg(va.m_blocks + unit);
  } else {
    const int b = unit / va.mb_max;
    t->m_block = unit - b * va.mb_max;
    s = cd_sm90_fwd_varlen_seq(va, b);
  }
  t->q0 = s.x;
  t->k0 = s.y;
  t->len_q = s.z;
  t->len_k = s.w;
  return t->m_block * BM < s.z;
}

#endif /* CUDADENT_SM90_FWD_VARLEN_PLAN_CUH */
