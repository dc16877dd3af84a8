/*
 * softmax.cuh - the sm90 forward's online softmax on wgmma accumulator fragments (gemm.cuh: a
 * thread holds rows 16 warp + lane / 4 and + 8, element 4j + 2r + e at column 8j + 2 (lane % 4)
 * + e; a row's four threads are a quad).
 *
 * Three ways to take one block: the exact softmax (cd_sm90_fwd_row_max, then
 * cd_sm90_fwd_softmax_exp; or both in cd_sm90_fwd_softmax), the lazy one that keeps the running max
 * as it stands and checks (cd_sm90_fwd_softmax_lazy), and the bound that decides when the max must
 * move (cd_sm90_fwd_row_bound, config.cuh). Then O *= alpha (cd_sm90_fwd_rescale_o). Scores are raw
 * (the scale folded into the exp2); m is in log2 units; a row with no visible key so far keeps m =
 * -inf and P = 0.
 */
#ifndef CUDADENT_SM90_SOFTMAX_CUH
#define CUDADENT_SM90_SOFTMAX_CUH

#include <math.h>
#include <stdint.h>
#include "kernels/sm90/config.cuh"
#include "kernels/sm90/gemm.cuh"
#include "kernels/sm90/ptx_sm90.cuh"
#include "kernels/sm80/ptx_sm80.cuh" /* cd_softcap_tanh: the portable kernels' tanh */

/* per-half max of two packed 16-bit pairs, NaN where either half is NaN */
template <bool kFp16>
__device__ __forceinline__ uint32_t cd_sm90_fwd_max_nan2(uint32_t a, uint32_t b) {
  uint32_t r;
  if constexpr (kFp16)
    asm("max.NaN.f16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  else
    asm("max.NaN.bf16x2 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(b));
  return r;
}

/* When the running row max m moves (config.cuh, SM90_MAX_SLACK and SM90_STALE_SHARE_LOG2): not
 * on every new maximum, which would rescale O in nearly every step of a row's first blocks (a warp
 * rescales when any of its 16 rows moved), but only when a block brings a P = 2^(scale S - m)
 * above the row's bound. A P above 1 is rounded to 16 bits where the exact max would make the
 * row's largest P exactly 1, and that one key weighs in O's error: the bound keeps it small. The
 * LSE, m + log2(l) with the same m, is exact. */

/* bound[r]: the largest P that row r may take without moving m (above), from the row's sum so
 * far in units of the current m: the quad's fp32 partial sums l added up (a butterfly: the same
 * bits in all four lanes), or (kRowSumMma) the row-sum columns of the O accumulator (every
 * column of the ones block holds the whole sum; complete only after the P V wait). The exact
 * softmax takes it through cd_sm90_fwd_quad_min, which makes it uniform across the quad in any
 * case. */
template <bool kRowSumMma, int NREG>
__device__ __forceinline__ void cd_sm90_fwd_row_bound(const float (&o)[NREG], const float (&l)[2],
                                               float (&bound)[2]) {
  constexpr float kShare = SM90_STALE_SHARE_LOG2 >= 0 ? 1.f / (float)(1 << SM90_STALE_SHARE_LOG2)
                                                      : (float)(1 << -SM90_STALE_SHARE_LOG2);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum;
    if constexpr (kRowSumMma) {
      sum = o[NREG - 4 + 2 * r]; /* NREG - 4 = D / 2 */
    } else {
      sum = l[r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    }
    bound[r] = fminf(fmaxf(sum * kShare, 1.f), (float)(1 << SM90_MAX_SLACK));
  }
}

__device__ __forceinline__ void cd_sm90_fwd_quad_min(float (&x)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    x[r] = fminf(x[r], __shfl_xor_sync(0xffffffffu, x[r], 1));
    x[r] = fminf(x[r], __shfl_xor_sync(0xffffffffu, x[r], 2));
  }
}

/* The row maxima of a block's scores (raw, before the scale), reduced over the row's quad.
 * Four independent partial maxima per row: short dependency chains (the "wait" stall dominated
 * ncu's breakdown with one serial chain of 32). */
template <int BN>
__device__ __forceinline__ void cd_sm90_fwd_row_max(const float (&s)[BN / 2], float (&mx)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mp[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j)
      mp[j % 4] = fmaxf(mp[j % 4], fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]));
    mx[r] = fmaxf(fmaxf(mp[0], mp[1]), fmaxf(mp[2], mp[3]));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
    mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
  }
}

