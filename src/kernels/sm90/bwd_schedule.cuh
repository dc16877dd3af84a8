/*
 * bwd_schedule.cuh - which (key block, KV head, batch) each CTA of the sm90 backward takes, as a
 * pure function of its linear launch index (the hardware starts CTAs in that order, x fastest).
 * Host and device (tests/test_tile_order.cu walks it on the CPU). The kernel's use and the knob:
 * bwd_kernel.cuh cd_sm90_bwd_work_of_block, config.cuh SM90_BWD_LPT_GROUP.
 */
#ifndef CUDADENT_SM90_BWD_SCHEDULE_CUH
#define CUDADENT_SM90_BWD_SCHEDULE_CUH

#include <stdint.h>

/* Launch index `linear` of n_blocks key blocks x chains (KV head, batch) CTAs, chains taken
 * `group` at a time and key blocks ascending across each group (n-major: for a causal mask the
 * heaviest CTAs first), chain = KV head + heads_kv * batch: the CTA's key block, KV head, batch. */
__host__ __device__ __forceinline__ void cd_sm90_bwd_grouped_work(int64_t linear, int n_blocks,
                                                                  int heads_kv, int64_t chains,
                                                                  int group, int *n_block, int *hk,
                                                                  int *b) {
  const int64_t g = linear / ((int64_t)group * n_blocks), first = g * group;
  const int64_t size = chains - first < group ? chains - first : group;
  const int64_t i = linear - first * n_blocks; /* within the group: n-major */
  const int64_t chain = first + i % size;
  *n_block = (int)(i / size);
  *hk = (int)(chain % heads_kv);
  *b = (int)(chain / heads_kv);
}

#endif /* CUDADENT_SM90_BWD_SCHEDULE_CUH */
