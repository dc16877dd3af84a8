/*
 * exp_variants.cu - entry points for experiments on the sm80 forward, timed side by side by
 * fwd80.py's 'exp' mode. Built with src/kernels/sm80/fwd.cu and src/device_info.c (compiled with
 * -DCUDADENT_DEV, run_gpu.sh), so cudadent_sm80_fwd in the same library is the production
 * launcher; reaches the kernels through src/kernels/dev.h only. Finished experiments are deleted
 * from here; their predictions and results stay in docs/kernels/sm80_fwd.md.
 */
#include "kernels/dev.h"

/* exp07: the tile-size switch. Forced large / small tiles, to place the grid-size threshold
 * (CD_SM80_FWD_SMALL_GRID_PER_SM) and to check both paths on every shape. */
extern "C" cudaError_t exp07_large(const cudadent_attn_fwd_params_t *p, void *ws, cudaStream_t s) {
  (void)ws;
  return cudadent_dev_sm80_fwd_tiles(p, 0, s);
}
extern "C" cudaError_t exp07_small(const cudadent_attn_fwd_params_t *p, void *ws, cudaStream_t s) {
  (void)ws;
  return cudadent_dev_sm80_fwd_tiles(p, 1, s);
}
