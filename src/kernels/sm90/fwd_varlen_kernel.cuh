/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * fwd_varlen_kernel.cuh - the Hopper (sm_90a) forward on ragged batches (varlen, cudadent.h
 * "features of layout v2"; §2.6): the dense kernel's body itself (cd_sm90_fwd_body with kVarlen,
 * fwd_kernel.cuh). Warps: warpgroup 0 the producer (one thread: the TMA loads of Q, K, V),
 * warpgroups 1.. the consumers (64 query rows each: the main loop, mainloop_fwd.cuh, and the
 * epilogue, epilogue_fwd.cuh); shared memory, rings and barriers as the dense kernel's. What
 * differs is below: the tiles come from a list that a device pre-pass built
 * (fwd_varlen_plan.cuh) instead of the dense tile orders, and the epilogue stores by sequence.
 *
 * Tiles. Persistent, one CTA an SM (the grid from host-known bounds only: CUDA-graph safe). CTA c
 * takes positions c, then round by round as the dense SNAKE order (odd rounds reversed) of the
 * list, heaviest unit first: position pos is unit pos / heads_q of the list, query head pos %
 * heads_q. The list's length is read from the workspace at the start (-1: the fallback order
 * for overlapping invalid ranges, fwd_varlen_plan.cuh). Producer and consumers walk the same
 * positions and read the same list entries (L2 hits), with no communication.
 *
 * A tile: the sequence's {q0, k0, len_q, len_k} and its query block; the roles run with a copy of
 * the kernel's arguments whose seqlen_q / seqlen_k are the sequence's (so the mask rule, the
 * key-block ranges and the bottom-right alignment are the sequence's: keys past len_k are masked
 * exactly as a dense call's ragged end), and load from tensor maps over the packed tensors
 * (head_dim, total, heads, 1) at rows q0 + m_block BLOCK_M (Q) and k0 + n BLOCK_N (K, V). Query
 * rows past the sequence's end load the next sequence's tokens (or zeros past total_q): computed,
 * never stored. Key rows past len_k load the next sequence's tokens (finite inputs) or zeros:
 * masked, P = 0. Units whose rows see no key run no load and no GEMM: the epilogue writes their
 * O = 0 and LSE = -inf. The epilogue (kVarlen): LSE at lse[h * total_q + q0 + row] for rows of the
 * sequence; O by TMA where a warp's 16 rows lie inside the sequence, else by predicated st.global.
 */
#ifndef CUDADENT_SM90_FWD_VARLEN_KERNEL_CUH
#define CUDADENT_SM90_FWD_VARLEN_KERNEL_CUH

#include <cuda.h>
#include <stdint.h>

#include "kernels/sm90/fwd_kernel.cuh"
#include "kernels/sm90/fwd_varlen_plan.cuh"

/* The varlen kernel (fwd_varlen.cu): the dense kernel's body (cd_sm90_fwd_body, fwd_kernel.cuh)
 * with kVarlen; args.num_tiles is not read (the list's length is, va.count). */
template <class Tile, bool kFp16>
__global__ void __launch_bounds__(128 * (1 + Tile::CONSUMER_WGS), 1)
    cd_sm90_fwd_varlen_kernel(const __grid_constant__ CUtensorMap tm_q,
                              const __grid_constant__ CUtensorMap tm_k,
                              const __grid_constant__ CUtensorMap tm_v,
                              const __grid_constant__ CUtensorMap tm_o, const cd_sm90_fwd_args args,
                              const __grid_constant__ cd_sm90_fwd_varlen_args va) {
  cd_sm90_fwd_body<Tile, kFp16, false, true>(tm_q, tm_k, tm_v, tm_o, args, va);
}

/* The varlen softcap kernel (fwd_varlen.cu: the d128 LSE row only; the d256 row's spilled, §2.7):
 * the same body with kSoftcap, args a cd_sm90_fwd_args_softcap (scale_log2 = softcap
 * log2(e), softcap_pre = softmax_scale / softcap); a kernel of its own, so that the one above
 * keeps its name, parameters and code. */
template <class Tile, bool kFp16>
__global__ void __launch_bounds__(128 * (1 + Tile::CONSUMER_WGS), 1)
    cd_sm90_fwd_varlen_softcap_kernel(const __grid_constant__ CUtensorMap tm_q,
                                      const __grid_constant__ CUtensorMap tm_k,
                                      const __grid_constant__ CUtensorMap tm_v,
                                      const __grid_constant__ CUtensorMap tm_o,
                                      const cd_sm90_fwd_args_softcap args,
                                      const __grid_constant__ cd_sm90_fwd_varlen_args va) {
  cd_sm90_fwd_body<Tile, kFp16, true, true>(tm_q, tm_k, tm_v, tm_o, args, va);
}

#endif /* CUDADENT_SM90_FWD_VARLEN_KERNEL_CUH */
