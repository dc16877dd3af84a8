/*
 * fwd_smem.cuh - the portable forward's shared-memory tiles (fwd_kernel.cuh): the swizzled
 * offset of a 16-byte chunk, the ldmatrix addresses, and the cp.async tile loader. The first two
 * are host functions too, for dev/sm80_fwd/check_layout.cu.
 */
#ifndef CUDADENT_SM80_FWD_SMEM_CUH
#define CUDADENT_SM80_FWD_SMEM_CUH

#include <stdint.h>
#include "kernels/sm80/ptx_sm80.cuh"
#include "kernels/sm80/swizzle.cuh"

/* Byte offset of 16-byte chunk c of row r in a swizzled tile of CHUNKS chunks per row. This and
 * cd_sm80_fwd_ldsm_addr are host functions too, for dev/sm80_fwd/check_layout.cu (no device code
 * changes). */
template <int CHUNKS>
__host__ __device__ __forceinline__ uint32_t cd_sm80_fwd_swz(int r, int c) {
  return (uint32_t)((r * CHUNKS + (c ^ cd_sm80_swz_key<CHUNKS>(r))) * 16);
}

/* Shared address of a swizzled ldmatrix access: lane base (see the kernel), plus a row offset
 * (multiple of 8 rows), at 16-element k-step (or n-step) kk: 2 kk chunks on, the part inside the
 * swizzle group of G chunks (swizzle.cuh) by XOR, the whole groups by an add. */
template <int CHUNKS>
__host__ __device__ __forceinline__ uint32_t cd_sm80_fwd_ldsm_addr(uint32_t lane_base,
                                                                   int row_off_bytes, int kk) {
  constexpr int G = cd_sm80_swz_group<CHUNKS>::VALUE, LOG2_HALF_G = G == 8 ? 2 : 1;
  return (lane_base ^ (uint32_t)((kk & (G / 2 - 1)) * 32)) +
         (uint32_t)((kk >> LOG2_HALF_G) * G * 16 + row_off_bytes);
}

/* 16-byte chunks a thread-row of a tile load covers: the whole row where it divides the
 * threads into row passes of a multiple of 8 rows (D = 64: 8, D = 128: 16), else a group of 8
 * (D = 192: 3 groups) or 16 (D = 256: 2 groups) chunks, or of 4 (D = 96: 3 groups): a multiple
 * of the swizzle group, so a group starts on one and its chunk offsets stay immediates. */
template <int D> struct cd_sm80_fwd_ld_chunks {
  static constexpr int CHUNKS = D / 8;
  static constexpr int VALUE =
      CHUNKS % 8 != 0 ? 4 : CHUNKS <= 16 ? CHUNKS : CHUNKS % 16 == 0 ? 16 : 8;
};

/* Start cp.async loads of this thread's share of a ROWS x D tile. With LC =
 * cd_sm80_fwd_ld_chunks<D> chunks a thread-row, the thread copies chunk ld_c = tid % LC of each
 * LC-chunk group gi of rows r0 + it * ROWS_PER_PASS, r0 = tid / LC (ROWS_PER_PASS = THREADS / LC,
 * a multiple of 8, so the swizzle repeats and shared offsets are immediates).
 *   dst:  shared address of the thread's first chunk, cd_sm80_fwd_swz(r0, ld_c) into the tile
 *   src:  global address of that chunk; row_stride: elements between rows
 *   left: rows_valid - r0; with PRED, rows at or past it are zero-filled (read from safe
 *         instead); without PRED every row is read (a full tile)
 *   col_left: real chunks of a row (head_dim / 8 or head_dim_v / 8) - ld_c; with PAD, group gi's
 *         chunk is zero-filled (read from safe instead) where gi * LC >= col_left; without PAD
 *         every chunk is read
 * safe: any valid global address (the tensor's base); a zero-filled chunk reads nothing. */
template <typename T, int ROWS, int D, int THREADS, bool PRED, bool PAD>
CUDADENT_DEVICE void cd_sm80_fwd_load_tile(uint32_t dst, const T *src, int64_t row_stride, int left,
                                           int col_left, const void *safe) {
  constexpr int CHUNKS = D / 8;
  constexpr int LC = cd_sm80_fwd_ld_chunks<D>::VALUE;
  constexpr int GROUPS = CHUNKS / LC;
  constexpr int ROWS_PER_PASS = THREADS / LC;
  static_assert(THREADS % LC == 0 && ROWS_PER_PASS % 8 == 0 && ROWS % ROWS_PER_PASS == 0 &&
                    CHUNKS % LC == 0 && LC % cd_sm80_swz_group<CHUNKS>::VALUE == 0,
                "tile rows must divide among threads");
  const int64_t step = (int64_t)ROWS_PER_PASS * row_stride;
#pragma unroll
  for (int it = 0; it < ROWS / ROWS_PER_PASS; ++it) {
#pragma unroll
    for (int gi = 0; gi < GROUPS; ++gi) {
      const uint32_t d = dst + it * ROWS_PER_PASS * CHUNKS * 16 + gi * LC * 16;
      const T *s = src + gi * LC * 8;
      if (PRED || PAD) {
        const bool valid = (!PRED || it * ROWS_PER_PASS < left) && (!PAD || gi * LC < col_left);
        cd_cp_async_cg16_zfill(d, valid ? (const void *)s : safe, valid);
      } else {
        cd_cp_async_cg16(d, s);
      }
    }
    src += step;
  }
}

#endif /* CUDADENT_SM80_FWD_SMEM_CUH */
