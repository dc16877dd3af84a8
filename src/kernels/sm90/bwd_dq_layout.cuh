/*
 * bwd_dq_layout.cuh - the dQ accumulator layout of the Hopper backward's 80-row tile (config.cuh
 * SM90_BWD_D128_BM80), host and device, so that tests/test_tile_order.cu checks it on the CPU:
 * where the post kernel (bwd_prepost.cuh cd_sm90_bwd_post) reads each float4 of the transposed
 * dQ parts, and where consumer 0's lanes add theirs from registers when the tile's dQ leaves by
 * two paths (config.cuh SM90_BWD_BM80_DQ_SPLIT; bwd_parts.cuh cd_sm90_bwd_reduce_dq).
 */
#ifndef CUDADENT_SM90_BWD_DQ_LAYOUT_CUH
#define CUDADENT_SM90_BWD_DQ_LAYOUT_CUH

#include <stdint.h>

/* A consumer warp's dQ part at the 80-row tile: 16 D columns x 80 query rows of dQ^T (bwd_parts.cuh
 * cd_sm90_bwd_smem DQ_FLOATS) */
#define CD_SM90_BWD_DQ80_PART_FLOATS (16 * 80)

/* BM 80 (config.cuh SM90_BWD_D128_BM80, D 128): the parts are transposed (dQ^T = K^T dS^T), chunks
 * of 1280 floats, chunk 4 cw + warp consumer cw's warp's 16 D columns x 80 rows, float4 i * 32 +
 * lane its registers 4i .. 4i + 3: (column, row) = (c, g), (c, g + 1), (c + 8, g), (c + 8, g + 1)
 * with c = 64 cw + 16 warp + lane / 4, g = 8 i + 2 (lane % 4) . */
__host__ __device__ __forceinline__ void cd_sm90_bwd_dq_frag_t(int f, int &row, int &col) {
  const int chunk = f / 320, i = (f / 32) % 10, lane = f % 32;
  const int cw = chunk / 4, warp = chunk % 4;
  col = 64 * cw + 16 * warp + lane / 4;
  row = 8 * i + 2 * (lane % 4);
}

/* Consumer 0's lane `lane` of warp `warp` at the 80-row tile with the dQ split: the float of the
 * query block's accumulator tile where its registers 0 .. 3 go (registers 4i .. 4i + 3: 128 i
 * floats further, float4 i * 32 + lane of chunk `warp`, the staging's order), as an unsigned 32-bit
 * value: ptxas holds it across the block loop in one register, zero-extended by RZ, where the int
 * form was held sign-extended in two beside the bulk path's 64-bit offset, and the 80-row kernels
 * spilled 8 B and serialized their wgmmas (C7512; session 30, docs/kernels/sm90_bwd_next.md
 * section 7). */
__host__ __device__ __forceinline__ uint32_t cd_sm90_bwd_dq80_lane_off(int warp, int lane) {
  return (uint32_t)(warp * CD_SM90_BWD_DQ80_PART_FLOATS + lane * 4);
}

#endif /* CUDADENT_SM90_BWD_DQ_LAYOUT_CUH */
