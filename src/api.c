/*
 * api.c - the public entry points: check every field, normalize, pick a kernel, launch.
 *
 * Order of checks (each failure has its own status and a message naming field and value; nothing
 * is launched and nothing written): params pointer and struct_size, dtype, sizes, heads, head_dim
 * (is there a kernel for it at all), softmax_scale, windows, pointers, head_dim stride, strides
 * and alignment, tensor extents (int64, never wrapping), workspace, then the device: present, and
 * an architecture with a kernel. Checks that need no device come first, so every input error is
 * reported the same way on a machine without a GPU.
 *
 * Zero sizes: batch == 0 does nothing. seqlen_k == 0 makes every query row fully masked (O = 0,
 * LSE = -inf; dQ = 0); seqlen_q == 0 leaves dK = dV = 0. Those are written by small fill kernels.
 */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cudadent.h"
#include "dispatch.h"
#include "errors.h"

int cudadent_get_version(void) { return CUDADENT_VERSION; }

#define RETURN_IF_FAILED(expr)                          \
  do {                                                  \
    cudadent_status_t status_ = (expr);                 \
    if (status_ != CUDADENT_STATUS_SUCCESS) return status_; \
  } while (0)

/* Grid dimensions y and z are limited to 65535; kernels put heads and batch there. */
enum { MAX_GRID_YZ = 65535 };

/* ---- checks shared by forward and backward ---------------------------------------------------- */

typedef struct shape {
  cudadent_dtype_t dtype;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  float softmax_scale;
  int window_left, window_right;
} shape_t;

/* The shape_t of a fwd or bwd params struct (both have these fields). */
#define SHAPE_OF(p)                                                                        \
  {(p)->dtype,    (p)->batch,         (p)->seqlen_q,    (p)->seqlen_k,    (p)->heads_q,      \
   (p)->heads_kv, (p)->head_dim,      (p)->softmax_scale, (p)->window_left, (p)->window_right}

static cudadent_status_t check_shape(const shape_t *s) {
  if (s->dtype == CUDADENT_DTYPE_FP8_E4M3)
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_DTYPE,
                         "dtype = CUDADENT_DTYPE_FP8_E4M3 (2) is reserved: no fp8 kernel yet");
  if (s->dtype != CUDADENT_DTYPE_FP16 && s->dtype != CUDADENT_DTYPE_BF16)
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_DTYPE,
                         "dtype = %d is not a cudadent_dtype_t (fp16 = 0, bf16 = 1)", (int)s->dtype);
  const struct { const char *name; int value; int may_be_zero; } sizes[] = {
      {"batch", s->batch, 1},       {"seqlen_q", s->seqlen_q, 1}, {"seqlen_k", s->seqlen_k, 1},
      {"heads_q", s->heads_q, 0},   {"heads_kv", s->heads_kv, 0}, {"head_dim", s->head_dim, 0}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    if (sizes[i].value < 0 || (sizes[i].value == 0 && !sizes[i].may_be_zero))
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE, "%s = %d must be %s", sizes[i].name,
                           sizes[i].value, sizes[i].may_be_zero ? ">= 0" : "> 0");
  }
  if (s->heads_q % s->heads_kv != 0)
    return cudadent_fail(CUDADENT_STATUS_BAD_HEADS,
                         "heads_q = %d is not a multiple of heads_kv = %d", s->heads_q, s->heads_kv);
  if (s->batch > MAX_GRID_YZ)
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW, "batch = %d exceeds %d", s->batch,
                         MAX_GRID_YZ);
  if (s->heads_q > MAX_GRID_YZ)
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW, "heads_q = %d exceeds %d", s->heads_q,
                         MAX_GRID_YZ);
  if (!isfinite(s->softmax_scale) || !(s->softmax_scale > 0.0f))
    return cudadent_fail(CUDADENT_STATUS_BAD_SCALE,
                         "softmax_scale = %g must be finite and > 0", (double)s->softmax_scale);
  if (s->window_left < -1)
    return cudadent_fail(CUDADENT_STATUS_BAD_WINDOW, "window_left = %d must be >= -1 (-1: unbounded)",
                         s->window_left);
  if (s->window_right < -1)
    return cudadent_fail(CUDADENT_STATUS_BAD_WINDOW,
                         "window_right = %d must be >= -1 (-1: unbounded)", s->window_right);
  return CUDADENT_STATUS_SUCCESS;
}

static int element_bytes(cudadent_dtype_t dtype) {
  (void)dtype; /* fp16 and bf16; fp8 is refused before this is asked */
  return 2;
}

/* One 4-d tensor: pointer, head_dim stride, stride signs and alignment, and an int64 extent that
 * cannot wrap. dims = {batch, seqlen, heads, head_dim}. A tensor with no element is not checked
 * (its pointer may be NULL). A stride of a dimension of size 1 is ignored (set to 0). */
