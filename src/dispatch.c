/*
 * dispatch.c - the table of kernels: (device arch, params) -> kernel path.
 *
 * Rows, tried in order; the first whose kernel is built, runs on the device and supports the
 * params wins:
 *   sm90  Hopper forward (wgmma, TMA)        cc == 9.0 only, forward only
 *   sm80  portable forward and backward      cc >= 8.0
 * CUDADENT_KERNEL=sm80|sm90 in the environment restricts the choice to that row (tests use it to
 * check both paths on one Hopper GPU). Forcing sm90 also skips cudadent_sm90_fwd_supports(),
 * whose only refusal beyond api.c's checks (dtype and head_dim, shared by every row) is its
 * small-problem heuristic: so tests reach the Hopper kernel on small shapes too.
 * The backward's sm90 row (wgmma) is taken by default only where SM90_BWD_DEFAULT says so;
 * CUDADENT_KERNEL_BWD=sm80|sm90 forces the backward's path alone (CUDADENT_KERNEL forces both).
 */
#include "dispatch.h"

#include <stdlib.h>
#include <string.h>

#ifndef CUDADENT_HAVE_SM80_FWD
#define CUDADENT_HAVE_SM80_FWD 0
#endif
#ifndef CUDADENT_HAVE_SM80_BWD
#define CUDADENT_HAVE_SM80_BWD 0
#endif
#ifndef CUDADENT_HAVE_SM90_FWD
#define CUDADENT_HAVE_SM90_FWD 0
#endif
#ifndef CUDADENT_HAVE_SM90_BWD
#define CUDADENT_HAVE_SM90_BWD 0
#endif

/* 1: the Hopper backward is dispatch's default on cc 9.0 (H200: 1.1-1.9x the sm80 backward from
 * the small shapes to 16k, docs/kernels/sm90_bwd.md) */
#define SM90_BWD_DEFAULT 1

static cudadent_kernel_path_t path_of(const char *forced) {
  if (forced == NULL || forced[0] == '\0') return CUDADENT_PATH_NONE;
  if (strcmp(forced, "sm80") == 0) return CUDADENT_PATH_SM80;
  if (strcmp(forced, "sm90") == 0) return CUDADENT_PATH_SM90;
  return CUDADENT_PATH_NONE;
}

static cudadent_kernel_path_t forced_path(void) { return path_of(getenv("CUDADENT_KERNEL")); }

static __attribute__((unused)) cudadent_kernel_path_t forced_bwd_path(void) {
  const char *bwd = getenv("CUDADENT_KERNEL_BWD");
  return bwd != NULL && bwd[0] != '\0' ? path_of(bwd) : forced_path();
}

static __attribute__((unused)) int allowed(cudadent_kernel_path_t path) {
  cudadent_kernel_path_t forced = forced_path();
  return forced == CUDADENT_PATH_NONE || forced == path;
}

cudadent_kernel_path_t cudadent_pick_fwd(const cudadent_attn_fwd_params_t *p, int cc) {
#if CUDADENT_HAVE_SM90_FWD
  if (cc == 90 && allowed(CUDADENT_PATH_SM90) &&
      (cudadent_sm90_fwd_supports(p) || forced_path() == CUDADENT_PATH_SM90))
    return CUDADENT_PATH_SM90;
#endif
#if CUDADENT_HAVE_SM80_FWD
  if (cc >= 80 && allowed(CUDADENT_PATH_SM80) && cudadent_sm80_fwd_supports(p))
    return CUDADENT_PATH_SM80;
#endif
  (void)p;
  (void)cc;
  return CUDADENT_PATH_NONE;
}

