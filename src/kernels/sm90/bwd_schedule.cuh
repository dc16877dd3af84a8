/*
 * bwd_schedule.cuh - which (key block, KV head, batch) each CTA of the sm90 backward takes, as a
 * pure function of its linear launch index (the hardware starts CTAs in that order, x fastest).
 * Host and device (tests/test_tile_order.cu walks it on the CPU). The kernel's use and the knob:
 * bwd_parts.cuh cd_sm90_bwd_work_of_block and cd_sm90_bwd_walk_m (and the varlen order in bwd_kernel.cuh), config.cuh SM90_BWD_LPT_GROUP.
 */
#ifndef CUDADENT_SM90_BWD_SCHEDULE_CUH
#define CUDADENT_SM90_BWD_SCHEDULE_CUH

#include <stdint.h>

#include "kernels/sm90/config.cuh" /* SM90_BWD_LPT_GROUP */

/* Launch index `linear` of n_blocks key blocks x chains (KV head, batch) CTAs, chains taken
 * `group` at a time and key blocks ascending across each group (n-major: for a causal mask the
 * heaviest CTAs first), chain = KV head + heads_kv * batch: the CTA's key block, KV head, batch.
 * I: the arithmetic's type (int64_t, the library's; int where the caller knows linear and
 * n_blocks x chains below 2^31: the dynamic persistent producer, whose 24 registers spilled with
 * the 64-bit divisions' subroutine). */
template <typename I = int64_t>
__host__ __device__ __forceinline__ void cd_sm90_bwd_grouped_work(int64_t linear_, int n_blocks,
                                                                  int heads_kv, int64_t chains_,
                                                                  int group, int *n_block, int *hk,
                                                                  int *b) {
  const I linear = (I)linear_, chains = (I)chains_;
  const I g = linear / ((I)group * n_blocks), first = g * group;
  const I size = chains - first < group ? chains - first : group;
  const I i = linear - first * n_blocks; /* within the group: n-major */
  const I chain = first + i % size;
  *n_block = (int)(i / size);
  *hk = (int)(chain % heads_kv);
  *b = (int)(chain / heads_kv);
}

/* The library's non-deterministic launch order (bwd_parts.cuh cd_sm90_bwd_work_of_block, where
 * SM90_BWD_LPT_GROUP > 0): launch index `linear`'s key block, KV head and batch, SM90_BWD_LPT_GROUP
 * chains a group for calls with a right mask bound (window_right >= 0: causal, windows; the
 * heaviest key blocks first), one chain a group (chain by chain) otherwise. The dynamic persistent
 * scheduler (config.cuh SM90_BWD_PERSISTENT 2, bwd_persist.cuh) decodes its fetched indices with
 * the same function. */
__host__ __device__ __forceinline__ int cd_sm90_bwd_order_group(int window_right) {
  return window_right >= 0 && SM90_BWD_LPT_GROUP > 0 ? SM90_BWD_LPT_GROUP : 1;
}
template <typename I = int64_t>
__host__ __device__ __forceinline__ void cd_sm90_bwd_order_work(int64_t linear, int n_blocks, int heads_kv,
                                                                int64_t chains, int window_right, int *n_block,
                                                                int *hk, int *b) {
  cd_sm90_bwd_grouped_work<I>(linear, n_blocks, heads_kv, chains, cd_sm90_bwd_order_group(window_right), n_block, hk,
                           b);
}

/* The deterministic mode's rotated walks (no mask; bwd_parts.cuh cd_sm90_bwd_walk_m): the query
 * block that key block n visits at walk index j (m_lo <= j < m_hi, n < m_hi - m_lo): step j - m_lo
 * of a walk that starts at block m_lo + n and wraps. */
__host__ __device__ __forceinline__ int cd_sm90_bwd_rotated_m(int j, int m_lo, int m_hi, int n) {
  const int m = j + n;
  return m >= m_hi ? m - (m_hi - m_lo) : m;
}

/* Key block n's turn at query block m in the rotated walks (n < nb <= nm query blocks, m < nm,
 * m_lo = 0): how many key blocks reach m at an earlier step, those n' < nb in the cyclic range
 * (n, m]. */
__host__ __device__ __forceinline__ int cd_sm90_bwd_rotated_turn(int n, int m, int nb) {
  const int upto = m < nb - 1 ? m : nb - 1;
  return n <= m ? upto - n : (nb - 1 - n) + (m + 1 < nb ? m + 1 : nb);
}

/* Persistent CTAs (config.cuh SM90_BWD_PERSISTENT, a dev build's; bwd_persist.cuh): a grid of
 * cd_sm90_bwd_persist_grid(units, sms) CTAs, one a SM, over `units` equal units (dense calls
 * without a mask); CTA `cta` of `grid` takes, as its k-th unit, launch index cta + k * grid of the
 * non-persistent order (cd_sm90_bwd_grouped_work), while that is below `units`: a static stride,
 * balanced because the units are equal work, each CTA's sequence increasing. */
__host__ __device__ __forceinline__ int cd_sm90_bwd_persist_grid(int64_t units, int sms) {
  return units < (int64_t)sms ? (int)units : sms;
}
__host__ __device__ __forceinline__ int64_t cd_sm90_bwd_persist_unit(int cta, int k, int grid) {
  return (int64_t)cta + (int64_t)k * grid;
}

/* The dynamic scheduler (SM90_BWD_PERSISTENT 2, bwd_persist.cuh): a CTA's first unit is its own
 * index (cta < grid, no fetch); each later one is launch index grid + the value its producer
 * fetched from the unit counter (atomicAdd(counter, 1), the counter zeroed by the pre kernel), so
 * the fetches hand out grid, grid + 1, ... in the order they reach the counter; an index >= units
 * ends the CTA. */
__host__ __device__ __forceinline__ int64_t cd_sm90_bwd_dyn_unit(int grid, int fetched) {
  return (int64_t)grid + fetched;
}

#endif /* CUDADENT_SM90_BWD_SCHEDULE_CUH */