static cudadent_status_t check_tensor(const char *name, cudadent_tensor_t *t, const int dims[4],
                                      int elem_bytes) {
  if ((int64_t)dims[0] * dims[1] * dims[2] * dims[3] == 0) return CUDADENT_STATUS_SUCCESS;
  if (t->data == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "%s.data is NULL", name);
  if (t->stride_dim != 1)
    return cudadent_fail(CUDADENT_STATUS_NOT_CONTIGUOUS,
                         "%s.stride_dim = %lld: head_dim must be contiguous (stride 1)", name,
                         (long long)t->stride_dim);
  if ((uintptr_t)t->data % 16 != 0)
    return cudadent_fail(CUDADENT_STATUS_MISALIGNED, "%s.data = %p is not 16-byte aligned", name,
                         t->data);
  if (((int64_t)dims[3] * elem_bytes) % 16 != 0)
    return cudadent_fail(CUDADENT_STATUS_MISALIGNED,
                         "%s: head_dim = %d rows of %d bytes are not a multiple of 16 bytes", name,
                         dims[3], dims[3] * elem_bytes);
  int64_t *strides[3] = {&t->stride_batch, &t->stride_seq, &t->stride_head};
  const char *stride_names[3] = {"stride_batch", "stride_seq", "stride_head"};
  int64_t extent = dims[3]; /* elements from the first to one past the last */
  for (int i = 0; i < 3; ++i) {
    if (dims[i] == 1) *strides[i] = 0;
    int64_t stride = *strides[i];
    if (stride < 0)
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE, "%s.%s = %lld is negative", name,
                           stride_names[i], (long long)stride);
    int64_t stride_bytes;
    if (__builtin_mul_overflow(stride, (int64_t)elem_bytes, &stride_bytes))
      return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW, "%s.%s = %lld overflows in bytes", name,
                           stride_names[i], (long long)stride);
    if (stride_bytes % 16 != 0)
      return cudadent_fail(CUDADENT_STATUS_MISALIGNED,
                           "%s.%s = %lld elements (%lld bytes) is not a multiple of 16 bytes",
                           name, stride_names[i], (long long)stride, (long long)stride_bytes);
    int64_t span;
    if (__builtin_mul_overflow(stride, (int64_t)(dims[i] - 1), &span) ||
        __builtin_add_overflow(extent, span, &extent))
      return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                           "%s: extent overflows int64 (%s = %lld over %d)", name, stride_names[i],
                           (long long)stride, dims[i]);
  }
  int64_t extent_bytes;
  if (__builtin_mul_overflow(extent, (int64_t)elem_bytes, &extent_bytes) ||
      extent_bytes > ((int64_t)1 << 48))
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                         "%s spans %lld elements, more than any device memory", name,
                         (long long)extent);
  return CUDADENT_STATUS_SUCCESS;
}

/* The tensors of one call: names for messages, and whether each is laid out like k (seqlen_k,
 * heads_kv) or like q (seqlen_q, heads_q). */
typedef struct named_tensor {
  const char *name;
  cudadent_tensor_t *t;
  int like_k;
} named_tensor_t;

static cudadent_status_t check_tensors(const named_tensor_t *ts, size_t n, const shape_t *s) {
  const int eb = element_bytes(s->dtype);
  const int dims_q[4] = {s->batch, s->seqlen_q, s->heads_q, s->head_dim};
  const int dims_k[4] = {s->batch, s->seqlen_k, s->heads_kv, s->head_dim};
  for (size_t i = 0; i < n; ++i)
    RETURN_IF_FAILED(check_tensor(ts[i].name, ts[i].t, ts[i].like_k ? dims_k : dims_q, eb));
  return CUDADENT_STATUS_SUCCESS;
}

static cudadent_status_t check_lse(const char *name, const void *lse, const shape_t *s) {
  if ((int64_t)s->batch * s->heads_q * s->seqlen_q == 0) return CUDADENT_STATUS_SUCCESS;
  if (lse == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "%s is NULL", name);
  if ((uintptr_t)lse % 16 != 0)
    return cudadent_fail(CUDADENT_STATUS_MISALIGNED, "%s = %p is not 16-byte aligned", name, lse);
  return CUDADENT_STATUS_SUCCESS;
}

/* "64, 128": the head_dims some built kernel takes for params like *p (fwd or bwd). */
static void supported_head_dims(const void *params, int bwd, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int d = 8; d <= 512; d += 8) {
    int ok;
    if (bwd) {
      cudadent_attn_bwd_params_t p = *(const cudadent_attn_bwd_params_t *)params;
      p.head_dim = d;
      ok = cudadent_any_bwd_supports(&p);
    } else {
      cudadent_attn_fwd_params_t p = *(const cudadent_attn_fwd_params_t *)params;
      p.head_dim = d;
      ok = cudadent_any_fwd_supports(&p);
    }
    if (ok && used < len) used += (size_t)snprintf(buf + used, len - used, "%s%d", used ? ", " : "", d);
  }
  if (!buf[0]) snprintf(buf, len, "none for these params in this build on this device");
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

