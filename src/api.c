/*
 * api.c - the public entry points: check every field, normalize, pick a kernel, launch.
 *
 * Order of checks (each failure has its own status and a message naming field and value; nothing
 * is launched and nothing written): params pointer and struct_size (the caller's struct is read
 * into a full-size local, cudadent.h "struct_size"), dtype, sizes, heads, the limits every kernel
 * indexes safely (cudadent.h "limits"), softmax_scale, windows, head_dim_v, softcap, the varlen
 * fields (checks.c), head_dim (is there a kernel for it at all), then each tensor (at its varlen
 * sizes in a varlen call): pointer, head_dim stride, alignment, strides (no zero stride on a
 * dimension of size > 1, below 2^40 bytes), extent (int64, never wrapping), an output not
 * overlapping itself; the LSE pointer; then whether a kernel implements every feature the call
 * uses (head_dim_v != head_dim: UNSUPPORTED_HEAD_DIM; softcap, varlen: UNSUPPORTED_FEATURE, "not
 * implemented yet"); the workspace size; then the caller's workspace, and the
 * device: present, and an architecture with a kernel. Checks that need no device come first
 * (checks.c), so every input error is reported the same way on a machine without a GPU.
 *
 * Zero sizes: batch == 0 does nothing. seqlen_k == 0 makes every query row fully masked (O = 0,
 * LSE = -inf; dQ = 0); seqlen_q == 0 leaves dK = dV = 0. Those are written by small fill kernels.
 * Varlen calls: run_varlen_fwd / run_varlen_bwd (the device check, the gap fill, then the kernel).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "checks.h"
#include "cudadent.h"
#include "device_info.h"
#include "dispatch.h"
#include "errors.h"
#include "struct_size.h"

int cudadent_get_version(void) { return CUDADENT_VERSION; }

#define RETURN_IF_FAILED(expr)                          \
  do {                                                  \
    cudadent_status_t status_ = (expr);                 \
    if (status_ != CUDADENT_STATUS_SUCCESS) return status_; \
  } while (0)

/* ---- struct_size: every layout each params struct has had (cudadent.h, "struct_size") ---------
 * By size, oldest first; the last is this library's sizeof. Adding a field `x` to the forward
 * struct (the static assert below fails until this is done):
 *   #define FWD_LAYOUT_V2 CUDADENT_LAYOUT_SIZE(cudadent_attn_fwd_params_t, x)
 *   _Static_assert(offsetof(cudadent_attn_fwd_params_t, x) >= FWD_LAYOUT_V1, "x in v1's bytes");
 *   fwd_layouts = {FWD_LAYOUT_V1, FWD_LAYOUT_V2}, the sizeof assert on FWD_LAYOUT_V2;
 * make x == 0 mean the behaviour before x, and add x and the new size to python/cudadent/_abi.py
 * (its _fields_ and LAYOUT_SIZES). */
#define FWD_LAYOUT_V1 CUDADENT_LAYOUT_SIZE(cudadent_attn_fwd_params_t, deterministic) /* 0.1 */
#define BWD_LAYOUT_V1 CUDADENT_LAYOUT_SIZE(cudadent_attn_bwd_params_t, deterministic) /* 0.1 */
/* v2: varlen, head_dim_v, softcap (cudadent.h, "features of layout v2") */
#define FWD_LAYOUT_V2 CUDADENT_LAYOUT_SIZE(cudadent_attn_fwd_params_t, softcap)
#define BWD_LAYOUT_V2 CUDADENT_LAYOUT_SIZE(cudadent_attn_bwd_params_t, softcap)
_Static_assert(offsetof(cudadent_attn_fwd_params_t, cu_seqlens_q) >= FWD_LAYOUT_V1,
               "v2's first field sits in v1's bytes (its tail padding)");
_Static_assert(offsetof(cudadent_attn_bwd_params_t, cu_seqlens_q) >= BWD_LAYOUT_V1,
               "v2's first field sits in v1's bytes (its tail padding)");
