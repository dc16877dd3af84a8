/*
 * fwd_varlen.cu - the portable forward's varlen kernels (cudadent.h, "features of layout v2";
 * docs/kernels/sm80_fwd.md, "Varlen"): the same 32 instantiations as fwd.cu (fwd_tiles.cuh), of
 * cd_sm80_fwd_varlen_kernel, in their own translation unit. fwd.cu's dispatch decides the tile
 * size (from the grid's bound, batch * heads_q * tiles of max_seqlen_q) and calls here.
 */
#include <cuda_runtime.h>
#include "kernels/sm80/fwd_tiles.cuh"

cudaError_t cd_sm80_fwd_varlen_launch(const cudadent_attn_fwd_params_t *p, int small,
                                      cudaStream_t stream) {
  return p->dtype == CUDADENT_DTYPE_BF16
             ? cd_sm80_fwd_width_switch<__nv_bfloat16, true>(p, small, stream)
             : cd_sm80_fwd_width_switch<__half, true>(p, small, stream);
}
