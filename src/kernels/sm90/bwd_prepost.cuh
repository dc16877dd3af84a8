/*
 * bwd_prepost.cuh - the two passes around the Hopper backward's main kernel (bwd_kernel.cuh).
 *
 * cd_sm90_bwd_pre, one group of TPR threads per query row of [batch][heads_q][sq_pad] (rows past
 *   seqlen_q included; TPR = cd_sm90_bwd_pre_tpr, DV / 8 but 4 at DV 96): delta = rowsum(dO * O) in fp32 over the real head_dim_v columns (0 past
 *   seqlen_q); LSE2 = LSE * log2(e),
 *   +inf where the row adds nothing (LSE = -inf: a row that sees no key; rows past seqlen_q), so
 *   that P = exp2(S * scale * log2(e) - LSE2) is 0 there, never NaN; and zeroes the row's share
 *   of the fp32 dQ accumulator (the accumulator has sq_pad * D floats per (batch, head), as many
 *   as the rows have elements, so the rows zero it whole); in the deterministic mode also the
 *   query blocks' semaphores. Its row work (cd_sm90_bwd_dot8, _row_sum, _lse2, _zero_acc) is
 *   shared with the varlen pre (bwd_varlen_plan.cuh cd_sm90_bwd_varlen_pre). config.cuh
 *   SM90_BWD_PRE_FAST 1 (the library's since session 31) gives both the same outputs another
 *   way (cd_sm90_bwd_pre_fast: whole-sector zero stores, all loads first; bwd_pre_map.cuh says
 *   which thread takes what).
 * cd_sm90_bwd_post, one CTA per (query block, head, batch): dQ = softmax_scale * accumulator, from
 *   the main kernel's fragment order (below) to the caller's layout, through shared memory so that
 *   the global stores are 16-byte rows, of the real head_dim columns only.
 * D is the compiled width of Q/K (and of the dQ accumulator), DV of V (O, dO): a row of the tile
 * table (bwd_tiles.cuh: 64 / 64, 128 / 128, 192 / 128, 256 / 256); a call's real head_dim and
 * head_dim_v may be any multiples of 8 up to them (bwd.cu).
 */
#ifndef CUDADENT_SM90_BWD_PREPOST_CUH
#define CUDADENT_SM90_BWD_PREPOST_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "kernels/sm90/bwd_kernel.cuh"
#include "kernels/sm90/bwd_pre_map.cuh"

#define SM90_BWD_PREPOST_THREADS 256

template <bool kFp16> struct cd_sm90_bwd_dtype { typedef __nv_bfloat16 type; };
template <> struct cd_sm90_bwd_dtype<true> { typedef __half type; };

struct cd_sm90_bwd_io {
  const void *o, *dout;
  void *dq;
  const float *lse;
  int64_t o_sb, o_ss, o_sh, do_sb, do_ss, do_sh, dq_sb, dq_ss, dq_sh; /* elements */
  float *lse2, *delta, *dq_acc;
  int *dq_sem; /* deterministic mode: one per (batch, head, query block of BM); else NULL */
  int batch, heads_q, seqlen_q, sq_pad;
  int head_dim, head_dim_v; /* the call's real ones (<= D): O, dO and dQ have no column past */
  float scale;
};

/* The pre kernels' row work, dense (below) and varlen (bwd_varlen_plan.cuh). A thread's part of
 * delta: O . dO over its 8 columns (ov, dv: 8 elements each). */
template <bool kFp16>
__device__ __forceinline__ float cd_sm90_bwd_dot8(const uint4 ov, const uint4 dv) {
  typedef typename cd_sm90_bwd_dtype<kFp16>::type T;
  const T *o8 = (const T *)&ov, *d8 = (const T *)&dv;
  float sum = 0.f;
#pragma unroll
  for (int e = 0; e < 8; ++e) sum += (float)o8[e] * (float)d8[e];
  return sum;
}

/* A thread's part of a row's delta where it takes CH > 1 chunks of 8 columns, from column 8 CH c
 * on: those below head_dim_v (the caller has checked the first; o, d: the row's O and dO). */
