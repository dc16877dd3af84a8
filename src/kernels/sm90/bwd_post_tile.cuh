/*
 * bwd_post_tile.cuh - one dQ tile of the Hopper backward out of its fp32 accumulator: the
 * accumulator's chunk order (cd_sm90_bwd_dq_frag, _frag_t), the pre and post kernels' arguments
 * (cd_sm90_bwd_io) and the tile's conversion (cd_sm90_bwd_post_tile: scale, dtype, the caller's
 * layout), which the post kernel (bwd_prepost.cuh cd_sm90_bwd_post) runs for its tile and the main
 * kernel of config.cuh's SM90_BWD_FUSED_POST (a dev knob; bwd_kernel.cuh) for the tiles whose last
 * contributor it is. Moved out of bwd_prepost.cuh so that bwd_kernel.cuh can include it (the
 * post's machine code unchanged).
 */
#ifndef CUDADENT_SM90_BWD_POST_TILE_CUH
#define CUDADENT_SM90_BWD_POST_TILE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

#include "kernels/sm90/bwd_tiles.cuh"
#include "kernels/sm90/named_barriers.cuh"
#include "kernels/sm90/ptx_sm90.cuh"

template <bool kFp16> struct cd_sm90_bwd_dtype { typedef __nv_bfloat16 type; };
template <> struct cd_sm90_bwd_dtype<true> { typedef __half type; };

struct cd_sm90_bwd_io {
  const void *o, *dout;
  void *dq;
  const float *lse;
  int64_t o_sb, o_ss, o_sh, do_sb, do_ss, do_sh, dq_sb, dq_ss, dq_sh; /* elements */
  float *lse2, *delta, *dq_acc;
  int *dq_sem; /* deterministic mode and the fused post (SM90_BWD_FUSED_POST): one per (batch,
               * head, query block of BM), zeroed by the pre; else NULL */
  int batch, heads_q, seqlen_q, sq_pad;
  int head_dim, head_dim_v; /* the call's real ones (<= D): O, dO and dQ have no column past */
  float scale;
};

/* The accumulator of one (batch, head, query block) is BM * D floats: BM * D / (16 DQ_N) chunks of
 * 16 x DQ_N (DQ_N: the tile table's, 64 but at d96's 48; BM 64: chunk 4 s + warp holds the part of
 * warp `warp` in the DQ_N-column slab s, cw = s below; the wide kernel's slabs, bwd_wide_kernel.cuh,
 * are the same), chunk 4 cw + warp holding consumer cw's warp's 16 x DQ_N dQ part, float4 i * 32 +
 * lane its fragment registers 4i .. 4i + 3: rows (g, g, g + 8, g + 8), columns (c, c + 1, c, c + 1)
 * with g = 16 warp + lane / 4, c = 8 i + 2 (lane % 4), offset by the consumer's part (rows 64 cw
 * when BM is 128, columns DQ_N cw when BM is 64). */
/* BM 80 (config.cuh SM90_BWD_D128_BM80, D 128): the parts are transposed (dQ^T = K^T dS^T), chunks
 * of 1280 floats, chunk 4 cw + warp consumer cw's warp's 16 D columns x 80 rows, float4 i * 32 +
 * lane its registers 4i .. 4i + 3: (column, row) = (c, g), (c, g + 1), (c + 8, g), (c + 8, g + 1)
 * with c = 64 cw + 16 warp + lane / 4, g = 8 i + 2 (lane % 4) . */
__device__ __forceinline__ void cd_sm90_bwd_dq_frag_t(int f, int &row, int &col) {
  const int chunk = f / 320, i = (f / 32) % 10, lane = f % 32;
  const int cw = chunk / 4, warp = chunk % 4;
  col = 64 * cw + 16 * warp + lane / 4;
  row = 8 * i + 2 * (lane % 4);
}