_Static_assert(FWD_LAYOUT_V2 == sizeof(cudadent_attn_fwd_params_t),
               "cudadent_attn_fwd_params_t grew: append its new layout to fwd_layouts");
_Static_assert(BWD_LAYOUT_V2 == sizeof(cudadent_attn_bwd_params_t),
               "cudadent_attn_bwd_params_t grew: append its new layout to bwd_layouts");
static const size_t fwd_layouts[] = {FWD_LAYOUT_V1, FWD_LAYOUT_V2};
static const size_t bwd_layouts[] = {BWD_LAYOUT_V1, BWD_LAYOUT_V2};

/* "232": the sizes of a layout list, for messages. */
static void layout_list(const size_t *layouts, size_t n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && used < len; ++i)
    used += (size_t)snprintf(buf + used, len - used, "%s%zu", i ? ", " : "", layouts[i]);
}

/* Copies the caller's params (in, of in->struct_size bytes) into the full-size local out, the
 * fields its layout lacks left at their defaults (0). */
static cudadent_status_t read_params(void *out, size_t size, const void *in, const char *type,
                                     const size_t *layouts, size_t n) {
  if (in == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "params is NULL");
  const size_t given = *(const size_t *)in; /* struct_size: the first field of every layout */
  size_t offset = 0;
  char known[64];
  switch (cudadent_struct_read(out, size, in, given, layouts, n, &offset)) {
    case STRUCT_READ_OK:
      *(size_t *)out = size;
      return CUDADENT_STATUS_SUCCESS;
    case STRUCT_READ_NONZERO_TAIL:
      return cudadent_fail(CUDADENT_STATUS_BAD_STRUCT_SIZE,
                           "params.struct_size = %zu is larger than this library's %s (%zu bytes, "
                           "cudadent %d.%d), and the byte at offset %zu is not zero: a field this "
                           "library does not know is set (leave it 0, or use a newer library)",
                           given, type, size, CUDADENT_VERSION_MAJOR, CUDADENT_VERSION_MINOR,
                           offset);
    case STRUCT_READ_TOO_LARGE:
      return cudadent_fail(CUDADENT_STATUS_BAD_STRUCT_SIZE,
                           "params.struct_size = %zu is larger than any %s can be (%zu): set it "
                           "to sizeof(%s)",
                           given, type, CUDADENT_STRUCT_SIZE_MAX, type);
    default:
      layout_list(layouts, n, known, sizeof known);
      return cudadent_fail(CUDADENT_STATUS_BAD_STRUCT_SIZE,
                           "params.struct_size = %zu is not a size %s has ever had (this library "
                           "reads %s, or larger with the extra bytes zero): set it to sizeof(%s)",
                           given, type, known, type);
  }
}

/* "64, 128": a list of head dims for messages. */
static void dims_list(const int *dims, int n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < len; ++i)
    used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? ", " : "", dims[i]);
  if (!buf[0]) snprintf(buf, len, "none for these params in this build on this device");
}

enum { MAX_LISTED_DIMS = 64 };

/* The first feature the call uses that no kernel taking its head_dim and dtype implements, as a
 * failure saying it is not implemented yet (cudadent.h, "features of layout v2"). missing == 0:
 * kernels implement every feature the call uses, but none runs this combination (a head_dim_v
 * past the supported set, or a tile this device's shared memory cannot hold): an
 * UNSUPPORTED_HEAD_DIM naming both head dims and the supported set (list). */
static cudadent_status_t refuse_feature(unsigned missing, const char *dir, int head_dim,
                                        int head_dim_v, float softcap, const char *list) {
  if (missing == 0)
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                         "no %s kernel runs head_dim = %d with head_dim_v = %d%s on this device "
                         "(supported, for head_dim and head_dim_v each: %s)",
                         dir, head_dim, head_dim_v, softcap != 0.0f ? " and softcap" : "", list);
  int bit = 0;
  while (bit < CUDADENT_FEATURE_COUNT && !(missing & (1u << bit))) ++bit;
  switch (1u << bit) {
    case CUDADENT_FEATURE_HEAD_DIM_V:
      return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                           "head_dim_v = %d != head_dim = %d is not implemented yet: no %s kernel "
                           "takes a V head dim other than Q and K's (set head_dim_v to 0)",
                           head_dim_v, head_dim, dir);
    case CUDADENT_FEATURE_SOFTCAP:
      return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_FEATURE,
                           "softcap = %g is not implemented yet: no %s kernel soft-caps scores "
                           "(leave softcap 0)",
                           (double)softcap, dir);
    default:
      return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_FEATURE,
                           "%s is not implemented yet: no %s kernel of this build takes it",
                           cudadent_feature_name(bit), dir);
  }
}

