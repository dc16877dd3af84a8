/*
 * softmax.cuh - the sm80 forward's online softmax over score tiles held in mma.m16n8 accumulator
 * fragments.
 *
 * Layout (ptx_sm80.cuh): a warp's score tile of M_TILES x N_TILES m16n8 fragments; in fragment
 * [mt][nt] a thread holds row g (elements 0,1) and row g+8 (elements 2,3), g = lane / 4, at
 * columns nt*8 + 2*(lane % 4) + {0,1}. So each thread holds 2 * M_TILES rows, indexed
 * r = 2*mt + half, and the four threads of a quad (same g) share a row: row reductions are a
 * thread-local loop plus two xor-shuffles.
 *
 * Running statistics per row, in raw score units (scale not applied): row_max (m) and the
 * thread-local partial row_sum (l, summed across the quad only at the end). Probabilities are
 * p = 2^(s * scale_log2 - m * scale_log2) with scale_log2 = softmax_scale * log2(e), one FFMA and
 * one ex2.approx each. A row that has seen only masked (-inf) scores keeps m = -inf; it is
 * exponentiated against 0 instead, so every p and correction is exactly 0 and nothing is NaN.
 */
#ifndef CUDADENT_SM80_SOFTMAX_CUH
#define CUDADENT_SM80_SOFTMAX_CUH

#include "kernels/common/ptx.cuh"

#define CD_NEG_INF (__int_as_float(0xff800000u))

/* Max / sum over the four threads of a quad (lanes 4g..4g+3). */
CUDADENT_DEVICE float cd_sm80_fwd_quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
  return x;
}
CUDADENT_DEVICE float cd_sm80_fwd_quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  return x;
}

/* One online-softmax step for a new score tile s (in place: scores in, probabilities out).
 * Updates row_max / row_sum and rescales the output accumulator o (M_TILES x O_TILES m16n8
 * fragments) by 2^((m_old - m_new) * scale_log2). */
template <int M_TILES, int N_TILES, int O_TILES>
CUDADENT_DEVICE void cd_sm80_fwd_softmax_online_step(float (&s)[M_TILES][N_TILES][4],
                                                     float (&o)[M_TILES][O_TILES][4],
                                                     float (&row_max)[2 * M_TILES],
                                                     float (&row_sum)[2 * M_TILES], float scale_log2) {
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = 2 * mt + half;
      float mx = row_max[r];
#pragma unroll
      for (int nt = 0; nt < N_TILES; ++nt)
        mx = fmaxf(mx, fmaxf(s[mt][nt][2 * half], s[mt][nt][2 * half + 1]));
      mx = cd_sm80_fwd_quad_max(mx);
      const float m_use = mx == CD_NEG_INF ? 0.f : mx; /* all masked so far: keep p = 0 */
      const float corr = cd_exp2((row_max[r] - m_use) * scale_log2); /* -inf - x -> 0 */
      row_max[r] = mx;
      row_sum[r] *= corr;
#pragma unroll
      for (int ot = 0; ot < O_TILES; ++ot) {
        o[mt][ot][2 * half] *= corr;
        o[mt][ot][2 * half + 1] *= corr;
      }
      const float bias = m_use * scale_log2;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < N_TILES; ++nt) {
        const float p0 = cd_exp2(fmaf(s[mt][nt][2 * half], scale_log2, -bias));
        const float p1 = cd_exp2(fmaf(s[mt][nt][2 * half + 1], scale_log2, -bias));
        s[mt][nt][2 * half] = p0;
        s[mt][nt][2 * half + 1] = p1;
        sum += p0 + p1;
      }
      row_sum[r] += sum;
    }
  }
}

#endif /* CUDADENT_SM80_SOFTMAX_CUH */
