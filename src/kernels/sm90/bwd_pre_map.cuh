/*
 * bwd_pre_map.cuh - which thread of the Hopper backward's pre kernels (bwd_prepost.cuh
 * cd_sm90_bwd_pre, bwd_varlen_plan.cuh cd_sm90_bwd_varlen_pre) takes which query row and which
 * float4 of the zeroed fp32 dQ accumulator at config.cuh SM90_BWD_PRE_FAST 1, host and device, so
 * that tests/test_tile_order.cu checks the mapping on the CPU.
 *
 * A CTA of THREADS threads takes CTA_ROWS = RPT x ROWS consecutive rows (ROWS = THREADS / TPR: TPR
 * threads a row, as at 0): thread t's row j is t / TPR + j ROWS of them. The accumulator holds D
 * floats a row, row after row, so the CTA's rows are CTA_ROWS x D / 4 consecutive float4s; thread
 * t zeroes float4s k THREADS + t of them (k < ZERO4), so that a warp's store covers 512 contiguous
 * bytes, four whole 128-byte lines. (At 0 each thread zeroes its own row's D / TPR floats: a
 * warp's store writes 16 bytes of every 32-byte sector it touches, docs/kernels/sm90_bwd_next.md
 * section 8.)
 */
#ifndef CUDADENT_SM90_BWD_PRE_MAP_CUH
#define CUDADENT_SM90_BWD_PRE_MAP_CUH

#include <stdint.h>

/* The pre kernels' threads a row: one per 8 columns of O and dO (a 16-byte load each) where DV / 8
 * is a power of two (the rows' shuffle sum); else the largest power of two dividing it (DV 96: 4
 * threads of 24 columns, three loads each). */
template <int DV> __host__ __device__ constexpr int cd_sm90_bwd_pre_tpr() {
  return (DV / 8) & -(DV / 8);
}

/* The bytes of O and dO a thread of the dense pre loads before it uses any (its rows' chunks: 32
 * CH bytes a row): rows a thread RPT = this / (32 CH), at least 1. 64: two rows where a thread
 * takes one 16-byte chunk of each (DV 64, 128, 256; 192 / 128), one at DV 96 (three chunks, 96
 * bytes already). */
#define CD_SM90_BWD_PRE_LOAD_BYTES 64

/* Rows a thread of the dense pre at SM90_BWD_PRE_FAST 1, for CH 16-byte chunks a row. */
__host__ __device__ constexpr int cd_sm90_bwd_pre_rpt(int ch) {
  return CD_SM90_BWD_PRE_LOAD_BYTES / (32 * ch) > 1 ? CD_SM90_BWD_PRE_LOAD_BYTES / (32 * ch) : 1;
}

template <int D, int TPR, int RPT, int THREADS> struct cd_sm90_bwd_pre_map {
  static constexpr int ROWS = THREADS / TPR;  /* rows a pass of the CTA */
  static constexpr int CTA_ROWS = RPT * ROWS; /* rows a CTA */
  static constexpr int CTA_F4 = CTA_ROWS * D / 4; /* the CTA's float4s of the accumulator */
  static constexpr int ZERO4 = CTA_F4 / THREADS;  /* float4s a thread zeroes */
  static_assert(THREADS % TPR == 0 && THREADS % 32 == 0 && D % 4 == 0, "whole rows and warps");
  static_assert(CTA_F4 % THREADS == 0, "every thread the same number of float4s");

  /* Thread t's row j (< RPT) of CTA cta, over the kernel's rows. */
  __host__ __device__ static int64_t row(int64_t cta, int t, int j) {
    return cta * CTA_ROWS + j * ROWS + t / TPR;
  }
  /* Thread t's float4 k (< ZERO4) among the CTA's, from the CTA's first (float4 cta * CTA_F4 of
   * the accumulator). */
  __host__ __device__ static int zero4(int t, int k) { return k * THREADS + t; }
  /* How many of CTA cta's float4s lie in rows below `total` (the kernel's rows; at most CTA_F4
   * matter): the stores zero4(t, k) < this. */
  __host__ __device__ static int64_t zero4_end(int64_t cta, int64_t total) {
    return (total - cta * CTA_ROWS) * (D / 4);
  }
};

/* Query row i of (batch b, head h) to the row `rows` further over [batch][heads_q][sq_pad]: a row
 * past sq_pad carries into the next head, past the last head into the next batch. rows <= sq_pad
 * (the pre's ROWS <= 64, the smallest BLOCK_M; sq_pad a positive multiple of BLOCK_M): one carry. */
__host__ __device__ __forceinline__ void cd_sm90_bwd_pre_next_row(int &b, int &h, int &i, int rows, int sq_pad,
                                                                int heads_q) {
  i += rows;
  if (i >= sq_pad) {
    i -= sq_pad;
    if (++h == heads_q) {
      h = 0;
      ++b;
    }
  }
}

#endif /* CUDADENT_SM90_BWD_PRE_MAP_CUH */
