/*
 * bwd_wide.cu - the Hopper backward's wide rows (bwd_tiles.cuh: 192 / 128 and 256 / 256; their
 * main kernel is bwd_wide_kernel.cuh's), a translation unit of their own so that the build compiles
 * them beside bwd.cu's narrow rows. bwd.cu's cudadent_sm90_bwd calls cd_sm90_bwd_wide for a call
 * whose row (bwd_launch.cuh cd_sm90_bwd_row) is 192 or 256; its supports() takes such calls only
 * where dispatch.h's CUDADENT_SM90_BWD_WIDE is 1.
 */
#include "kernels/sm90/bwd_launch.cuh"

cudaError_t cd_sm90_bwd_wide(const cudadent_attn_bwd_params_t *p, void *workspace, cudaStream_t stream) {
  if (cd_sm90_bwd_row(p) == 192) return cd_sm90_bwd_launch_mode<192, 128>(p, workspace, stream);
  return cd_sm90_bwd_launch_mode<256, 256>(p, workspace, stream);
}