/* Windows that reach past every row are the same as none: make them -1, and fold causal into
 * window_right = 0, so that kernels see one normal form (dispatch.h). */
static void normalize_mask(int seqlen_q, int seqlen_k, int *causal, int *window_left,
                           int *window_right) {
  if (*causal) *window_right = 0;
  if (*window_left >= seqlen_k) *window_left = -1;
  if (*window_right >= seqlen_q) *window_right = -1;
  *causal = *window_right == 0;
}

/* Why there is no usable device, as a NO_DEVICE failure. The runtime answers "CUDA driver version
 * is insufficient" both to an old driver and to none at all: cudaDriverGetVersion (0: no driver
 * installed) tells them apart. */
static cudadent_status_t no_device(cudaError_t err) {
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaGetLastError(); /* do not leave a failure sticky for the caller */
  if (driver == 0)
    return cudadent_fail(CUDADENT_STATUS_NO_DEVICE,
                         "no CUDA device: no NVIDIA driver is installed (no GPU here)");
  if (err == cudaErrorInsufficientDriver)
    return cudadent_fail(CUDADENT_STATUS_NO_DEVICE,
                         "no usable CUDA device: the NVIDIA driver supports CUDA %d.%d, this "
                         "library's runtime needs %d.%d (update the driver)",
                         driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  if (err == cudaSuccess || err == cudaErrorNoDevice)
    return cudadent_fail(CUDADENT_STATUS_NO_DEVICE,
                         "no CUDA device: the NVIDIA driver (CUDA %d.%d) sees no GPU",
                         driver / 1000, driver % 1000 / 10);
  return cudadent_fail(CUDADENT_STATUS_NO_DEVICE, "no usable CUDA device: %s (%s)",
                       cudaGetErrorString(err), cudaGetErrorName(err));
}

/* Compute capability of the current device (e.g. 90), or a NO_DEVICE failure. */
static cudadent_status_t current_cc(int *cc) {
  int device = 0, count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) return no_device(err);
  if ((err = cudaGetDevice(&device)) != cudaSuccess ||
      (err = cudadent_device_cc(device, cc)) != cudaSuccess) /* cached per device */
    return cudadent_fail(CUDADENT_STATUS_NO_DEVICE, "cannot query the current device: %s",
                         cudaGetErrorString(err));
  return CUDADENT_STATUS_SUCCESS;
}

static cudadent_status_t launch_result(cudaError_t err, const char *what) {
  if (err == cudaSuccess) return CUDADENT_STATUS_SUCCESS;
  return cudadent_fail(CUDADENT_STATUS_CUDA_ERROR, "%s: %s (%s)", what, cudaGetErrorName(err),
                       cudaGetErrorString(err));
}

/* The opt-in device check of a varlen call's arrays (kernels/varlen.cu), forward or backward. */
static cudadent_status_t launch_varlen_check(const int32_t *cu_q, const int32_t *cu_k,
                                             const int32_t *seqused_k, int batch, int total_q,
                                             int total_k, int max_q, int max_k,
                                             cudadent_seqlens_report_t *report, cudaStream_t s) {
  return launch_result(cudadent_varlen_check(cu_q, cu_k, seqused_k, batch, total_q, total_k,
                                             max_q, max_k, report, s),
                       "varlen check");
}


/* ---- forward ----------------------------------------------------------------------------------- */

