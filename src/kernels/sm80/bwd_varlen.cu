/*
 * bwd_varlen.cu - the portable backward's varlen kernels (cudadent.h, "features of layout v2";
 * docs/kernels/sm80_bwd.md, "Varlen"): the same instantiations as bwd.cu (bwd_main.cuh), of
 * cd_sm80_bwd_pre_varlen, cd_sm80_bwd_main_varlen and cd_sm80_bwd_dq_varlen, in their own
 * translation unit (it compiles beside bwd.cu). bwd.cu fills the arguments and calls here.
 */
#include <cuda_runtime.h>
#include "kernels/sm80/bwd_main.cuh"

cudaError_t cd_sm80_bwd_varlen_launch(const cd_sm80_bwd_args_t &a, const cd_sm80_bwd_varlen_args_t &v,
                                      bool bf16, int w, bool exact, bool softcap, cudaStream_t stream) {
  return bf16 ? cd_sm80_bwd_launch_dtype<__nv_bfloat16, true>(a, v, w, exact, softcap, stream)
              : cd_sm80_bwd_launch_dtype<__half, true>(a, v, w, exact, softcap, stream);
}
