/*
 * bwd_prepost.cuh - kernels 1 and 3 of the sm80 backward (bwd.cu): cd_sm80_bwd_pre (delta, the
 * dQ accumulator zeroed) and cd_sm80_bwd_dq (dQ from the accumulator's slices). Included by bwd.cu
 * only. Both are compiled per width D and PAD as the main kernel (bwd_parts.cuh): with PAD, delta
 * reads head_dim_v columns and dQ's store stops at head_dim; the accumulator rows have D columns.
 * Varlen calls run cd_sm80_bwd_pre_varlen and cd_sm80_bwd_dq_varlen (the dense kernels keep their
 * names and argument; instantiated in bwd_varlen.cu).
 */
#ifndef CUDADENT_SM80_BWD_PREPOST_CUH
#define CUDADENT_SM80_BWD_PREPOST_CUH

#include "kernels/sm80/bwd_parts.cuh"

/* ---- kernel 1: delta and zeroing ---------------------------------------------------------------- */

template <typename T, int D, bool PAD>
__global__ void __launch_bounds__(SM80_BWD_ROW_THREADS)
cd_sm80_bwd_pre(const cd_sm80_bwd_args_t a) {
  /* threads per row, 8 elements each (D / 8, but at W 96 / 192: 32, 12 / 24 of them reading) */
  constexpr int TPR = cd_sm80_bwd_shape<D>::PRE_TPR;
  constexpr int ROWS = SM80_BWD_ROW_THREADS / TPR;
  const int64_t row = (int64_t)blockIdx.x * ROWS + threadIdx.x / TPR; /* over batch*hq*sq_pad */
  const int c = threadIdx.x % TPR;
  const int64_t total = (int64_t)a.batch * a.hq * a.sq_pad;
  const bool in = row < total;
  const int64_t bh = in ? row / a.sq_pad : 0;
  const int i = in ? (int)(row - bh * a.sq_pad) : 0;
  const int b = (int)(bh / a.hq), h = (int)(bh - (int64_t)b * a.hq);
  float sum = 0.f;
  /* the thread's chunk is in the row: with PAD below dim_v (<= D); without, where TPR * 8 > D
   * (W 96's exact kernel), below D / 8 */
  if (in && i < a.sq && (!PAD || c * 8 < a.dim_v) && (PAD || TPR * 8 == D || c < D / 8)) {
    const uint4 ov = *(const uint4 *)((const uint16_t *)a.o + b * a.o_sb + i * a.o_ss + h * a.o_sh + c * 8);
    const uint4 dv = *(const uint4 *)((const uint16_t *)a.dout + b * a.do_sb + i * a.do_ss + h * a.do_sh + c * 8);
    const T *o8 = (const T *)&ov, *d8 = (const T *)&dv;
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += (float)o8[e] * (float)d8[e];
  }
#pragma unroll
  for (int m = TPR / 2; m > 0; m >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  if (!in) return;
  if (c == 0) a.delta[row] = sum;
  const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
  for (int s = 0; s < a.splits; ++s) {
    if (TPR * 8 == D) {
      float4 *p = (float4 *)(a.dq_acc + s * a.slice + row * D + c * 8);
      p[0] = z;
      p[1] = z;
    } else { /* W 96, 192: the row's D / 4 float4 over TPR threads */
      float4 *p = (float4 *)(a.dq_acc + s * a.slice + row * D);
#pragma unroll
      for (int f = c; f < D / 4; f += TPR) p[f] = z;
    }
  }
}

/* varlen (bwd_parts.cuh cd_sm80_bwd_varlen_args_t): delta of every (head, token) of q, laid out
 * [heads_q][total_q] as the LSE (tokens in no sequence too: in range, never read), and every
 * row of every accumulator slice zeroed (a grid-stride loop over its float4s: the rows per head
 * are a.sq_pad = total_q + batch BM, not a multiple of the tokens). One row per TPR threads as
 * the dense kernel. */
template <typename T, int D, bool PAD>
__global__ void __launch_bounds__(SM80_BWD_ROW_THREADS)
cd_sm80_bwd_pre_varlen(const cd_sm80_bwd_args_t a, const cd_sm80_bwd_varlen_args_t v) {
  constexpr int TPR = cd_sm80_bwd_shape<D>::PRE_TPR;
  constexpr int ROWS = SM80_BWD_ROW_THREADS / TPR;
  const int64_t row = (int64_t)blockIdx.x * ROWS + threadIdx.x / TPR; /* over heads_q * total_q */
  const int c = threadIdx.x % TPR;
  const int64_t total = (int64_t)a.hq * v.total_q;
  const bool in = row < total;
  const int h = in ? (int)(row / v.total_q) : 0;
  const int64_t t = in ? row - (int64_t)h * v.total_q : 0; /* the token */
  float sum = 0.f;
  if (in && (!PAD || c * 8 < a.dim_v) && (PAD || TPR * 8 == D || c < D / 8)) { /* as dense */
    const uint4 ov = *(const uint4 *)((const uint16_t *)a.o + t * a.o_ss + (int64_t)h * a.o_sh + c * 8);
    const uint4 dv = *(const uint4 *)((const uint16_t *)a.dout + t * a.do_ss + (int64_t)h * a.do_sh + c * 8);
    const T *o8 = (const T *)&ov, *d8 = (const T *)&dv;
#pragma unroll
    for (int e = 0; e < 8; ++e) sum += (float)o8[e] * (float)d8[e];
  }
#pragma unroll
  for (int m = TPR / 2; m > 0; m >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  if (in && c == 0) a.delta[row] = sum;
  const float4 z = make_float4(0.f, 0.f, 0.f, 0.f);
  const int64_t n4 = (int64_t)a.hq * a.sq_pad * (D / 4); /* float4s of a slice's rows */
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int s = 0; s < a.splits; ++s) {
    float4 *p = (float4 *)(a.dq_acc + s * a.slice);
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += step) p[i] = z;
  }
}