/* Validates *in into *p (a full-size, normalized copy). Device-free. */
static cudadent_status_t prepare_fwd(const cudadent_attn_fwd_params_t *in,
                                     cudadent_attn_fwd_params_t *p) {
  RETURN_IF_FAILED(read_params(p, sizeof *p, in, "cudadent_attn_fwd_params_t", fwd_layouts,
                               sizeof fwd_layouts / sizeof fwd_layouts[0]));
  const cudadent_shape_t s = CUDADENT_SHAPE_OF(p);
  RETURN_IF_FAILED(cudadent_check_shape(&s));
  /* the head dim alone: head_dim_v 0 (= head_dim), as the supported-head-dims query asks, so
   * that the lists below are that query's */
  cudadent_attn_fwd_params_t probe = *p;
  probe.head_dim_v = 0;
  int dims[MAX_LISTED_DIMS];
  char list[256];
  if (!cudadent_any_fwd_takes_head_dim(&probe)) {
    dims_list(dims, cudadent_fwd_head_dims(0, p->dtype, &probe, dims, MAX_LISTED_DIMS), list,
              sizeof list);
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                         "head_dim = %d has no forward kernel (supported: %s)", p->head_dim, list);
  }
  const cudadent_named_tensor_t tensors[] = {{"q", &p->q, 0, 0, 0},
                                             {"k", &p->k, 1, 0, 0},
                                             {"v", &p->v, 1, 0, 1},
                                             {"o", &p->o, 0, 1, 1}};
  RETURN_IF_FAILED(cudadent_check_tensors(tensors, sizeof tensors / sizeof tensors[0], &s));
  if (p->lse != NULL) RETURN_IF_FAILED(cudadent_check_lse("lse", p->lse, &s));
  if (p->head_dim_v == 0) p->head_dim_v = p->head_dim;
  if (!cudadent_any_fwd_supports(p)) {
    dims_list(dims, cudadent_fwd_head_dims(0, p->dtype, &probe, dims, MAX_LISTED_DIMS), list,
              sizeof list);
    return refuse_feature(cudadent_fwd_features(p) & ~cudadent_fwd_features_built(&probe),
                          "forward", p->head_dim, p->head_dim_v, p->softcap, list);
  }
  normalize_mask(p->seqlen_q, p->seqlen_k, &p->causal, &p->window_left, &p->window_right);
  return cudadent_check_workspace_bound(cudadent_fwd_workspace_bound(p));
}

cudadent_status_t cudadent_attn_fwd_workspace_size(const cudadent_attn_fwd_params_t *params,
                                                   size_t *bytes) {
  cudadent_clear_error();
  if (bytes == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "bytes is NULL");
  cudadent_attn_fwd_params_t p;
  RETURN_IF_FAILED(prepare_fwd(params, &p));
  *bytes = cudadent_fwd_workspace_bound(&p);
  return CUDADENT_STATUS_SUCCESS;
}

/* A varlen forward (validated, normalized params): the kernel is picked first (nothing is launched
 * for a call that fails), then, on the stream: the opt-in check of the arrays (seqlens_report;
 * also when there is no token), the gap fill (tokens in no sequence: O = 0, LSE = -inf;
 * kernels/varlen.cu) and the kernel. max_seqlen_k == 0 (no key at all): O = 0 and LSE = -inf for
 * every token, by the fills. */