template <bool kFp16, int CH>
__device__ __forceinline__ float cd_sm90_bwd_row_part(const uint16_t *o, const uint16_t *d, int c, int head_dim_v) {
  float sum = cd_sm90_bwd_dot8<kFp16>(*(const uint4 *)(o + c * CH * 8), *(const uint4 *)(d + c * CH * 8));
#pragma unroll
  for (int k = 1; k < CH; ++k)
    if ((c * CH + k) * 8 < head_dim_v)
      sum += cd_sm90_bwd_dot8<kFp16>(*(const uint4 *)(o + (c * CH + k) * 8), *(const uint4 *)(d + (c * CH + k) * 8));
  return sum;
}

/* A row's delta: the parts of its TPR threads summed (every thread of the warp calls it). */
template <int TPR> __device__ __forceinline__ float cd_sm90_bwd_row_sum(float sum) {
#pragma unroll
  for (int m = TPR / 2; m > 0; m >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  return sum;
}

/* LSE2 of a row from its LSE: LSE log2(e); +inf for a row that adds nothing (LSE -inf). */
__device__ __forceinline__ float cd_sm90_bwd_lse2(float lse) {
  return lse == -INFINITY ? INFINITY : lse * 1.4426950408889634f;
}

/* This thread's ZERO floats (from column c * ZERO) of row `row` of the D-wide accumulator: 0. */
template <int D, int ZERO>
__device__ __forceinline__ void cd_sm90_bwd_zero_acc(float *dq_acc, int64_t row, int c) {
  const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
  float4 *p = (float4 *)(dq_acc + row * D + c * ZERO);
#pragma unroll
  for (int k = 0; k < ZERO / 4; ++k) p[k] = z;
}

#if SM90_BWD_PRE_FAST
/* ---- the pre kernels' row work at config.cuh SM90_BWD_PRE_FAST 1 (bwd_pre_map.cuh) ---- */

/* The chunks of a row a thread sums (those of cd_sm90_bwd_row_part: 8 CH c on, below head_dim_v)
 * where `live` (the row's first chunk of the thread is real), else zeros: one predicated
 * ld.global.cs a chunk (evict-first: the pre reads O and dO once), no branch. (Under a branch the
 * compiler unpacked a row's bf16 pairs inside it, right after its loads, so the thread waited for
 * them before the next row's loads issued.) */
template <int CH>
__device__ __forceinline__ void cd_sm90_bwd_row_load(uint4 (&v)[CH], const uint16_t *row, int c, int head_dim_v,
                                                     bool live) {
#pragma unroll
  for (int k = 0; k < CH; ++k) {
    const int read = live && (k == 0 || (c * CH + k) * 8 < head_dim_v);
    v[k] = make_uint4(0u, 0u, 0u, 0u);
    asm volatile("{\n .reg .pred p;\n setp.ne.b32 p, %5, 0;\n @p ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];\n}\n"
                 : "+r"(v[k].x), "+r"(v[k].y), "+r"(v[k].z), "+r"(v[k].w)
                 : "l"(row + (c * CH + k) * 8), "r"(read)
                 : "memory");
  }
}

/* A thread's part of a row's delta from its loaded chunks: cd_sm90_bwd_row_part's sum, in its order. */
template <bool kFp16, int CH>
__device__ __forceinline__ float cd_sm90_bwd_row_dot(const uint4 (&o)[CH], const uint4 (&d)[CH], int c, int head_dim_v) {
  float sum = cd_sm90_bwd_dot8<kFp16>(o[0], d[0]);
#pragma unroll
  for (int k = 1; k < CH; ++k)
    if ((c * CH + k) * 8 < head_dim_v) sum += cd_sm90_bwd_dot8<kFp16>(o[k], d[k]);
  return sum;
}

/* CTA cta's rows of the D-wide accumulator, those below `total` (M: the kernel's
 * cd_sm90_bwd_pre_map), zeroed by float4s M::zero4: each warp store 512 contiguous bytes. */
template <class M>
__device__ __forceinline__ void cd_sm90_bwd_zero_cta(float *dq_acc, int64_t cta, int64_t total) {
  const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
  float4 *p = (float4 *)dq_acc + cta * M::CTA_F4;
  const int64_t end = M::zero4_end(cta, total);
#pragma unroll
  for (int k = 0; k < M::ZERO4; ++k)
    if (M::zero4(threadIdx.x, k) < end) p[M::zero4(threadIdx.x, k)] = z;
}

/* The dense pre's body at SM90_BWD_PRE_FAST 1: cd_sm90_bwd_pre's outputs, the same bits, from RPT
 * rows a thread (cd_sm90_bwd_pre_rpt). The CTA's accumulator zeroed first (the stores wait for
 * nothing; written after the loads, they were issued after the first row's sum, i.e. after the
 * loads' round trip), then every load (O and dO of its rows; LSE by a row's first thread: at 0 it
 * is read after the sum, a second round trip), then each row's delta, LSE2 and semaphore. */
template <bool kFp16, int D, int DV>
__device__ __forceinline__ void cd_sm90_bwd_pre_fast(const cd_sm90_bwd_io &io) {
  constexpr int TPR = cd_sm90_bwd_pre_tpr<DV>(), CH = DV / 8 / TPR, RPT = cd_sm90_bwd_pre_rpt(CH);
  typedef cd_sm90_bwd_pre_map<D, TPR, RPT, SM90_BWD_PREPOST_THREADS> M;
  constexpr int BM = cd_sm90_bwd_tile<D, DV>::BLOCK_M; /* sq_pad is a multiple: row / BM is the block */
  static_assert(M::ROWS <= BM, "cd_sm90_bwd_pre_next_row's one carry: ROWS <= sq_pad (a multiple of BM or 80)");
  const int c = threadIdx.x % TPR;
  const int64_t total = (int64_t)io.batch * io.heads_q * io.sq_pad;
  cd_sm90_bwd_zero_cta<M>(io.dq_acc, blockIdx.x, total);
  /* row 0's (batch, head, query row) by division, the next ones by cd_sm90_bwd_pre_next_row (a
   * row past total gets any: nothing is read or written for it) */
  const int64_t row0 = M::row(blockIdx.x, threadIdx.x, 0), bh0 = row0 / io.sq_pad;
  int b = (int)(bh0 / io.heads_q), h = (int)(bh0 - (int64_t)b * io.heads_q), i = (int)(row0 - bh0 * io.sq_pad);
  uint4 ov[RPT][CH], dv[RPT][CH];
  float lse[RPT];
  int qi[RPT];
  bool live[RPT];
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const bool q = M::row(blockIdx.x, threadIdx.x, j) < total && i < io.seqlen_q;
    live[j] = q && c * CH * 8 < io.head_dim_v; /* only O's and dO's real columns */
    cd_sm90_bwd_row_load<CH>(ov[j], (const uint16_t *)io.o + b * io.o_sb + i * io.o_ss + h * io.o_sh, c,
                             io.head_dim_v, live[j]);
    cd_sm90_bwd_row_load<CH>(dv[j], (const uint16_t *)io.dout + b * io.do_sb + i * io.do_ss + h * io.do_sh, c,
                             io.head_dim_v, live[j]);
    lse[j] = q && c == 0 ? io.lse[((int64_t)b * io.heads_q + h) * io.seqlen_q + i] : -INFINITY;
    qi[j] = i;
    cd_sm90_bwd_pre_next_row(b, h, i, M::ROWS, io.sq_pad, io.heads_q);
  }
#pragma unroll
  for (int j = 0; j < RPT; ++j) {
    const int64_t row = M::row(blockIdx.x, threadIdx.x, j);
    const float sum = cd_sm90_bwd_row_sum<TPR>(live[j] ? cd_sm90_bwd_row_dot<kFp16, CH>(ov[j], dv[j], c, io.head_dim_v) : 0.f);
    if (c == 0 && row < total) {
      if (io.dq_sem != nullptr && qi[j] % BM == 0) io.dq_sem[row / BM] = 0;
      io.delta[row] = sum;
      io.lse2[row] = cd_sm90_bwd_lse2(lse[j]);
    }
  }
}
#endif

