/*
 * epilogue_fwd.cuh - the end of a tile for one consumer warpgroup of the sm90 forward: O / l in
 * 16 bits through shared memory to a TMA store, and the LSE.
 */
#ifndef CUDADENT_SM90_EPILOGUE_FWD_CUH
#define CUDADENT_SM90_EPILOGUE_FWD_CUH

#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include "kernels/sm90/fwd_tiles.cuh"
#include "kernels/sm90/fwd_varlen_plan.cuh"
#include "kernels/sm90/gemm.cuh"
#include "kernels/sm90/mainloop_fwd.cuh"
#include "kernels/sm90/ptx_sm90.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

/* What a row r's 16-byte chunk index is XORed with in a staging slab of ROW_BYTES-byte rows, as
 * TMA's swizzle of the same span places it: 128 (the 128-byte swizzle) r % 8; 64 (the 64-byte
 * swizzle of the d96 rows' 32-column slabs, fwd_tiles.cuh SLAB_COLS) (r / 2) % 4. */
template <int ROW_BYTES>
__device__ __forceinline__ int cd_sm90_fwd_swizzle_xor(int r) {
  static_assert(ROW_BYTES == 128 || ROW_BYTES == 64, "the 128- or the 64-byte swizzle");
  if constexpr (ROW_BYTES == 128) return r & 7;
  else return (r >> 1) & 3;
}

/* The end of a tile for one consumer: O / l -> 16-bit -> this warp's 16 rows of the consumer's O
 * staging (stmatrix) -> TMA store by the warp's lane 0 (no barrier across the warpgroup), in
 * passes where the staging holds fewer slabs than O (tile O_SLABS); LSE by one
 * thread a row. A row without a visible key (l = 0) gets O = 0 and LSE = -inf. The two rows of a
 * thread go side by side and the LSE stores are predicated, not branched over: this code is on
 * the path from a tile's last P V to the next tile's first S GEMM.
 * kVarlen (fwd_varlen_kernel.cuh; va, q0: the call's arrays and the sequence's first token; args
 * holds the sequence's lengths): LSE at lse[head * total_q + q0 + row]; O rows at tensor row
 * q0 + row, by the TMA store where the warp's 16 rows lie inside the sequence, by st.global from
 * the staged rows (predicated on the row and the real head_dim_v) where the sequence ends inside
 * them, not at all past its end: a TMA box would write into the next sequence's rows (FA3 stores
 * every varlen tile without TMA; §2.6). */
template <class Tile, bool kFp16, bool kVarlen = false>
__device__ __forceinline__ void cd_sm90_fwd_epilogue(
    const float (&o)[cd_sm90_fwd_smem<Tile>::O_REGS], const float (&m)[2], const float (&l)[2],
    const cd_sm90_fwd_tile_coord &tc, const cd_sm90_fwd_args &args, const CUtensorMap *tm_o,
    uint32_t slab, int cw, int warp, int lane, const cd_sm90_fwd_varlen_args *va = nullptr,
    int q0 = 0) {
  typedef Tile tile;
  typedef cd_sm90_fwd_smem<Tile> L;
  constexpr int DV = tile::HEAD_DIM_V, BM = tile::BLOCK_M;
  const int row_in_wg0 = 16 * warp + lane / 4;
  const int row0 = tc.m_block * BM + 64 * cw + row_in_wg0;
  float lt[2], inv[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) /* every column of the ones block holds the row's whole sum */
    lt[r] = tile::ROWSUM_MMA ? o[DV / 2 + 2 * r] : l[r];
  if constexpr (!tile::ROWSUM_MMA) {
#pragma unroll
    for (int r = 0; r < 2; ++r) lt[r] += __shfl_xor_sync(0xffffffffu, lt[r], 1);
#pragma unroll
    for (int r = 0; r < 2; ++r) lt[r] += __shfl_xor_sync(0xffffffffu, lt[r], 2);
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) inv[r] = lt[r] > 0.f ? __fdividef(1.f, lt[r]) : 0.f;
  if (args.lse != nullptr) {
    /* l >= 1 where a row saw a key (its largest P is 1), so lg2 needs no subnormal care */
    float *lse_row =
        kVarlen ? args.lse + (int64_t)tc.head * va->total_q + q0
                : args.lse + ((int64_t)tc.batch * args.sched.heads_q + tc.head) * args.seqlen_q;
    const bool writer = (lane & 3) == 0;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float lse = lt[r] > 0.f ? (m[r] + cd_lg2(lt[r])) * 0.69314718055994531f : -INFINITY;
      if (writer && row0 + 8 * r < args.seqlen_q) lse_row[row0 + 8 * r] = lse;
    }
  }
  /* stmatrix x4 per 16 columns: matrices (rows 0-7, cols 8j..), (rows 8-15, 8j..), (rows 0-7,
   * 8j+8..), (rows 8-15, 8j+8..) of the warp's 16 rows; lane t addresses row t % 8 of matrix t / 8.
   * The row's slabs (fwd_tiles.cuh SLAB_COLS): 64 columns with the 128-byte swizzle (16-byte
   * chunk c of a row goes to chunk c ^ (row % 8)) or 32 with the 64-byte one (c ^ (row / 2 % 4);
   * cd_sm90_fwd_swizzle_xor). O_SLABS < DV / SLAB_COLS: the staging holds O_SLABS slabs, and O
   * goes out in DV / SLAB_COLS / O_SLABS passes through it. */
  constexpr int SR = L::SLAB_ROW, CPS = L::SLAB_COLS / 8; /* a slab row's bytes, 16-byte chunks */
  constexpr int SLAB_BYTES = 64 * SR;                    /* a consumer's 64 rows of one slab */
  const int st_row = 16 * warp + (lane & 7) + ((lane >> 3) & 1) * 8;
  const int st_chunk = lane >> 4;
  constexpr int PASS_COLS = L::SLAB_COLS * tile::O_SLABS;
  /* with passes (the wide rows): a row's base and its chunk swizzle, kept opaque to the compiler
   * (a volatile move here, each tile): else ptxas hoists every stmatrix address out of the tile
   * loop and spills them across the main loop (d256: 40 bytes) */
  uint32_t st_base = slab + st_row * SR;
  uint32_t st_swz = (st_chunk ^ cd_sm90_fwd_swizzle_xor<SR>(st_row)) << 4;
  if constexpr (DV / PASS_COLS > 1) {
    asm volatile("mov.b32 %0, %0;\n" : "+r"(st_base));
    asm volatile("mov.b32 %0, %0;\n" : "+r"(st_swz));
  }