cudadent_kernel_path_t cudadent_pick_bwd(const cudadent_attn_bwd_params_t *p, int cc) {
#if CUDADENT_HAVE_SM90_BWD
  {
    const cudadent_kernel_path_t forced = forced_bwd_path();
    if (cc == 90 && (forced == CUDADENT_PATH_SM90 || (forced == CUDADENT_PATH_NONE && SM90_BWD_DEFAULT)) &&
        cudadent_sm90_bwd_supports(p))
      return CUDADENT_PATH_SM90;
  }
#endif
#if CUDADENT_HAVE_SM80_BWD
  if (cc >= 80 && cudadent_sm80_bwd_supports(p))
    return CUDADENT_PATH_SM80;
#endif
  (void)p;
  (void)cc;
  return CUDADENT_PATH_NONE;
}

int cudadent_any_fwd_supports(const cudadent_attn_fwd_params_t *p) {
  int any = 0;
#if CUDADENT_HAVE_SM80_FWD
  any |= cudadent_sm80_fwd_supports(p);
#endif
#if CUDADENT_HAVE_SM90_FWD
  any |= cudadent_sm90_fwd_supports(p);
#endif
  (void)p;
  return any;
}

int cudadent_any_bwd_supports(const cudadent_attn_bwd_params_t *p) {
  int any = 0;
#if CUDADENT_HAVE_SM80_BWD
  any |= cudadent_sm80_bwd_supports(p);
#endif
#if CUDADENT_HAVE_SM90_BWD
  any |= cudadent_sm90_bwd_supports(p);
#endif
  (void)p;
  return any;
}

size_t cudadent_fwd_workspace_bound(const cudadent_attn_fwd_params_t *p) {
  size_t bytes = 0;
#if CUDADENT_HAVE_SM80_FWD
  if (cudadent_sm80_fwd_supports(p)) {
    size_t b = cudadent_sm80_fwd_workspace_size(p);
    if (b > bytes) bytes = b;
  }
#endif
#if CUDADENT_HAVE_SM90_FWD
  {
    size_t b = cudadent_sm90_fwd_workspace_size(p);
    if (b > bytes) bytes = b;
  }
#endif
  (void)p;
  return bytes;
}

size_t cudadent_bwd_workspace_bound(const cudadent_attn_bwd_params_t *p) {
  size_t bytes = 0;
#if CUDADENT_HAVE_SM80_BWD
  if (cudadent_sm80_bwd_supports(p)) bytes = cudadent_sm80_bwd_workspace_size(p);
#endif
#if CUDADENT_HAVE_SM90_BWD
  if (cudadent_sm90_bwd_supports(p)) {
    size_t b = cudadent_sm90_bwd_workspace_size(p);
    if (b > bytes) bytes = b;
  }
#endif
  (void)p;
  return bytes;
}

cudaError_t cudadent_launch_fwd(cudadent_kernel_path_t path, const cudadent_attn_fwd_params_t *p,
                                void *workspace, cudaStream_t stream) {
  switch (path) {
#if CUDADENT_HAVE_SM90_FWD
    case CUDADENT_PATH_SM90: return cudadent_sm90_fwd(p, workspace, stream);
#endif
#if CUDADENT_HAVE_SM80_FWD
    case CUDADENT_PATH_SM80: return cudadent_sm80_fwd(p, workspace, stream);
#endif
    default: break;
  }
  (void)p;
  (void)workspace;
  (void)stream;
  return cudaErrorNotSupported;
}

cudaError_t cudadent_launch_bwd(cudadent_kernel_path_t path, const cudadent_attn_bwd_params_t *p,
                                void *workspace, cudaStream_t stream) {
  switch (path) {
#if CUDADENT_HAVE_SM90_BWD
    case CUDADENT_PATH_SM90: return cudadent_sm90_bwd(p, workspace, stream);
#endif
#if CUDADENT_HAVE_SM80_BWD
    case CUDADENT_PATH_SM80: return cudadent_sm80_bwd(p, workspace, stream);
#endif
    default: break;
  }
  (void)p;
  (void)workspace;
  (void)stream;
  return cudaErrorNotSupported;
}

const char *cudadent_path_name(cudadent_kernel_path_t path) {
  switch (path) {
    case CUDADENT_PATH_SM80: return "sm80";
    case CUDADENT_PATH_SM90: return "sm90";
    default: return "none";
  }
}