/* The dense pre's rows a CTA (the launch's grid: bwd_launch.cuh): a row a thread group at 0, RPT
 * at SM90_BWD_PRE_FAST 1. */
template <int DV> __host__ __device__ constexpr int cd_sm90_bwd_pre_cta_rows() {
  constexpr int TPR = cd_sm90_bwd_pre_tpr<DV>();
  return (SM90_BWD_PRE_FAST ? cd_sm90_bwd_pre_rpt(DV / 8 / TPR) : 1) * (SM90_BWD_PREPOST_THREADS / TPR);
}

template <bool kFp16, int D, int DV = D>
__global__ void __launch_bounds__(SM90_BWD_PREPOST_THREADS) cd_sm90_bwd_pre(const cd_sm90_bwd_io io) {
#if SM90_BWD_PDL
  /* the main kernel (launched with PDL) may be scheduled once every CTA of this one has started:
   * all of them are then resident or done, so none waits for an SM behind the main kernel's CTAs,
   * which wait (griddepcontrol.wait) for this grid's completion before reading what it writes.
   * This kernel is the call's first, launched plainly: it waits for nothing. */
  cd_griddep_launch_dependents();
#endif
#if SM90_BWD_PERSISTENT == 2
  /* the dynamic scheduler's unit counter (bwd_parts.cuh cd_sm90_bwd_unit_counter; a dev build's):
   * zeroed every non-deterministic call; the persistent kernel touches it only after its
   * griddepcontrol.wait, which returns once this grid has completed and its writes are visible */
  if (io.dq_sem == nullptr && blockIdx.x == 0 && threadIdx.x == 0)
    *cd_sm90_bwd_unit_counter(io.delta, io.batch, io.heads_q, io.sq_pad) = 0;
#endif
#if SM90_BWD_PRE_FAST
  cd_sm90_bwd_pre_fast<kFp16, D, DV>(io);
#else
  constexpr int TPR = cd_sm90_bwd_pre_tpr<DV>(); /* threads per row, CH x 8 elements of O and dO each */
  constexpr int CH = DV / 8 / TPR;
  constexpr int ZERO = D / TPR; /* floats of the row's accumulator (D wide) each thread zeroes */
  static_assert((TPR & (TPR - 1)) == 0 && TPR <= 32 && ZERO % 4 == 0, "rows of whole warp parts");
  constexpr int ROWS = SM90_BWD_PREPOST_THREADS / TPR;
  const int64_t row = (int64_t)blockIdx.x * ROWS + threadIdx.x / TPR; /* over batch*hq*sq_pad */
  const int c = threadIdx.x % TPR;
  const int64_t total = (int64_t)io.batch * io.heads_q * io.sq_pad;
  const bool in = row < total;
  const int64_t bh = in ? row / io.sq_pad : 0;
  const int i = in ? (int)(row - bh * io.sq_pad) : 0;
  const int b = (int)(bh / io.heads_q), h = (int)(bh - (int64_t)b * io.heads_q);
  float sum = 0.f;
  if (in && i < io.seqlen_q && c * CH * 8 < io.head_dim_v) { /* only O's and dO's real columns */
    if constexpr (CH == 1) {
      const uint4 ov = *(const uint4 *)((const uint16_t *)io.o + b * io.o_sb + i * io.o_ss + h * io.o_sh + c * 8);
      const uint4 dv =
          *(const uint4 *)((const uint16_t *)io.dout + b * io.do_sb + i * io.do_ss + h * io.do_sh + c * 8);
      sum = cd_sm90_bwd_dot8<kFp16>(ov, dv);
    } else {
      sum = cd_sm90_bwd_row_part<kFp16, CH>((const uint16_t *)io.o + b * io.o_sb + i * io.o_ss + h * io.o_sh,
                                            (const uint16_t *)io.dout + b * io.do_sb + i * io.do_ss + h * io.do_sh,
                                            c, io.head_dim_v);
    }
  }
  sum = cd_sm90_bwd_row_sum<TPR>(sum);
  if (!in) return;
  if (c == 0) {
    constexpr int BM = cd_sm90_bwd_tile<D, DV>::BLOCK_M; /* sq_pad is a multiple: row / BM is the block */
    if (io.dq_sem != nullptr && i % BM == 0) io.dq_sem[row / BM] = 0;
    io.delta[row] = sum;
    const float lse = i < io.seqlen_q ? io.lse[bh * io.seqlen_q + i] : -INFINITY;
    io.lse2[row] = cd_sm90_bwd_lse2(lse);
  }
  cd_sm90_bwd_zero_acc<D, ZERO>(io.dq_acc, row, c);
#endif
}