#pragma unroll
  for (int pass = 0; pass < DV / PASS_COLS; ++pass) {
    /* this warp's previous store (the previous tile's, or pass's) must have finished reading its
     * rows before they are rewritten */
    if (lane == 0) cd_tma_store_wait_read<0>();
    __syncwarp();
#pragma unroll
    for (int jp = 0; jp < PASS_COLS / 8; jp += 2) {
      const int j = pass * PASS_COLS / 8 + jp; /* 8-column group of O */
      const int chunk = jp + st_chunk; /* 16-byte chunk across the staged slabs, CPS a slab */
      /* (jp % CPS even, st_chunk its bit 0: chunk % CPS ^ x is jp % CPS ^ st_chunk ^ x) */
      const uint32_t addr =
          DV / PASS_COLS > 1
              ? st_base + (jp / CPS) * SLAB_BYTES + (((uint32_t)(jp % CPS) << 4) ^ st_swz)
              : slab + (chunk / CPS) * SLAB_BYTES + st_row * SR +
                    (((chunk % CPS) ^ cd_sm90_fwd_swizzle_xor<SR>(st_row)) << 4);
      cd_stmatrix_x4(addr, cd_pack2<kFp16>(o[4 * j + 0] * inv[0], o[4 * j + 1] * inv[0]),
                     cd_pack2<kFp16>(o[4 * j + 2] * inv[1], o[4 * j + 3] * inv[1]),
                     cd_pack2<kFp16>(o[4 * j + 4] * inv[0], o[4 * j + 5] * inv[0]),
                     cd_pack2<kFp16>(o[4 * j + 6] * inv[1], o[4 * j + 7] * inv[1]));
    }
    cd_fence_proxy_async_smem(); /* stmatrix above (generic proxy) -> TMA store (async proxy) */
    __syncwarp();
    if constexpr (kVarlen) {
      /* this warp's rows [w0, w0 + 16) of the sequence (uniform across the warp) */
      const int w0 = tc.m_block * BM + 64 * cw + 16 * warp;
      if (w0 + 16 <= args.seqlen_q) {
        if (lane == 0) {
#pragma unroll
          for (int c = 0; c < tile::O_SLABS; ++c)
            cd_tma_store_4d(tm_o, slab + c * SLAB_BYTES + warp * 16 * SR,
                            PASS_COLS * pass + L::SLAB_COLS * c, q0 + w0, tc.head, 0);
          cd_tma_store_commit();
        }
      } else if (w0 < args.seqlen_q) {
        /* the sequence ends inside the warp's rows: 16-byte chunks from the staged rows (the
         * stmatrix writes above are the warp's own, ordered by the __syncwarp) */
        constexpr int CPR = PASS_COLS / 8; /* chunks a row in this pass */
#pragma unroll 1
        for (int i = lane; i < 16 * CPR; i += 32) {
          const int r = i / CPR, c = i % CPR, row = 16 * warp + r;
          const int col = PASS_COLS * pass + 8 * c;
          if (w0 + r < args.seqlen_q && col < va->dv) {
            const uint32_t src = slab + (c / CPS) * SLAB_BYTES + row * SR +
                                 (((c % CPS) ^ cd_sm90_fwd_swizzle_xor<SR>(row)) << 4);
            uint32_t x0, x1, x2, x3;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(x0), "=r"(x1), "=r"(x2), "=r"(x3)
                         : "r"(src)
                         : "memory");
            uint16_t *dst = va->o + (int64_t)(q0 + w0 + r) * va->o_ss + (int64_t)tc.head * va->o_sh + col;
            *reinterpret_cast<uint4 *>(dst) = make_uint4(x0, x1, x2, x3);
          }
        }
      }
    } else if (lane == 0) {
      /* rows [16 warp, 16 warp + 16) of each slab: 2 or 1 KiB, 1024-byte aligned */
#pragma unroll
      for (int c = 0; c < tile::O_SLABS; ++c)
        cd_tma_store_4d(tm_o, slab + c * SLAB_BYTES + warp * 16 * SR, PASS_COLS * pass + L::SLAB_COLS * c,
                        tc.m_block * BM + 64 * cw + 16 * warp, tc.head, tc.batch);
      cd_tma_store_commit();
    }
  }
}

#endif /* CUDADENT_SM90_EPILOGUE_FWD_CUH */