/* ---- kernel 3: dQ from the accumulator ----------------------------------------------------------- */

/* The fp32 dQ accumulator of one (batch, head, query tile) is a contiguous [BM * D] block in
 * fragment order: float4 number ((warp * Q_MT + mt) * Q_NT + nt) * 32 + lane holds the mma
 * accumulator {c0, c1, c2, c3} of that warp / fragment / lane, i.e. rows (g, g, g+8, g+8) and
 * columns (2t, 2t+1, 2t, 2t+1) of the fragment. Each warp's reduction then covers 512 contiguous
 * bytes (4 wavefronts) instead of 8 rows. Returns the (row, col) of element c0 of float4 f. */
template <int D, bool LARGE = false> CD_SM80_BWD_HD void cd_sm80_bwd_dq_frag(int f, int &row, int &col) {
  typedef cd_sm80_bwd_shape<D, LARGE> Sh;
  constexpr int Q_MT = Sh::Q_TM / 16, Q_NT = Sh::Q_TD / 8;
  const int lane = f & 31, nt = (f >> 5) % Q_NT, mt = (f >> 5) / Q_NT % Q_MT;
  const int warp = (f >> 5) / (Q_NT * Q_MT);
  row = (warp % Sh::Tile::DQ_WARPS_M) * Sh::Q_TM + mt * 16 + (lane >> 2);
  col = cd_sm80_bwd_wcol<Sh::Q_TD, Sh::Q_IL>(warp / Sh::Tile::DQ_WARPS_M) +
        cd_sm80_bwd_ncol<Sh::Q_IL>(nt) + 2 * (lane & 3);
}

/* One CTA per (query tile, head, batch): sums the accumulator slices in slice order
 * (deterministic), scales, converts, transposes through shared memory ([BM][D], swizzled), and
 * stores whole rows (where PAD, their first head_dim columns) with 16-byte writes. VARLEN: batch
 * is the sequence and the query tiles are those of max_seqlen_q: a CTA past its sequence's end
 * returns; the tile's accumulator block starts at the sequence's acc0, its rows go to the
 * sequence's tokens. LARGE: the width's large tile (its BLOCK_M and dQ warp layout). */