static cudadent_status_t check_workspace(size_t needed, const void *workspace, size_t bytes) {
  if (needed == 0) return CUDADENT_STATUS_SUCCESS;
  if (workspace == NULL)
    return cudadent_fail(CUDADENT_STATUS_WORKSPACE_TOO_SMALL,
                         "workspace is NULL but this call needs %zu bytes", needed);
  if (bytes < needed)
    return cudadent_fail(CUDADENT_STATUS_WORKSPACE_TOO_SMALL,
                         "workspace_bytes = %zu is less than the %zu bytes this call needs", bytes,
                         needed);
  if ((uintptr_t)workspace % 256 != 0)
    return cudadent_fail(CUDADENT_STATUS_MISALIGNED, "workspace = %p is not 256-byte aligned",
                         workspace);
  return CUDADENT_STATUS_SUCCESS;
}

/* Compute capability of the current device (e.g. 90), or a NO_DEVICE failure. */
static cudadent_status_t current_cc(int *cc) {
  int device = 0, count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError(); /* do not leave the failure sticky for the caller */
    return cudadent_fail(CUDADENT_STATUS_NO_DEVICE, "no CUDA device: %s",
                         err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0");
  }
  int major = 0, minor = 0;
  if ((err = cudaGetDevice(&device)) != cudaSuccess ||
      (err = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device)) !=
          cudaSuccess ||
      (err = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device)) !=
          cudaSuccess)
    return cudadent_fail(CUDADENT_STATUS_NO_DEVICE, "cannot query the current device: %s",
                         cudaGetErrorString(err));
  *cc = major * 10 + minor;
  return CUDADENT_STATUS_SUCCESS;
}

static cudadent_status_t launch_result(cudaError_t err, const char *what) {
  if (err == cudaSuccess) return CUDADENT_STATUS_SUCCESS;
  return cudadent_fail(CUDADENT_STATUS_CUDA_ERROR, "%s: %s (%s)", what, cudaGetErrorName(err),
                       cudaGetErrorString(err));
}


/* ---- forward ----------------------------------------------------------------------------------- */

/* Validates *in into *p (a normalized copy). Device-free. */
static cudadent_status_t prepare_fwd(const cudadent_attn_fwd_params_t *in,
                                     cudadent_attn_fwd_params_t *p) {
  if (in == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "params is NULL");
  if (in->struct_size != sizeof(cudadent_attn_fwd_params_t))
    return cudadent_fail(CUDADENT_STATUS_BAD_STRUCT_SIZE,
                         "params.struct_size = %zu, this library expects %zu "
                         "(sizeof(cudadent_attn_fwd_params_t))",
                         in->struct_size, sizeof(cudadent_attn_fwd_params_t));
  *p = *in;
  const shape_t s = SHAPE_OF(p);
  RETURN_IF_FAILED(check_shape(&s));
  if (!cudadent_any_fwd_supports(p)) {
    char dims[128];
    supported_head_dims(p, 0, dims, sizeof dims);
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                         "head_dim = %d has no forward kernel (supported: %s)", p->head_dim, dims);
  }
  const named_tensor_t tensors[] = {
      {"q", &p->q, 0}, {"k", &p->k, 1}, {"v", &p->v, 1}, {"o", &p->o, 0}};
  RETURN_IF_FAILED(check_tensors(tensors, sizeof tensors / sizeof tensors[0], &s));
  if (p->lse != NULL) RETURN_IF_FAILED(check_lse("lse", p->lse, &s));
  normalize_mask(p->seqlen_q, p->seqlen_k, &p->causal, &p->window_left, &p->window_right);
  return CUDADENT_STATUS_SUCCESS;
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

