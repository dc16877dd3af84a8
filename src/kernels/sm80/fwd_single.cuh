/*
 * fwd_single.cuh - the portable attention forward with K and V single buffered: FA2's own H200
 * configuration for head dims 192 / 256 (dispatch.h CUDADENT_SM80_FWD_SINGLE_BUF;
 * docs/kernels/sm80_fwd.md section 11). The same computation, masks, GQA, softcap, PAD, varlen
 * and epilogue as fwd_kernel.cuh (whose body it runs with SINGLE = true); only the shared-memory
 * layout and the pipeline differ.
 *
 * Warps: WARPS (4) warps, all alike, as fwd_kernel.cuh: warp w owns query rows [16 w, 16 w + 16)
 * of the 64-row tile, its S = Q K^T slab, online softmax and O slab; warps meet only at the two
 * barriers of each key tile.
 *
 * Shared memory (dynamic, 16-bit elements, rows swizzled as fwd_kernel.cuh):
 *     sQ [BLOCK_M][D]     query tile; reused at the end to stage O (each warp its own rows)
 *     sK [BLOCK_N][D]     one key tile
 *     sV [BLOCK_N][D]     one value tile
 * (BLOCK_M + 2 BLOCK_N) D 2 bytes: 64 x 64 at D 256 is 96 KiB (two CTAs on an sm_90 SM's 228
 * KiB), at D 192 72 KiB.
 *
 * Pipeline (cp.async; key tiles from the last to the first, as fwd_kernel.cuh), FA2's order
 * (flash_fwd_kernel.h, compute_attn_1rowblock):
 *     prologue:  {Q, K[n_last]}
 *     iteration for tile n:
 *         wait all; barrier        K[n] (and Q) landed; every warp is done with V[n+1]
 *         issue {V[n]}             (rows past seqlen_k zero-filled: the ragged last tile)
 *         S = Q K[n]^T; softcap; element mask on partially masked tiles
 *         wait all; barrier        V[n] landed; every warp is done with K[n]
 *         issue {K[n-1]}           (not after the first tile)
 *         online softmax; O += P V[n]
 * so V's load runs under S and K's under the softmax and P V: two barriers a tile, against one
 * for the double-buffered pipeline, for half its K / V shared memory.
 *
 * Grid: 1-D, batch * heads_q * m_blocks CTAs, as fwd_kernel.cuh. With the gate at 1 the same
 * order ((batch, head) fastest, query tiles from the last); at 2 (CD_SM80_FWD_SINGLE_HEAD_MAJOR)
 * the query tiles of one (batch, head) consecutive, from the last, then the next (batch, head),
 * as FA2's grid (which runs them from the first): the CTAs resident at once share a few heads'
 * K / V in L2 instead of each reading its own (docs/kernels/sm80_fwd.md section 11.3).
 */
#ifndef CUDADENT_SM80_FWD_SINGLE_CUH
#define CUDADENT_SM80_FWD_SINGLE_CUH

#include "dispatch.h"
#include "kernels/sm80/fwd_kernel.cuh"

/* CTAs an SM the single-buffered kernels are compiled for: two (255 registers a thread with 128
 * threads), the configuration they exist for. */
constexpr int CD_SM80_FWD_SINGLE_MIN_CTAS = 2;

/* dispatch.h CUDADENT_SM80_FWD_SINGLE_BUF at 2: the head-major grid order (header comment) */
constexpr bool CD_SM80_FWD_SINGLE_HEAD_MAJOR = CUDADENT_SM80_FWD_SINGLE_BUF == 2;

/* Whether the architecture being compiled holds CD_SM80_FWD_SINGLE_MIN_CTAS tiles in its opt-in
 * shared memory per block (fwd_kernel.cuh CD_SM80_FWD_ARCH_SMEM), as cd_sm80_fwd_large_fits
 * asks of the device at launch: where not, the kernel is never launched and compiled as a trap
 * stub (sm_86 / sm_89; sm_80 at D 256). */
template <int D, int BLOCK_M, int BLOCK_N> constexpr bool cd_sm80_fwd_single_fits() {
  return CD_SM80_FWD_SINGLE_MIN_CTAS * cd_sm80_fwd_smem_bytes<D, BLOCK_M, BLOCK_N, true>() <=
         CD_SM80_FWD_ARCH_SMEM;
}

template <typename T, int D, int BLOCK_M, int BLOCK_N, int WARPS, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(WARPS * 32, CD_SM80_FWD_SINGLE_MIN_CTAS)
    cd_sm80_fwd_single_kernel(const cd_sm80_fwd_args_t a) {
  const cd_sm80_fwd_varlen_args_t none = {NULL, NULL, NULL, 0, 0}; /* never read */
  if constexpr (cd_sm80_fwd_single_fits<D, BLOCK_M, BLOCK_N>())
    cd_sm80_fwd_body<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP, false, true,
                     CD_SM80_FWD_SINGLE_HEAD_MAJOR>(a, none);
  else
    __trap(); /* an architecture that does not hold two: never launched there */
}

/* varlen: the same body on ragged batches (fwd_kernel.cuh's header) */
template <typename T, int D, int BLOCK_M, int BLOCK_N, int WARPS, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(WARPS * 32, CD_SM80_FWD_SINGLE_MIN_CTAS)
    cd_sm80_fwd_single_varlen_kernel(const cd_sm80_fwd_args_t a,
                                     const cd_sm80_fwd_varlen_args_t v) {
  if constexpr (cd_sm80_fwd_single_fits<D, BLOCK_M, BLOCK_N>())
    cd_sm80_fwd_body<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP, true, true,
                     CD_SM80_FWD_SINGLE_HEAD_MAJOR>(a, v);
  else
    __trap(); /* as above */
}

#endif /* CUDADENT_SM80_FWD_SINGLE_CUH */