/* The accumulator of one (batch, head, query block) is BM * D floats: BM * D / (16 DQ_N) chunks of
 * 16 x DQ_N (DQ_N: the tile table's, 64 but at d96's 48; BM 64: chunk 4 s + warp holds the part of
 * warp `warp` in the DQ_N-column slab s, cw = s below; the wide kernel's slabs, bwd_wide_kernel.cuh,
 * are the same), chunk 4 cw + warp holding consumer cw's warp's 16 x DQ_N dQ part, float4 i * 32 +
 * lane its fragment registers 4i .. 4i + 3: rows (g, g, g + 8, g + 8), columns (c, c + 1, c, c + 1)
 * with g = 16 warp + lane / 4, c = 8 i + 2 (lane % 4), offset by the consumer's part (rows 64 cw
 * when BM is 128, columns DQ_N cw when BM is 64). */
/* BM 80: bwd_dq_layout.cuh cd_sm90_bwd_dq_frag_t. */
template <int BM, int DQ_N>
__device__ __forceinline__ void cd_sm90_bwd_dq_frag(int f, int &row, int &col) {
  constexpr int F4 = 4 * DQ_N, NI = DQ_N / 8; /* float4s of a chunk (16 x DQ_N), of a lane in it */
  const int chunk = f / F4, i = (f / 32) % NI, lane = f % 32;
  const int cw = chunk / 4, warp = chunk % 4;
  row = 16 * warp + lane / 4 + (BM == 128 ? 64 * cw : 0);
  col = 8 * i + 2 * (lane % 4) + (BM == 64 ? DQ_N * cw : 0);
}