static cudadent_status_t run_varlen_fwd(const cudadent_attn_fwd_params_t *p, void *workspace,
                                        cudaStream_t s) {
  const int tokens = p->batch > 0 && p->total_q > 0;
  if (!tokens && p->seqlens_report == NULL) return CUDADENT_STATUS_SUCCESS;
  int cc = 0;
  RETURN_IF_FAILED(current_cc(&cc));
  const cudadent_fwd_kernel_t *kernel = NULL;
  if (tokens && p->seqlen_k > 0) RETURN_IF_FAILED(cudadent_pick_fwd(p, cc, &kernel));
  if (p->seqlens_report != NULL)
    RETURN_IF_FAILED(launch_varlen_check(p->cu_seqlens_q, p->cu_seqlens_k, p->seqused_k,
                                         p->batch, p->total_q, p->total_k, p->seqlen_q,
                                         p->seqlen_k, p->seqlens_report, s));
  if (!tokens) return CUDADENT_STATUS_SUCCESS;
  if (kernel == NULL) { /* max_seqlen_k == 0: every token sees no key */
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p->o, 1, p->total_q, p->heads_q, p->head_dim_v, s), "fill o"));
    if (p->lse != NULL)
      RETURN_IF_FAILED(launch_result(
          cudadent_fill_float(p->lse, (int64_t)p->heads_q * p->total_q, -INFINITY, s),
          "fill lse"));
    return CUDADENT_STATUS_SUCCESS;
  }
  RETURN_IF_FAILED(launch_result(cudadent_varlen_fill_gaps(p, s), "varlen gap fill"));
  return launch_result(kernel->launch(p, workspace, s), kernel->name);
}

cudadent_status_t cudadent_attn_fwd(const cudadent_attn_fwd_params_t *params, void *workspace,
                                    size_t workspace_bytes, cudadent_stream_t stream) {
  cudadent_clear_error();
  cudadent_attn_fwd_params_t p;
  RETURN_IF_FAILED(prepare_fwd(params, &p));
  RETURN_IF_FAILED(cudadent_check_workspace(cudadent_fwd_workspace_bound(&p), workspace, workspace_bytes));
  if (p.cu_seqlens_q != NULL) return run_varlen_fwd(&p, workspace, (cudaStream_t)stream);
  if (p.batch == 0 || p.seqlen_q == 0) return CUDADENT_STATUS_SUCCESS;
  int cc = 0;
  RETURN_IF_FAILED(current_cc(&cc));
  cudaStream_t s = (cudaStream_t)stream;
  if (p.seqlen_k == 0) { /* every row sees no key */
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p.o, p.batch, p.seqlen_q, p.heads_q, p.head_dim_v, s), "fill o"));
    if (p.lse != NULL)
      RETURN_IF_FAILED(launch_result(
          cudadent_fill_float(p.lse, (int64_t)p.batch * p.heads_q * p.seqlen_q, -INFINITY, s),
          "fill lse"));
    return CUDADENT_STATUS_SUCCESS;
  }
  const cudadent_fwd_kernel_t *kernel = NULL;
  RETURN_IF_FAILED(cudadent_pick_fwd(&p, cc, &kernel));
  return launch_result(kernel->launch(&p, workspace, s), kernel->name);
}

/* ---- backward ---------------------------------------------------------------------------------- */

static cudadent_status_t prepare_bwd(const cudadent_attn_bwd_params_t *in,
                                     cudadent_attn_bwd_params_t *p) {
  RETURN_IF_FAILED(read_params(p, sizeof *p, in, "cudadent_attn_bwd_params_t", bwd_layouts,
                               sizeof bwd_layouts / sizeof bwd_layouts[0]));
  const cudadent_shape_t s = CUDADENT_SHAPE_OF(p);
  RETURN_IF_FAILED(cudadent_check_shape(&s));
  cudadent_attn_bwd_params_t probe = *p; /* the head dim alone, as in prepare_fwd */
  probe.head_dim_v = 0;
  int dims[MAX_LISTED_DIMS];
  char list[256];
  if (!cudadent_any_bwd_takes_head_dim(&probe)) {
    dims_list(dims, cudadent_bwd_head_dims(0, p->dtype, &probe, dims, MAX_LISTED_DIMS), list,
              sizeof list);
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                         "head_dim = %d has no backward kernel (supported: %s; the sm80 backward "
                         "needs about 162 KB of shared memory per block: A100/H100 class, not "
                         "sm_86/89)",
                         p->head_dim, list);
  }
  const cudadent_named_tensor_t tensors[] = {
      {"q", &p->q, 0, 0, 0},       {"k", &p->k, 1, 0, 0},  {"v", &p->v, 1, 0, 1},
      {"o", &p->o, 0, 0, 1},       {"dout", &p->dout, 0, 0, 1}, {"dq", &p->dq, 0, 1, 0},
      {"dk", &p->dk, 1, 1, 0},     {"dv", &p->dv, 1, 1, 1}};
  RETURN_IF_FAILED(cudadent_check_tensors(tensors, sizeof tensors / sizeof tensors[0], &s));
  RETURN_IF_FAILED(cudadent_check_lse("lse", p->lse, &s));
  if (p->head_dim_v == 0) p->head_dim_v = p->head_dim;
  if (!cudadent_any_bwd_supports(p)) {
    dims_list(dims, cudadent_bwd_head_dims(0, p->dtype, &probe, dims, MAX_LISTED_DIMS), list,
              sizeof list);
    return refuse_feature(cudadent_bwd_features(p) & ~cudadent_bwd_features_built(&probe),
                          "backward", p->head_dim, p->head_dim_v, p->softcap, list);
  }
  normalize_mask(p->seqlen_q, p->seqlen_k, &p->causal, &p->window_left, &p->window_right);
  return cudadent_check_workspace_bound(cudadent_bwd_workspace_bound(p));
}