cudadent_status_t cudadent_attn_fwd(const cudadent_attn_fwd_params_t *params, void *workspace,
                                    size_t workspace_bytes, cudadent_stream_t stream) {
  cudadent_clear_error();
  cudadent_attn_fwd_params_t p;
  RETURN_IF_FAILED(prepare_fwd(params, &p));
  RETURN_IF_FAILED(check_workspace(cudadent_fwd_workspace_bound(&p), workspace, workspace_bytes));
  if (p.batch == 0 || p.seqlen_q == 0) return CUDADENT_STATUS_SUCCESS;
  int cc = 0;
  RETURN_IF_FAILED(current_cc(&cc));
  cudaStream_t s = (cudaStream_t)stream;
  if (p.seqlen_k == 0) { /* every row sees no key */
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p.o, p.batch, p.seqlen_q, p.heads_q, p.head_dim, s), "fill o"));
    if (p.lse != NULL)
      RETURN_IF_FAILED(launch_result(
          cudadent_fill_float(p.lse, (int64_t)p.batch * p.heads_q * p.seqlen_q, -INFINITY, s),
          "fill lse"));
    return CUDADENT_STATUS_SUCCESS;
  }
  cudadent_kernel_path_t path = cudadent_pick_fwd(&p, cc);
  if (path == CUDADENT_PATH_NONE)
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_ARCH,
                         "no forward kernel for compute capability %d.%d%s", cc / 10, cc % 10,
                         cc < 80 ? " (cudadent needs 8.0 or newer)"
                                 : " with these params (or CUDADENT_KERNEL forces another path)");
  return launch_result(cudadent_launch_fwd(path, &p, workspace, s), cudadent_path_name(path));
}

/* ---- backward ---------------------------------------------------------------------------------- */

static cudadent_status_t prepare_bwd(const cudadent_attn_bwd_params_t *in,
                                     cudadent_attn_bwd_params_t *p) {
  if (in == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "params is NULL");
  if (in->struct_size != sizeof(cudadent_attn_bwd_params_t))
    return cudadent_fail(CUDADENT_STATUS_BAD_STRUCT_SIZE,
                         "params.struct_size = %zu, this library expects %zu "
                         "(sizeof(cudadent_attn_bwd_params_t))",
                         in->struct_size, sizeof(cudadent_attn_bwd_params_t));
  *p = *in;
  const shape_t s = SHAPE_OF(p);
  RETURN_IF_FAILED(check_shape(&s));
  if (!cudadent_any_bwd_supports(p)) {
    char dims[128];
    supported_head_dims(p, 1, dims, sizeof dims);
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                         "head_dim = %d has no backward kernel (supported: %s; the sm80 backward "
                         "needs about 162 KB of shared memory per block: A100/H100 class, not "
                         "sm_86/89)",
                         p->head_dim, dims);
  }
  const named_tensor_t tensors[] = {
      {"q", &p->q, 0},       {"k", &p->k, 1},   {"v", &p->v, 1},   {"o", &p->o, 0},
      {"dout", &p->dout, 0}, {"dq", &p->dq, 0}, {"dk", &p->dk, 1}, {"dv", &p->dv, 1}};
  RETURN_IF_FAILED(check_tensors(tensors, sizeof tensors / sizeof tensors[0], &s));
  RETURN_IF_FAILED(check_lse("lse", p->lse, &s));
  normalize_mask(p->seqlen_q, p->seqlen_k, &p->causal, &p->window_left, &p->window_right);
  return CUDADENT_STATUS_SUCCESS;
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

cudadent_status_t cudadent_attn_bwd(const cudadent_attn_bwd_params_t *params, void *workspace,
                                    size_t workspace_bytes, cudadent_stream_t stream) {
  cudadent_clear_error();
  cudadent_attn_bwd_params_t p;
  RETURN_IF_FAILED(prepare_bwd(params, &p));
  RETURN_IF_FAILED(check_workspace(cudadent_bwd_workspace_bound(&p), workspace, workspace_bytes));
  if (p.batch == 0 || (p.seqlen_q == 0 && p.seqlen_k == 0)) return CUDADENT_STATUS_SUCCESS;
  int cc = 0;
  RETURN_IF_FAILED(current_cc(&cc));
  cudaStream_t s = (cudaStream_t)stream;
  if (p.seqlen_q == 0 || p.seqlen_k == 0) { /* no query sees any key: all gradients are zero */
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p.dq, p.batch, p.seqlen_q, p.heads_q, p.head_dim, s), "fill dq"));
    RETURN_IF_FAILED(launch_result(
        cudadent_fill_zero(p.dk, p.batch, p.seqlen_k, p.heads_kv, p.head_dim, s), "fill dk"));
    return launch_result(cudadent_fill_zero(p.dv, p.batch, p.seqlen_k, p.heads_kv, p.head_dim, s),
                         "fill dv");
  }
  cudadent_kernel_path_t path = cudadent_pick_bwd(&p, cc);
  if (path == CUDADENT_PATH_NONE)
    return cudadent_fail(CUDADENT_STATUS_UNSUPPORTED_ARCH,
                         "no backward kernel for compute capability %d.%d%s", cc / 10, cc % 10,
                         cc < 80 ? " (cudadent needs 8.0 or newer)"
                                 : " with these params (or CUDADENT_KERNEL forces another path)");
  return launch_result(cudadent_launch_bwd(path, &p, workspace, s), cudadent_path_name(path));
}
