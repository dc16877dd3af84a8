/*
 * mask.cuh - the per-element mask of an sm90 score block, in the wgmma accumulator fragment
 * (gemm.cuh), applying the rule of common/mask_rule.cuh. Which blocks need it: mask_rule.cuh
 * (cd_mask_block_partial, cd_mask_unmasked_blocks).
 */
#ifndef CUDADENT_SM90_MASK_CUH
#define CUDADENT_SM90_MASK_CUH

#include <math.h>

/* Accumulator fragment of wgmma m64nN (per warp 16 rows): element 4j + 2r + e is row
 * 16 warp + lane/4 + 8r, column 8j + 2 (lane%4) + e. */
template <int BN, bool kLeft>
__device__ __forceinline__ void cd_sm90_fwd_mask_apply(float (&s)[BN / 2], const int (&lo)[2],
                                                const int (&hi)[2]) {
#pragma unroll
  for (int j = 0; j < BN / 8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if ((kLeft && 8 * j + e < lo[r]) | (8 * j + e > hi[r])) s[4 * j + 2 * r + e] = -INFINITY;
}

template <int BN>
__device__ __forceinline__ void cd_sm90_fwd_mask(float (&s)[BN / 2], int key0, int row0,
                                                 int seqlen_k, int shift, int window_left,
                                                 int window_right, int lane) {
  /* visible keys of each of the thread's two rows, relative to the thread's first column
   * key0 + 2 (lane % 4): [lo, hi], so each element compares its compile-time offset 8 j + e */
  const int c0 = key0 + 2 * (lane & 3);
  int lo[2], hi[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = row0 + 8 * r;
    lo[r] = row + shift - window_left - c0;
    hi[r] = (window_right >= 0 ? min(seqlen_k - 1, row + shift + window_right) : seqlen_k - 1) - c0;
  }
  if (window_left < 0)
    cd_sm90_fwd_mask_apply<BN, false>(s, lo, hi); /* causal / right window only */
  else cd_sm90_fwd_mask_apply<BN, true>(s, lo, hi);
}

#endif /* CUDADENT_SM90_MASK_CUH */