cudadent_status_t cudadent_attn_bwd_workspace_size(const cudadent_attn_bwd_params_t *params,
                                                   size_t *bytes) {
  cudadent_clear_error();
  if (bytes == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "bytes is NULL");
  cudadent_attn_bwd_params_t p;
  RETURN_IF_FAILED(prepare_bwd(params, &p));
  *bytes = cudadent_bwd_workspace_bound(&p);
  return CUDADENT_STATUS_SUCCESS;
}

/* A varlen backward (validated, normalized params), as run_varlen_fwd: the kernel is picked first,
 * then on the stream the opt-in check of the arrays, the gap fill (tokens in no sequence: dQ = 0;
 * keys in no sequence's used keys: dK = dV = 0; kernels/varlen.cu) and the kernel. No query
 * (total_q == 0) or no key (max_seqlen_k == 0): every gradient is 0, by fills. */
static cudadent_status_t run_varlen_bwd(const cudadent_attn_bwd_params_t *p, void *workspace,
                                        cudaStream_t s) {
  const int tokens = p->batch > 0 && (p->total_q > 0 || p->total_k > 0);
  if (!tokens && p->seqlens_report == NULL) return CUDADENT_STATUS_SUCCESS;
  int cc = 0;
  RETURN_IF_FAILED(current_cc(&cc));
  const cudadent_bwd_kernel_t *kernel = NULL;
  const int work = tokens && p->total_q > 0 && p->seqlen_k > 0; /* some query may see a key */
  if (work) RETURN_IF_FAILED(cudadent_pick_bwd(p, cc, &kernel));
  if (p->seqlens_report != NULL)
    RETURN_IF_FAILED(launch_varlen_check(p->cu_seqlens_q, p->cu_seqlens_k, p->seqused_k,
                                         p->batch, p->total_q, p->total_k, p->seqlen_q,
                                         p->seqlen_k, p->seqlens_report, s));
  if (!tokens) return CUDADENT_STATUS_SUCCESS;
  if (kernel == NULL) { /* no query sees any key */
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p->dq, 1, p->total_q, p->heads_q, p->head_dim, s), "fill dq"));
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p->dk, 1, p->total_k, p->heads_kv, p->head_dim, s), "fill dk"));
    return launch_result(cudadent_fill_zero(p->dv, 1, p->total_k, p->heads_kv, p->head_dim_v, s),
                         "fill dv");
  }
  RETURN_IF_FAILED(launch_result(cudadent_varlen_bwd_fill_gaps(p, s), "varlen gap fill"));
  return launch_result(kernel->launch(p, workspace, s), kernel->name);
}

