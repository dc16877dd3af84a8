/*
 * bwd_wide_dq.cuh - how the wide rows' main kernels (bwd_wide_kernel.cuh, E3's, E5's) add a
 * consumer's dQ part to the fp32 workspace: from registers (red.global.add.v4), through the warp's
 * staging and the bulk engine, or on the deterministic mode's turn. Moved out of bwd_wide_kernel.cuh (session 25) with the
 * kernels' machine code unchanged.
 */
#ifndef CUDADENT_SM90_BWD_WIDE_DQ_CUH
#define CUDADENT_SM90_BWD_WIDE_DQ_CUH

#include "kernels/sm90/bwd_kernel.cuh"

/* dQ of this warp (its 16 rows of the consumer's Q_N slabs) to the workspace tile `dst` (the
 * (batch, head, query block)'s BM * D_QK floats): red.global.add.v4.f32 of fragment registers
 * 4i .. 4i + 3 at float4 i * 32 + lane of chunk 4 slab + warp (cd_sm90_bwd_dq_frag's order). */
template <int QN, int QLO>
__device__ __forceinline__ void cd_sm90_bwd_wide_red_dq(const float (&dq)[QN * 32], float *tile_dst,
                                                        int warp, int lane) {
  float *const dst = tile_dst + (QLO * 4 + warp) * 1024 + lane * 4;
#pragma unroll
  for (int j = 0; j < QN * 8; ++j)
    if constexpr (SM90_BWD_SKIP_DQ == 2) /* dev measurement (config.cuh): stored, not added */
      asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst + (j / 8) * 4096 + (j % 8) * 128),
                   "f"(dq[4 * j]), "f"(dq[4 * j + 1]), "f"(dq[4 * j + 2]), "f"(dq[4 * j + 3])
                   : "memory");
    else
      asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst + (j / 8) * 4096 + (j % 8) * 128),
                   "f"(dq[4 * j]), "f"(dq[4 * j + 1]), "f"(dq[4 * j + 2]), "f"(dq[4 * j + 3])
                   : "memory");
}

/* The same through this warp's staging (QN 4 KiB parts) and one bulk reduce-add a slab. */
template <int QN, int QLO>
__device__ __forceinline__ void cd_sm90_bwd_wide_bulk_dq(const float (&dq)[QN * 32], float *tile_dst,
                                                         uint32_t stage, int warp, int lane) {
  if (lane == 0) cd_tma_store_wait_read<0>(); /* the previous reduces have read the staging */
  __syncwarp();
#pragma unroll
  for (int j = 0; j < QN * 8; ++j)
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(stage + (j / 8) * 4096 + ((j % 8) * 32 + lane) * 16),
                 "f"(dq[4 * j]), "f"(dq[4 * j + 1]), "f"(dq[4 * j + 2]), "f"(dq[4 * j + 3])
                 : "memory");
  cd_fence_proxy_async_smem(); /* st.shared (generic) -> the bulk reduce (async proxy) */
  __syncwarp();
  if (lane == 0) {
#pragma unroll
    for (int q = 0; q < QN; ++q)
      if constexpr (SM90_BWD_SKIP_DQ == 2)
        cd_bulk_store(tile_dst + ((QLO + q) * 4 + warp) * 1024, stage + q * 4096, 4096); /* dev (config.cuh) */
      else
        cd_bulk_reduce_add_f32(tile_dst + ((QLO + q) * 4 + warp) * 1024, stage + q * 4096, 4096);
    cd_tma_store_commit();
  }
}

/* The deterministic mode (bwd_kernel.cuh section 3 of docs/kernels/sm90_bwd.md: the same turn
 * orders): one thread waits for the block's turn, the 8 consumer warps add their parts from
 * registers, fence them, meet, and the thread counts the block. Not delayed to the next block as
 * the narrow kernels' count is (kept simple; the wide rows' blocks are longer). */
template <int QN, int QLO, int kDet>
__device__ __forceinline__ void cd_sm90_bwd_wide_det_dq(const float (&dq)[QN * 32], const cd_sm90_bwd_args &args,
                                                        float *tile_dst, int64_t tile, int m, int n_block,
                                                        bool leader, int warp, int lane) {
  constexpr int BM = 64, BN = 64;
  int *const sem = cd_sm90_bwd_sems(args) + tile;
  if (leader) cd_sm90_bwd_wait_turn<kDet, BM, BN>(args, sem, m, n_block);
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_DQ_TURN, 256);
  cd_sm90_bwd_wide_red_dq<QN, QLO>(dq, tile_dst, warp, lane);
  asm volatile("fence.acq_rel.gpu;\n" ::: "memory"); /* this thread's sums before the count */
  cd_named_bar_sync_any_pc(CD_SM90_BAR_BWD_DQ_TURN, 256);
  if (leader) asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(sem) : "memory");
}

#endif /* CUDADENT_SM90_BWD_WIDE_DQ_CUH */
