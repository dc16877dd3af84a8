/*
 * bwd_wide.cu - the Hopper backward's wide rows (bwd_tiles.cuh: 192 / 128 and 256 / 256; their
 * main kernel is bwd_wide_kernel.cuh's, except the 192 / 128 row's dense non-deterministic calls
 * without softcap, which run bwd_wide3_kernel.cuh's 96-key kernel where config.cuh's SM90_BWD_WIDE3
 * is 1, the library's value), a translation unit of their own so that the build compiles
 * them beside bwd.cu's narrow rows. bwd.cu's cudadent_sm90_bwd calls cd_sm90_bwd_wide for a call
 * whose row (bwd_launch.cuh cd_sm90_bwd_row) is 192 or 256; its supports() takes such calls only
 * where dispatch.h's CUDADENT_SM90_BWD_WIDE is 1, softcap ones (dense, not deterministic: the
 * rows' softcap kernels, cd_sm90_bwd_wide_softcap_kernel) only where CUDADENT_SM90_BWD_WIDE_SOFTCAP
 * is 1 too.
 */
#include "kernels/sm90/bwd_launch.cuh"

/* A softcap call of row (D, DV): its softcap kernel, not deterministic (supports()). */
template <int D, int DV>
static cudaError_t cd_sm90_bwd_wide_softcap(const cudadent_attn_bwd_params_t *p, void *workspace,
                                            cudaStream_t stream) {
  constexpr int BM = cd_sm90_bwd_tile<D, DV>::BLOCK_M;
  return p->dtype == CUDADENT_DTYPE_FP16
             ? cd_sm90_bwd_launch<D, DV, true, CD_SM90_BWD_NONDET, BM, true>(p, workspace, stream)
             : cd_sm90_bwd_launch<D, DV, false, CD_SM90_BWD_NONDET, BM, true>(p, workspace, stream);
}

cudaError_t cd_sm90_bwd_wide(const cudadent_attn_bwd_params_t *p, void *workspace, cudaStream_t stream) {
  const int row = cd_sm90_bwd_row(p);
  if (p->softcap > 0.f)
    return row == 192 ? cd_sm90_bwd_wide_softcap<192, 128>(p, workspace, stream)
                      : cd_sm90_bwd_wide_softcap<256, 256>(p, workspace, stream);
  if (row == 192) return cd_sm90_bwd_launch_mode<192, 128>(p, workspace, stream);
  return cd_sm90_bwd_launch_mode<256, 256>(p, workspace, stream);
}

#if defined(CUDADENT_DEV) && SM90_BWD_TRACE
/* the trace state of this unit's kernels (the wide rows' main kernels; bwd_trace.cuh) */
cudaError_t cd_sm90_bwd_wide_trace_state_set(const cd_sm90_bwd_trace_state *st) {
  return cudaMemcpyToSymbol(cd_sm90_bwd_trace_dev, st, sizeof *st);
}
#endif