template <typename T, int D, bool PAD, bool VARLEN, bool LARGE = false>
__device__ __forceinline__ void cd_sm80_bwd_dq_body(const cd_sm80_bwd_args_t a,
                                                    const cd_sm80_bwd_varlen_args_t v) {
  typedef cd_sm80_bwd_shape<D, LARGE> Sh;
  constexpr int BM = Sh::BM, THREADS = Sh::THREADS, F4 = BM * D / 4 / THREADS;
  __shared__ __align__(16) unsigned char tile[BM * D * 2];
  const int m0 = blockIdx.x * BM, h = blockIdx.y, b = blockIdx.z;
  cd_sm80_bwd_seq_t sv = {0, 0, 0, 0, 0};
  if (VARLEN) {
    sv = cd_sm80_bwd_varlen_seq<BM>(a, v, b);
    if (m0 >= sv.sq) return; /* the whole CTA: past the sequence's end */
  }
  const int64_t bh = VARLEN ? (int64_t)h : (int64_t)b * a.hq + h;
  const float4 *src = (const float4 *)(a.dq_acc + (bh * a.sq_pad + sv.acc0 + m0) * D);
  float4 acc[F4];
#pragma unroll
  for (int i = 0; i < F4; ++i) acc[i] = src[threadIdx.x + i * THREADS];
  for (int s = 1; s < a.splits; ++s) { /* fixed order: deterministic */
    const float4 *p = (const float4 *)((const float *)src + s * a.slice);
#pragma unroll
    for (int i = 0; i < F4; ++i) {
      const float4 x = p[threadIdx.x + i * THREADS];
      acc[i].x += x.x; acc[i].y += x.y; acc[i].z += x.z; acc[i].w += x.w;
    }
  }
#pragma unroll
  for (int i = 0; i < F4; ++i) {
    int row, col;
    cd_sm80_bwd_dq_frag<D, LARGE>(threadIdx.x + i * THREADS, row, col);
    *(uint32_t *)(tile + cd_sm80_bwd_swz<D>(row, col)) = cd_pack2<T>(acc[i].x * a.scale, acc[i].y * a.scale);
    *(uint32_t *)(tile + cd_sm80_bwd_swz<D>(row + 8, col)) = cd_pack2<T>(acc[i].z * a.scale, acc[i].w * a.scale);
  }
  __syncthreads(); /* tile complete */
  if (VARLEN)
    cd_sm80_bwd_store_tile<BM, D, THREADS, PAD>(
        (uint16_t *)a.dq + ((int64_t)sv.q0 + m0) * a.dq_ss + (int64_t)h * a.dq_sh, a.dq_ss, tile,
        sv.sq - m0, threadIdx.x, a.dim_qk);
  else
    cd_sm80_bwd_store_tile<BM, D, THREADS, PAD>((uint16_t *)a.dq + b * a.dq_sb + (int64_t)m0 * a.dq_ss + h * a.dq_sh,
                                                a.dq_ss, tile, a.sq - m0, threadIdx.x, a.dim_qk);
}

template <typename T, int D, bool PAD>
__global__ void __launch_bounds__(cd_sm80_bwd_shape<D>::THREADS)
cd_sm80_bwd_dq(const cd_sm80_bwd_args_t a) {
  const cd_sm80_bwd_varlen_args_t none = {NULL, NULL, NULL, 0, 0}; /* never read */
  cd_sm80_bwd_dq_body<T, D, PAD, false>(a, none);
}

template <typename T, int D, bool PAD>
__global__ void __launch_bounds__(cd_sm80_bwd_shape<D>::THREADS)
cd_sm80_bwd_dq_varlen(const cd_sm80_bwd_args_t a, const cd_sm80_bwd_varlen_args_t v) {
  cd_sm80_bwd_dq_body<T, D, PAD, true>(a, v);
}

/* The large tile's convert kernels (dispatch.h CUDADENT_SM80_BWD_W256_M64): the accumulator of
 * the large tile's main kernel is in its fragment order, [BM][D] blocks of its BLOCK_M. Compiled
 * as a trap where the architecture cannot hold the large main kernel's shared memory (they run
 * only after it: bwd_main.cuh cd_sm80_bwd_launch). */
template <typename T, int D, bool PAD>
__global__ void __launch_bounds__(cd_sm80_bwd_shape<D, true>::THREADS)
cd_sm80_bwd_dq_large(const cd_sm80_bwd_args_t a) {
  const cd_sm80_bwd_varlen_args_t none = {NULL, NULL, NULL, 0, 0}; /* never read */
  if constexpr (cd_sm80_bwd_shape<D, true>::SMEM <= CD_SM80_BWD_ARCH_SMEM)
    cd_sm80_bwd_dq_body<T, D, PAD, false, true>(a, none);
  else
    __trap(); /* a tile this architecture cannot hold: never launched on it */
}

template <typename T, int D, bool PAD>
__global__ void __launch_bounds__(cd_sm80_bwd_shape<D, true>::THREADS)
cd_sm80_bwd_dq_varlen_large(const cd_sm80_bwd_args_t a, const cd_sm80_bwd_varlen_args_t v) {
  if constexpr (cd_sm80_bwd_shape<D, true>::SMEM <= CD_SM80_BWD_ARCH_SMEM)
    cd_sm80_bwd_dq_body<T, D, PAD, true, true>(a, v);
  else
    __trap(); /* as above */
}

#endif /* CUDADENT_SM80_BWD_PREPOST_CUH */
