/*
 * varlen_plan_common.cuh - what the two varlen (ragged batch) pre-passes of the Hopper path share:
 * the forward's cd_sm90_fwd_varlen_plan (fwd_varlen_plan.cuh) and the backward's
 * cd_sm90_bwd_varlen_plan (bwd_varlen_plan.cuh), each one CTA of SM90_VARLEN_PLAN_THREADS that
 * sorts its units heaviest first through a shared histogram of SM90_VARLEN_COST_BINS bins:
 *   cd_sm90_varlen_seq          the clamping of sequence b's ranges (cudadent.h, "features of
 *                               layout v2"; the rule of the portable kernels too);
 *   cd_sm90_varlen_cost_bin     a unit's bin: its cost (blocks it sees), clipped to the bins;
 *   cd_sm90_varlen_scan_bins    the block scan that turns the histogram, heaviest bin first, into
 *                               each bin's first slot.
 * What a unit is, its cost and what the pass writes stay with each pass.
 */
#ifndef CUDADENT_SM90_VARLEN_PLAN_COMMON_CUH
#define CUDADENT_SM90_VARLEN_PLAN_COMMON_CUH

#include <stdint.h>

#define SM90_VARLEN_PLAN_THREADS 1024
#define SM90_VARLEN_COST_BINS 1024 /* one a thread: the scan below relies on it */

/* Sequence b's clamped ranges {q0, k0, len_q, len_k}, len_k after seqused_k (used may be NULL);
 * max_q / max_k: max_seqlen_q / max_seqlen_k. int64 before the clamps, so no entry can wrap. */
__device__ __forceinline__ int4 cd_sm90_varlen_seq(const int32_t *cu_q, const int32_t *cu_k,
                                                   const int32_t *used, int total_q, int total_k,
                                                   int max_q, int max_k, int b) {
  const int64_t qlo = min(max((int64_t)cu_q[b], (int64_t)0), (int64_t)total_q);
  const int64_t qhi = min(max((int64_t)cu_q[b + 1], qlo), min((int64_t)total_q, qlo + max_q));
  const int64_t klo = min(max((int64_t)cu_k[b], (int64_t)0), (int64_t)total_k);
  const int64_t khi = min(max((int64_t)cu_k[b + 1], klo), min((int64_t)total_k, klo + max_k));
  int len_k = (int)(khi - klo);
  if (used != nullptr) len_k = min(max(used[b], 0), len_k);
  return make_int4((int)qlo, (int)klo, (int)(qhi - qlo), len_k);
}

/* The histogram bin of a unit that sees blocks [lo, hi): its cost, clipped to the bins. */
__device__ __forceinline__ int cd_sm90_varlen_cost_bin(int lo, int hi) {
  return min(max(hi - lo, 0), SM90_VARLEN_COST_BINS - 1);
}

/* Exclusive scan of the histogram slot[SM90_VARLEN_COST_BINS] from the heaviest bin down, by the
 * whole CTA (thread t, lane and warp w of the CTA, holds bin BINS - 1 - t; warp_sum: shared, a
 * long long a warp). Returns the first slot of thread t's bin (the units of the heavier bins)
 * and the units in all bins in *total; slot is only read (each pass writes the result back
 * itself). Has barriers: every thread of the CTA calls it. */
__device__ __forceinline__ long long cd_sm90_varlen_scan_bins(const int *slot, long long *warp_sum,
                                                              int t, int lane, int w,
                                                              long long *total) {
  static_assert(SM90_VARLEN_COST_BINS == SM90_VARLEN_PLAN_THREADS, "a bin a thread");
  const long long mine = slot[SM90_VARLEN_COST_BINS - 1 - t];
  long long incl = mine;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const long long x = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += x;
  }
  if (lane == 31) warp_sum[w] = incl;
  __syncthreads();
  if (w == 0) {
    long long ws = warp_sum[lane];
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const long long x = __shfl_up_sync(0xffffffffu, ws, d);
      if (lane >= d) ws += x;
    }
    warp_sum[lane] = ws; /* inclusive over warps */
  }
  __syncthreads();
  *total = warp_sum[SM90_VARLEN_PLAN_THREADS / 32 - 1];
  incl += w > 0 ? warp_sum[w - 1] : 0;
  return incl - mine;
}

#endif /* CUDADENT_SM90_VARLEN_PLAN_COMMON_CUH */