template <int BM, int DQ_N>
__device__ __forceinline__ void cd_sm90_bwd_dq_frag(int f, int &row, int &col) {
  constexpr int F4 = 4 * DQ_N, NI = DQ_N / 8; /* float4s of a chunk (16 x DQ_N), of a lane in it */
  const int chunk = f / F4, i = (f / 32) % NI, lane = f % 32;
  const int cw = chunk / 4, warp = chunk % 4;
  row = 16 * warp + lane / 4 + (BM == 128 ? 64 * cw : 0);
  col = 8 * i + 2 * (lane % 4) + (BM == 64 ? DQ_N * cw : 0);
}

/* One dQ tile (query block m of head h, batch b; bh = b heads_q + h) out of the accumulator, by
 * THREADS threads (tid: this thread's index among them) through the shared staging `tile`
 * (BM (2 D + 16) bytes): dQ = io.scale * accumulator in the caller's dtype and layout, the real
 * head_dim columns and rows below seqlen_q only. kBar: the barrier between the staging and the
 * row stores, 0 __syncthreads (cd_sm90_bwd_post: the whole CTA), else that named barrier among the
 * THREADS threads (the fused main kernel's consumers, bwd_kernel.cuh SM90_BWD_FUSED_POST). The
 * caller orders the accumulator's sums before the call and a reuse of `tile` after it. */
template <bool kFp16, int D, int DV, int BM, int THREADS, int kBar>
__device__ __forceinline__ void cd_sm90_bwd_post_tile(const cd_sm90_bwd_io &io, int64_t bh, int m, int h, int b,
                                                      int tid, uint8_t *tile) {
  static_assert(BM * D % (4 * THREADS) == 0, "whole float4s a thread");
  constexpr int F4 = BM * D / 4 / THREADS;
  constexpr int ROW_BYTES = D * 2 + 16; /* padded rows: the fragment writes spread over banks */
  const float4 *src = (const float4 *)(io.dq_acc + (bh * (io.sq_pad / BM) + m) * (BM * D));
#pragma unroll
  for (int k = 0; k < F4; ++k) {
    const int f = tid + k * THREADS;
    const float4 a = src[f];
    int row, col;
    if constexpr (BM == 80) { /* transposed parts: four 16-bit stores */
      typedef typename cd_sm90_bwd_dtype<kFp16>::type T;
      cd_sm90_bwd_dq_frag_t(f, row, col);
      *(T *)(tile + row * ROW_BYTES + col * 2) = (T)(a.x * io.scale);
      *(T *)(tile + (row + 1) * ROW_BYTES + col * 2) = (T)(a.y * io.scale);
      *(T *)(tile + row * ROW_BYTES + (col + 8) * 2) = (T)(a.z * io.scale);
      *(T *)(tile + (row + 1) * ROW_BYTES + (col + 8) * 2) = (T)(a.w * io.scale);
    } else {
    cd_sm90_bwd_dq_frag<BM, cd_sm90_bwd_tile<D, DV>::DQ_N>(f, row, col);
    *(uint32_t *)(tile + row * ROW_BYTES + col * 2) = cd_pack2<kFp16>(a.x * io.scale, a.y * io.scale);
    *(uint32_t *)(tile + (row + 8) * ROW_BYTES + col * 2) =
        cd_pack2<kFp16>(a.z * io.scale, a.w * io.scale);
    }
  }
  if constexpr (kBar == 0) __syncthreads();
  else cd_named_bar_sync(kBar, THREADS);
  constexpr int CPR = D / 8; /* 16-byte chunks per row */
  for (int idx = tid; idx < BM * CPR; idx += THREADS) {
    const int row = idx / CPR, c = idx % CPR;
    const int q = m * BM + row;
    if (q >= io.seqlen_q || c >= io.head_dim / 8) continue; /* dQ's real columns only */
    *(uint4 *)((uint16_t *)io.dq + b * io.dq_sb + (int64_t)q * io.dq_ss + h * io.dq_sh + c * 8) =
        *(const uint4 *)(tile + row * ROW_BYTES + c * 16);
  }
}

#endif /* CUDADENT_SM90_BWD_POST_TILE_CUH */