template <bool kFp16, int D, int DV = D, int BM_ = cd_sm90_bwd_tile<D, DV>::BLOCK_M>
__global__ void __launch_bounds__(SM90_BWD_PREPOST_THREADS) cd_sm90_bwd_post(const cd_sm90_bwd_io io) {
  constexpr int BM = BM_, THREADS = SM90_BWD_PREPOST_THREADS;
  static_assert(BM * D % (4 * THREADS) == 0, "whole float4s a thread");
  constexpr int F4 = BM * D / 4 / THREADS;
  constexpr int ROW_BYTES = D * 2 + 16; /* padded rows: the fragment writes spread over banks */
  __shared__ __align__(16) uint8_t tile[BM * ROW_BYTES];
  const int m = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int64_t bh = (int64_t)b * io.heads_q + h;
#if SM90_BWD_PDL
  /* launched with PDL after the main kernel: every thread waits for its completion (the dQ
   * accumulator's bulk reduce-adds performed and visible) before its first read of the
   * accumulator. No launch_dependents: what follows the backward on the caller's stream is
   * released at this grid's completion, as after a plain launch (a dependent launched there with
   * PDL that did not wait would otherwise read dQ while it is written). */
  cd_griddep_wait();
#endif
  const float4 *src = (const float4 *)(io.dq_acc + (bh * (io.sq_pad / BM) + m) * (BM * D));
#pragma unroll
  for (int k = 0; k < F4; ++k) {
    const int f = threadIdx.x + k * THREADS;
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
  __syncthreads();
  constexpr int CPR = D / 8; /* 16-byte chunks per row */
  for (int idx = threadIdx.x; idx < BM * CPR; idx += THREADS) {
    const int row = idx / CPR, c = idx % CPR;
    const int q = m * BM + row;
    if (q >= io.seqlen_q || c >= io.head_dim / 8) continue; /* dQ's real columns only */
    *(uint4 *)((uint16_t *)io.dq + b * io.dq_sb + (int64_t)q * io.dq_ss + h * io.dq_sh + c * 8) =
        *(const uint4 *)(tile + row * ROW_BYTES + c * 16);
  }
}

#endif /* CUDADENT_SM90_BWD_PREPOST_CUH */