cudadent_status_t cudadent_attn_bwd(const cudadent_attn_bwd_params_t *params, void *workspace,
                                    size_t workspace_bytes, cudadent_stream_t stream) {
  cudadent_clear_error();
  cudadent_attn_bwd_params_t p;
  RETURN_IF_FAILED(prepare_bwd(params, &p));
  RETURN_IF_FAILED(cudadent_check_workspace(cudadent_bwd_workspace_bound(&p), workspace, workspace_bytes));
  if (p.cu_seqlens_q != NULL) return run_varlen_bwd(&p, workspace, (cudaStream_t)stream);
  if (p.batch == 0 || (p.seqlen_q == 0 && p.seqlen_k == 0)) return CUDADENT_STATUS_SUCCESS;
  int cc = 0;
  RETURN_IF_FAILED(current_cc(&cc));
  cudaStream_t s = (cudaStream_t)stream;
  if (p.seqlen_q == 0 || p.seqlen_k == 0) { /* no query sees any key: all gradients are zero */
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p.dq, p.batch, p.seqlen_q, p.heads_q, p.head_dim, s), "fill dq"));
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p.dk, p.batch, p.seqlen_k, p.heads_kv, p.head_dim, s), "fill dk"));
    return launch_result(cudadent_fill_zero(p.dv, p.batch, p.seqlen_k, p.heads_kv, p.head_dim_v, s),
                         "fill dv");
  }
  const cudadent_bwd_kernel_t *kernel = NULL;
  RETURN_IF_FAILED(cudadent_pick_bwd(&p, cc, &kernel));
  return launch_result(kernel->launch(&p, workspace, s), kernel->name);
}

/* ---- the supported head dims (cudadent.h) --------------------------------------------------- */

static cudadent_status_t check_head_dims_query(cudadent_dtype_t dtype, int cc, const int *dims,
                                               int capacity, const int *count) {
  if (count == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "count is NULL");
  if (capacity < 0)
    return cudadent_fail(CUDADENT_STATUS_BAD_SIZE, "capacity = %d must be >= 0", capacity);
  if (dims == NULL && capacity > 0)
    return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "head_dims is NULL with capacity = %d",
                         capacity);
  if (cc < 0)
    return cudadent_fail(CUDADENT_STATUS_BAD_SIZE,
                         "compute_capability = %d must be >= 0 (0: the current device)", cc);
  if (dtype != CUDADENT_DTYPE_FP16 && dtype != CUDADENT_DTYPE_BF16 &&
      dtype != CUDADENT_DTYPE_FP8_E4M3)
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_DTYPE,
                         "dtype = %d is not a cudadent_dtype_t (fp16 = 0, bf16 = 1, fp8 = 2)",
                         (int)dtype);
  return CUDADENT_STATUS_SUCCESS;
}

cudadent_status_t cudadent_attn_fwd_supported_head_dims(cudadent_dtype_t dtype,
                                                        int compute_capability, int *head_dims,
                                                        int capacity, int *count) {
  cudadent_clear_error();
  RETURN_IF_FAILED(check_head_dims_query(dtype, compute_capability, head_dims, capacity, count));
  int cc = compute_capability;
  cudadent_attn_fwd_params_t probe; /* the current device's answer: each row's supports() too */
  memset(&probe, 0, sizeof probe);
  if (cc == 0) RETURN_IF_FAILED(current_cc(&cc));
  *count = cudadent_fwd_head_dims(cc, dtype, compute_capability == 0 ? &probe : NULL, head_dims,
                                  capacity);
  return CUDADENT_STATUS_SUCCESS;
}

cudadent_status_t cudadent_attn_bwd_supported_head_dims(cudadent_dtype_t dtype,
                                                        int compute_capability, int *head_dims,
                                                        int capacity, int *count) {
  cudadent_clear_error();
  RETURN_IF_FAILED(check_head_dims_query(dtype, compute_capability, head_dims, capacity, count));
  int cc = compute_capability;
  cudadent_attn_bwd_params_t probe;
  memset(&probe, 0, sizeof probe);
  if (cc == 0) RETURN_IF_FAILED(current_cc(&cc));
  *count = cudadent_bwd_head_dims(cc, dtype, compute_capability == 0 ? &probe : NULL, head_dims,
                                  capacity);
  return CUDADENT_STATUS_SUCCESS;
}
