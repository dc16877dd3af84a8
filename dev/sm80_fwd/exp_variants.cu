/*
 * exp_variants.cu - the dev build of the sm80 forward: src/kernels/sm80/fwd.cu itself (included,
 * so cudadent_sm80_fwd here is the production launcher) plus entry points for experiments, timed
 * side by side by fwd80.py's 'exp' mode. Finished experiments are deleted from here; their
 * predictions and results stay in docs/kernels/sm80_fwd.md.
 */
#include "../../src/kernels/sm80/fwd.cu"

/* exp07: the tile-size switch. Forced large / small tiles, to place the grid-size threshold
 * (CD_SM80_FWD_SMALL_GRID_PER_SM) and to check both paths on every shape. */
extern "C" cudaError_t exp07_large(const cudadent_attn_fwd_params_t *p, void *ws, cudaStream_t s) {
  (void)ws;
  return cd_sm80_fwd_dispatch(p, 0, s);
}
extern "C" cudaError_t exp07_small(const cudadent_attn_fwd_params_t *p, void *ws, cudaStream_t s) {
  (void)ws;
  return cd_sm80_fwd_dispatch(p, 1, s);
}