/* Online softmax of one block, in place, given its row maxima mx (cd_sm90_fwd_row_max): s becomes P
 * (unnormalized, fp32); m is the running row max in log2 units (scaled; m moves to the block's
 * max only when that would bring a P above bound, which must be the same across the row's quad),
 * l the thread's partial row sum (not kept with kRowSumMma: the P V GEMM sums the rows), alpha
 * the factor O must be scaled by before P V is added. A row with no visible key so far keeps
 * m = -inf, P = 0. */
template <int BN, bool kRowSumMma>
__device__ __forceinline__ void cd_sm90_fwd_softmax_exp(float (&s)[BN / 2], const float (&mx)[2],
                                                 float (&m)[2], float (&l)[2], float (&alpha)[2],
                                                 const float (&bound)[2], float scale_log2) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    /* m moves where the block's largest P would pass the bound (m = -inf: always, ex2(inf);
     * a row with no key in this block either: never, ex2(NaN) is NaN) */
    const float m_cand = mx[r] * scale_log2;
    const float m_new = cd_exp2(m_cand - m[r]) > bound[r] ? m_cand : m[r];
    const float m_use = m_new == -INFINITY ? 0.f : m_new;
    alpha[r] = cd_exp2(m[r] - m_use);
    m[r] = m_new;
    float sp[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float pv = cd_exp2(fmaf(s[4 * j + 2 * r + e], scale_log2, -m_use));
        s[4 * j + 2 * r + e] = pv;
        if constexpr (!kRowSumMma) sp[j % 4] += pv;
      }
    }
    if constexpr (!kRowSumMma) l[r] = l[r] * alpha[r] + ((sp[0] + sp[1]) + (sp[2] + sp[3]));
  }
}

/* The exact online softmax of one block: cd_sm90_fwd_row_max, then cd_sm90_fwd_softmax_exp. */
template <int BN, bool kRowSumMma>
__device__ __forceinline__ void cd_sm90_fwd_softmax(float (&s)[BN / 2], float (&m)[2],
                                                    float (&l)[2], float (&alpha)[2],
                                                    const float (&bound)[2], float scale_log2) {
  float mx[2];
  cd_sm90_fwd_row_max<BN>(s, mx);
  cd_sm90_fwd_softmax_exp<BN, kRowSumMma>(s, mx, m, l, alpha, bound, scale_log2);
}

/* The main loop's softmax first tries the running max as it stands, without the block's max
 * (the max reduction, 74 FMNMX and 4 SHFL a step, and its dependency chain before the first
 * exp2): P = 2^(scale S - m) straight into the 16-bit p, then a check that every P of each row
 * is at most the row's bound, i.e. that the exact softmax would not move m either and would
 * compute these same P (per row a NaN-propagating max over the packed P, 15 VHMNMX in all, and a
 * warp vote). Where it fails (a P past the bound; a row that has seen no key yet: m = -inf gives
 * P = inf or NaN, NaN from -inf scores), the warp runs the exact softmax (cd_sm90_fwd_softmax) on
 * S, which this path leaves intact. So the results are the exact path's (up to rounding at the
 * bound itself and the order of the fp32 row-sum additions); the check fails on a row's first
 * blocks and then rarely (docs/kernels/sm90_fwd.md sections 4.1, 4.2). */

