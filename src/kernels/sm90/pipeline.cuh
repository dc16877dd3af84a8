/*
 * pipeline.cuh - a ring of STAGES shared-memory buffers between a TMA producer and wgmma
 * consumers, as a pair of mbarrier arrays (full[STAGES], empty[STAGES]), and the position in it.
 *
 * Usage (one ring, e.g. K blocks; see fwd_kernel.cuh for three rings sharing one barrier area):
 *   typedef cd_sm90_pipeline<STAGES> Ring;       // Ring::BAR_BYTES of barriers, 8-byte aligned
 *   const Ring ring = Ring::at(bar_base);        // full[] at bar_base, empty[] right after
 *   if (threadIdx.x == 0) { for (s..) ring.init_stage(s, 1, consumer_warps); cd_mbar_fence_init(); }
 *   __syncthreads();
 *   producer (one thread):                       consumers (every warp's lane 0 arrives):
 *     cd_sm90_pipe_state<STAGES> w = {0, 0};       cd_sm90_pipe_state<STAGES> r = {0, 0};
 *     for (each block) {                           for (each block) {
 *       ring.producer_acquire(w);                    ring.consumer_wait(r);
 *       ring.producer_expect_tx(w, BYTES);           ... wgmma on stage r.stage, cd_wgmma_wait ...
 *       cd_tma_load_4d(dst(w.stage), map,               ring.consumer_release(r, lane == 0);
 *                   ring.full_bar(w.stage), ...);    r.advance();
 *       w.advance();                               }
 *     }
 * full[s] completes when the producer's arrival (expect_tx) and the TMA's bytes are in; empty[s]
 * when every consumer warp has arrived (init_stage's consumer count) after its last read of the
 * stage (for wgmma: after the cd_wgmma_wait that retires it). A ring's first use of a stage waits on
 * empty with parity phase ^ 1 = 1, which a fresh mbarrier reports complete (ptx_sm90.cuh
 * cd_mbar_try_wait), so the producer starts without the consumers. The state is two registers; in
 * warp-specialized kernels keep it warp-uniform (fwd_kernel.cuh broadcasts it: cd_sm90_uniform).
 * A ring whose uses are counted (one use per tile, say) takes cd_sm90_pipe_state::of_count(n).
 */
#ifndef CUDADENT_SM90_PIPELINE_CUH
#define CUDADENT_SM90_PIPELINE_CUH

#include <stdint.h>
#include "kernels/sm90/ptx_sm90.cuh"

/* The two fields of a pipe state, in one of two orders. The order changes nothing but the order
 * of the loop-carried values in the compiled code, which ptxas's register allocation follows:
 * kStageFirst lets a kernel keep the machine code of the scalar (stage, phase) pair it replaced
 * (fwd_kernel.cuh's producer and its lagging V position). New code: the default. */
template <bool kStageFirst> struct cd_sm90_pipe_fields { uint32_t phase, stage; };
template <> struct cd_sm90_pipe_fields<true> { uint32_t stage, phase; };

/* Which stage of a STAGES-deep ring, and the parity of its current use (flips at each wrap). */
template <int STAGES, bool kStageFirst = false>
struct cd_sm90_pipe_state : cd_sm90_pipe_fields<kStageFirst> {
  using cd_sm90_pipe_fields<kStageFirst>::stage;
  using cd_sm90_pipe_fields<kStageFirst>::phase;

  /* the next use: stage + 1, wrapping to 0 with the parity flipped (branch-free; the statement
   * order of advance and advance_if is the one whose machine code the forward had before) */
  __device__ __forceinline__ void advance() {
    const uint32_t next = stage + 1;
    const bool wrap = next == STAGES;
    phase ^= wrap;
    stage = wrap ? 0 : next;
  }
  /* advance where c, else stay (the producer's K position: only loaded blocks count) */
  __device__ __forceinline__ void advance_if(bool c) {
    const uint32_t inc = stage + 1;
    const bool at_end = inc == STAGES;
    const uint32_t next = c ? inc : stage;
    const bool wrap = c && at_end;
    stage = wrap ? 0 : next;
    phase ^= wrap;
  }
  /* the state after n advances from {0, 0} */
  static __device__ __forceinline__ cd_sm90_pipe_state of_count(uint32_t n) {
    cd_sm90_pipe_state s;
    s.stage = n % STAGES;
    s.phase = (n / STAGES) & 1;
    return s;
  }
};

/* The barriers of a STAGES-deep ring: full[s] at full + 8 s, empty[s] at empty + 8 s (shared
 * addresses, mbarriers of 8 bytes). */
template <int STAGES> struct cd_sm90_pipeline {
  static constexpr int BAR_BYTES = 2 * 8 * STAGES; /* full[STAGES], then empty[STAGES] */
  uint32_t full, empty;

  static __device__ __forceinline__ cd_sm90_pipeline at(uint32_t bar_base) {
    cd_sm90_pipeline p;
    p.full = bar_base;
    p.empty = bar_base + 8 * STAGES;
    return p;
  }
  __device__ __forceinline__ uint32_t full_bar(uint32_t stage) const { return full + 8 * stage; }
  __device__ __forceinline__ uint32_t empty_bar(uint32_t stage) const { return empty + 8 * stage; }

  /* one thread, before the barriers' first use (then cd_mbar_fence_init and a CTA barrier):
   * full[s] completes on producer_arrivals arrivals (plus the expected bytes), empty[s] on
   * consumer_arrivals */
  __device__ __forceinline__ void init_stage(int s, uint32_t producer_arrivals,
                                             uint32_t consumer_arrivals) const {
    cd_mbar_init(full + 8 * s, producer_arrivals);
    cd_mbar_init(empty + 8 * s, consumer_arrivals);
  }

  /* producer: wait until the consumers have freed the stage (its previous use) */
  template <bool F>
  __device__ __forceinline__ void producer_acquire(const cd_sm90_pipe_state<STAGES, F> &s) const {
    cd_mbar_wait(empty_bar(s.stage), s.phase ^ 1);
  }
  /* producer: arrive on full and announce the bytes the TMA loads will complete */
  template <bool F>
  __device__ __forceinline__ void producer_expect_tx(const cd_sm90_pipe_state<STAGES, F> &s, uint32_t bytes) const {
    cd_mbar_arrive_expect_tx(full_bar(s.stage), bytes);
  }
  /* consumer: wait until the stage's data has landed */
  template <bool F>
  __device__ __forceinline__ void consumer_wait(const cd_sm90_pipe_state<STAGES, F> &s) const { cd_mbar_wait(full_bar(s.stage), s.phase); }
  /* consumer: free the stage (one arrival where pred; a predicated instruction, no branch) */
  template <bool F>
  __device__ __forceinline__ void consumer_release(const cd_sm90_pipe_state<STAGES, F> &s, int pred) const {
    cd_mbar_arrive_if(empty_bar(s.stage), pred);
  }
};

#endif /* CUDADENT_SM90_PIPELINE_CUH */