/* The lazy softmax of one block (above): p = 16-bit P of s with the running max m; returns
 * whether the whole warp passed the check (warp-uniform). With fp32 row sums (!kRowSumMma) l
 * takes the block's sums only on success. */
template <int BN, bool kRowSumMma, bool kFp16>
__device__ __forceinline__ bool cd_sm90_fwd_softmax_lazy(const float (&s)[BN / 2],
                                                         const float (&m)[2], float (&l)[2],
                                                         uint32_t (&p)[BN / 4],
                                                         const float (&bound)[2],
                                                         float scale_log2) {
  float sp[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float a = cd_exp2(fmaf(s[4 * j + 2 * r], scale_log2, -m[r]));
      const float b = cd_exp2(fmaf(s[4 * j + 2 * r + 1], scale_log2, -m[r]));
      if constexpr (!kRowSumMma) sp[r][j % 4] += a + b;
      p[2 * j + r] = cd_pack2<kFp16>(a, b);
    }
  /* per row, a max with NaN propagation over the packed pairs; then the rows' maxima side by
   * side (row 0 low, row 1 high) against the bounds in 16 bits: max(x, lim) == lim exactly when
   * both halves are at most their bound and neither is NaN */
  uint32_t mx[2] = {p[0], p[1]};
#pragma unroll
  for (int j = 1; j < BN / 8; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) mx[r] = cd_sm90_fwd_max_nan2<kFp16>(mx[r], p[2 * j + r]);
  const uint32_t lows = __byte_perm(mx[0], mx[1], 0x5410), highs = __byte_perm(mx[0], mx[1], 0x7632);
  const uint32_t lim = cd_pack2<kFp16>(bound[0], bound[1]);
  const uint32_t both = cd_sm90_fwd_max_nan2<kFp16>(cd_sm90_fwd_max_nan2<kFp16>(lows, highs), lim);
  const bool ok = __all_sync(0xffffffffu, both == lim);
  if constexpr (!kRowSumMma) {
    if (ok) {
#pragma unroll
      for (int r = 0; r < 2; ++r) l[r] += (sp[r][0] + sp[r][1]) + (sp[r][2] + sp[r][3]);
    }
  }
  return ok;
}

/* Softcap (a row's SOFTCAP kernels; docs/kernels/sm90_fwd.md "Softcap"): the raw scores become
 * t = tanh(s softcap_pre), softcap_pre = softmax_scale / softcap, in place, before the mask; the
 * softmax then runs on t with scale_log2 = softcap log2(e) (the launch sets it), so the scores
 * are in units of softcap as in the portable kernels, and the LSE is the natural log of the sum
 * of exp(softcap t) that the portable backward recomputes P against. cd_softcap_tanh is the
 * portable kernels' tanh (ptx_sm80.cuh: ex2.approx and a fast reciprocal, two MUFU), so both
 * paths cap alike. */
template <int N>
__device__ __forceinline__ void cd_sm90_fwd_softcap(float (&s)[N], float softcap_pre) {
#pragma unroll
  for (int i = 0; i < N; ++i) s[i] = cd_softcap_tanh(s[i] * softcap_pre);
}

/* O *= alpha per row. Skipped (exactly: alpha is ex2(0) = 1) when no row of the warp got a new
 * maximum, which after the first blocks of a long row is the common case; the test is a warp
 * vote, so the branch is uniform. */
template <int NREG>
__device__ __forceinline__ void cd_sm90_fwd_rescale_o(float (&o)[NREG], const float (&alpha)[2]) {
  if (!__any_sync(0xffffffffu, (alpha[0] != 1.f) | (alpha[1] != 1.f))) return;
#pragma unroll
  for (int j = 0; j < NREG / 4; ++j) {
    o[4 * j + 0] *= alpha[0];
    o[4 * j + 1] *= alpha[0];
    o[4 * j + 2] *= alpha[1];
    o[4 * j + 3] *= alpha[1];
  }
}

#endif /* CUDADENT_SM90_SOFTMAX_CUH */
