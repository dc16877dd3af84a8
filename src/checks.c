/*
 * checks.c - the device-free checks of api.c (see checks.h). Every size product is computed so
 * that it cannot overflow: the limits of cudadent.h are checked one size at a time before any
 * product of sizes is formed, and tensor extents are summed with overflow checks.
 */
#include "checks.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"

#define RETURN_IF_FAILED(expr)                                  \
  do {                                                          \
    cudadent_status_t status_ = (expr);                         \
    if (status_ != CUDADENT_STATUS_SUCCESS) return status_;     \
  } while (0)

/* ---- shape ------------------------------------------------------------------------------------ */

/* The CUDADENT_MAX_* limits (cudadent.h), on sizes already known to be >= 0. */
static cudadent_status_t check_limits(const cudadent_shape_t *s) {
  if (s->batch > CUDADENT_MAX_BATCH)
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                         "batch = %d exceeds %d (CUDADENT_MAX_BATCH: a grid dimension)", s->batch,
                         CUDADENT_MAX_BATCH);
  if (s->heads_q > CUDADENT_MAX_HEADS)
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                         "heads_q = %d exceeds %d (CUDADENT_MAX_HEADS: a grid dimension)",
                         s->heads_q, CUDADENT_MAX_HEADS);
  if (s->seqlen_q > CUDADENT_MAX_SEQLEN || s->seqlen_k > CUDADENT_MAX_SEQLEN) {
    const int q = s->seqlen_q > CUDADENT_MAX_SEQLEN;
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                         "%s = %d exceeds %d (CUDADENT_MAX_SEQLEN: the kernels' positions are "
                         "int32)",
                         q ? "seqlen_q" : "seqlen_k", q ? s->seqlen_q : s->seqlen_k,
                         CUDADENT_MAX_SEQLEN);
  }
  /* each factor is below 2^31 now: the tile count is below 2^16 * 2^16 * 2^25 */
  const int64_t tiles = (int64_t)s->batch * s->heads_q * (((int64_t)s->seqlen_q + 63) / 64);
  if (tiles > CUDADENT_MAX_QUERY_TILES)
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                         "batch * heads_q * ceil(seqlen_q / 64) = %d * %d * %lld = %lld query "
                         "tiles exceeds %d (CUDADENT_MAX_QUERY_TILES: the kernels count tiles in "
                         "int32)",
                         s->batch, s->heads_q, ((long long)s->seqlen_q + 63) / 64,
                         (long long)tiles, CUDADENT_MAX_QUERY_TILES);
  int64_t scores;
  if (__builtin_mul_overflow((int64_t)s->batch * s->heads_q * s->seqlen_q, (int64_t)s->seqlen_k,
                             &scores) ||
      scores > CUDADENT_MAX_SCORES)
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                         "batch * heads_q * seqlen_q * seqlen_k = %d * %d * %d * %d exceeds 2^62 "
                         "(CUDADENT_MAX_SCORES)",
                         s->batch, s->heads_q, s->seqlen_q, s->seqlen_k);
  return CUDADENT_STATUS_SUCCESS;
}

/* The varlen fields (cudadent.h, "features of layout v2"): what the host knows of them. */
static cudadent_status_t check_varlen(const cudadent_shape_t *s) {
  if (!cudadent_is_varlen(s)) {
    if (s->seqused_k != NULL || s->seqlens_report != NULL)
      return cudadent_fail(CUDADENT_STATUS_NULL_POINTER,
                           "cu_seqlens_q and cu_seqlens_k are NULL but %s is set: %s belongs to "
                           "varlen calls only",
                           s->seqused_k ? "seqused_k" : "seqlens_report",
                           s->seqused_k ? "seqused_k" : "seqlens_report");
    if (s->total_q != 0 || s->total_k != 0)
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE,
                           "%s = %d is set in a dense call (cu_seqlens_q and cu_seqlens_k are "
                           "NULL): leave it 0",
                           s->total_q ? "total_q" : "total_k", s->total_q ? s->total_q : s->total_k);
    return CUDADENT_STATUS_SUCCESS;
  }
  if (s->cu_seqlens_q == NULL || s->cu_seqlens_k == NULL)
    return cudadent_fail(CUDADENT_STATUS_NULL_POINTER,
                         "%s is NULL while %s is set: a varlen call needs both",
                         s->cu_seqlens_q ? "cu_seqlens_k" : "cu_seqlens_q",
                         s->cu_seqlens_q ? "cu_seqlens_q" : "cu_seqlens_k");
  const struct { const char *name; const void *ptr; unsigned align; } ptrs[] = {
      {"cu_seqlens_q", s->cu_seqlens_q, 4}, {"cu_seqlens_k", s->cu_seqlens_k, 4},
      {"seqused_k", s->seqused_k, 4}, {"seqlens_report", s->seqlens_report, 16}};
  for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; ++i)
    if (ptrs[i].ptr != NULL && (uintptr_t)ptrs[i].ptr % ptrs[i].align != 0)
      return cudadent_fail(CUDADENT_STATUS_MISALIGNED, "%s = %p is not %u-byte aligned",
                           ptrs[i].name, ptrs[i].ptr, ptrs[i].align);
  const struct { const char *total_name, *max_name; int total, max; } sides[] = {
      {"total_q", "seqlen_q (max_seqlen_q)", s->total_q, s->seqlen_q},
      {"total_k", "seqlen_k (max_seqlen_k)", s->total_k, s->seqlen_k}};
  for (int i = 0; i < 2; ++i) {
    if (sides[i].total < 0)
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE, "%s = %d must be >= 0", sides[i].total_name,
                           sides[i].total);
    if (sides[i].total > CUDADENT_MAX_SEQLEN)
      return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                           "%s = %d exceeds %d (CUDADENT_MAX_SEQLEN: the kernels' token positions "
                           "are int32)",
                           sides[i].total_name, sides[i].total, CUDADENT_MAX_SEQLEN);
    if (sides[i].max > sides[i].total)
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE,
                           "%s = %d exceeds %s = %d: no sequence can be longer than all the "
                           "tokens of the call",
                           sides[i].max_name, sides[i].max, sides[i].total_name, sides[i].total);
    if ((int64_t)s->batch * sides[i].max < sides[i].total)
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE,
                           "%s = %d exceeds batch * %s = %d * %d: some sequence would be longer "
                           "than the maximum",
                           sides[i].total_name, sides[i].total, sides[i].max_name, s->batch,
                           sides[i].max);
  }
  return CUDADENT_STATUS_SUCCESS;
}

cudadent_status_t cudadent_check_shape(const cudadent_shape_t *s) {
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
  RETURN_IF_FAILED(check_limits(s));
  if (!isfinite(s->softmax_scale) || !(s->softmax_scale > 0.0f))
    return cudadent_fail(CUDADENT_STATUS_BAD_SCALE,
                         "softmax_scale = %g must be finite and > 0", (double)s->softmax_scale);
  if (s->window_left < -1)
    return cudadent_fail(CUDADENT_STATUS_BAD_WINDOW, "window_left = %d must be >= -1 (-1: unbounded)",
                         s->window_left);
  if (s->window_right < -1)
    return cudadent_fail(CUDADENT_STATUS_BAD_WINDOW,
                         "window_right = %d must be >= -1 (-1: unbounded)", s->window_right);
  if (s->head_dim_v < 0)
    return cudadent_fail(CUDADENT_STATUS_BAD_SIZE,
                         "head_dim_v = %d must be >= 0 (0: the same as head_dim)", s->head_dim_v);
  if (!isfinite(s->softcap) || s->softcap < 0.0f)
    return cudadent_fail(CUDADENT_STATUS_BAD_SCALE,
                         "softcap = %g must be finite and >= 0 (0: no soft-capping)",
                         (double)s->softcap);
  return check_varlen(s);
}

/* ---- tensors ---------------------------------------------------------------------------------- */

static int element_bytes(cudadent_dtype_t dtype) {
  (void)dtype; /* fp16 and bf16; fp8 is refused before this is asked */
  return 2;
}

static const char *const stride_names[3] = {"stride_batch", "stride_seq", "stride_head"};

/* An output must not overlap itself: its dimensions of size > 1 in increasing stride order, each
 * stride at least the elements the smaller ones span (cudadent.h). Extents are known not to
 * overflow (check_tensor). */
static cudadent_status_t check_no_self_overlap(const char *name, const cudadent_tensor_t *t,
                                               const int dims[4], const char *const dim_names[3],
                                               const char *dim_name) {
  const int64_t strides[3] = {t->stride_batch, t->stride_seq, t->stride_head};
  int order[3], n = 0;
  for (int i = 0; i < 3; ++i) {
    if (dims[i] <= 1) continue;
    int j = n++;
    for (; j > 0 && strides[order[j - 1]] > strides[i]; --j) order[j] = order[j - 1];
    order[j] = i;
  }
  int64_t reach = dims[3]; /* head_dim: contiguous */
  char spanned[96];
  int used = snprintf(spanned, sizeof spanned, "%s = %d", dim_name, dims[3]);
  for (int k = 0; k < n; ++k) {
    const int i = order[k];
    if (strides[i] < reach)
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE,
                           "%s.%s = %lld makes the output %s overlap itself: with %s = %d it must "
                           "be at least %lld, the elements spanned by %s",
                           name, stride_names[i], (long long)strides[i], name, dim_names[i],
                           dims[i], (long long)reach, spanned);
    reach += strides[i] * (dims[i] - 1);
    if (used > 0 && (size_t)used < sizeof spanned)
      used += snprintf(spanned + used, sizeof spanned - (size_t)used, " and %s over %s = %d",
                       stride_names[i], dim_names[i], dims[i]);
  }
  return CUDADENT_STATUS_SUCCESS;
}

/* One 4-d tensor, dims = {batch, seqlen, heads, head_dim}: pointer, head_dim stride, alignment,
 * strides (sign, zero, bytes), an extent that cannot wrap, and for an output no self-overlap. A
 * tensor with no element is not checked (its pointer may be NULL). */
static cudadent_status_t check_tensor(const cudadent_named_tensor_t *nt, const int dims[4],
                                      int elem_bytes, int varlen, int head_dim_v_set) {
  const char *name = nt->name;
  cudadent_tensor_t *t = nt->t;
  static const char *const q_dims[3] = {"batch", "seqlen_q", "heads_q"};
  static const char *const k_dims[3] = {"batch", "seqlen_k", "heads_kv"};
  static const char *const varlen_q_dims[3] = {"batch", "total_q", "heads_q"};
  static const char *const varlen_k_dims[3] = {"batch", "total_k", "heads_kv"};
  const char *const *dim_names = varlen ? (nt->like_k ? varlen_k_dims : varlen_q_dims)
                                        : (nt->like_k ? k_dims : q_dims);
  const char *dim_name = nt->value_dim && head_dim_v_set ? "head_dim_v" : "head_dim";
  for (int i = 0; i < 4; ++i)
    if (dims[i] == 0) return CUDADENT_STATUS_SUCCESS;
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
                         "%s: %s = %d rows of %d bytes are not a multiple of 16 bytes", name,
                         dim_name, dims[3], dims[3] * elem_bytes);
  int64_t *strides[3] = {&t->stride_batch, &t->stride_seq, &t->stride_head};
  int64_t extent = dims[3]; /* elements from the first to one past the last */
  for (int i = 0; i < 3; ++i) {
    if (dims[i] == 1) {
      *strides[i] = 0; /* ignored: the normal form */
      continue;
    }
    const int64_t stride = *strides[i];
    if (stride < 0)
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE, "%s.%s = %lld is negative", name,
                           stride_names[i], (long long)stride);
    if (stride == 0)
      return cudadent_fail(CUDADENT_STATUS_BAD_SIZE,
                           "%s.%s = 0 with %s = %d: a zero stride (broadcast) is allowed only on "
                           "a dimension of size 1",
                           name, stride_names[i], dim_names[i], dims[i]);
    int64_t stride_bytes;
    if (__builtin_mul_overflow(stride, (int64_t)elem_bytes, &stride_bytes))
      return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW, "%s.%s = %lld overflows in bytes", name,
                           stride_names[i], (long long)stride);
    if (stride_bytes % 16 != 0)
      return cudadent_fail(CUDADENT_STATUS_MISALIGNED,
                           "%s.%s = %lld elements (%lld bytes) is not a multiple of 16 bytes",
                           name, stride_names[i], (long long)stride, (long long)stride_bytes);
    if (stride_bytes >= CUDADENT_MAX_STRIDE_BYTES)
      return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                           "%s.%s = %lld elements (%lld bytes) is not below 2^40 bytes "
                           "(CUDADENT_MAX_STRIDE_BYTES: TMA tensor maps)",
                           name, stride_names[i], (long long)stride, (long long)stride_bytes);
    int64_t span;
    if (__builtin_mul_overflow(stride, (int64_t)(dims[i] - 1), &span) ||
        __builtin_add_overflow(extent, span, &extent))
      return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                           "%s: extent overflows int64 (%s = %lld over %s = %d)", name,
                           stride_names[i], (long long)stride, dim_names[i], dims[i]);
  }
  int64_t extent_bytes;
  if (__builtin_mul_overflow(extent, (int64_t)elem_bytes, &extent_bytes) ||
      extent_bytes > CUDADENT_MAX_TENSOR_BYTES)
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                         "%s spans %lld elements, more than 2^48 bytes "
                         "(CUDADENT_MAX_TENSOR_BYTES)",
                         name, (long long)extent);
  if (nt->output) return check_no_self_overlap(name, t, dims, dim_names, dim_name);
  return CUDADENT_STATUS_SUCCESS;
}

cudadent_status_t cudadent_check_tensors(const cudadent_named_tensor_t *ts, size_t n,
                                         const cudadent_shape_t *s) {
  const int eb = element_bytes(s->dtype);
  const int varlen = cudadent_is_varlen(s);
  const int dv = s->head_dim_v ? s->head_dim_v : s->head_dim;
  const int batch = varlen ? 1 : s->batch; /* varlen: stride_batch ignored (size 1 -> 0) */
  const int sq = varlen ? s->total_q : s->seqlen_q, sk = varlen ? s->total_k : s->seqlen_k;
  for (size_t i = 0; i < n; ++i) {
    const int dims[4] = {batch, ts[i].like_k ? sk : sq, ts[i].like_k ? s->heads_kv : s->heads_q,
                         ts[i].value_dim ? dv : s->head_dim};
    RETURN_IF_FAILED(check_tensor(&ts[i], dims, eb, varlen, s->head_dim_v != 0));
  }
  return CUDADENT_STATUS_SUCCESS;
}

cudadent_status_t cudadent_check_lse(const char *name, const void *lse, const cudadent_shape_t *s) {
  if (cudadent_is_varlen(s) ? s->total_q == 0
                            : s->batch == 0 || s->heads_q == 0 || s->seqlen_q == 0)
    return CUDADENT_STATUS_SUCCESS;
  if (lse == NULL) return cudadent_fail(CUDADENT_STATUS_NULL_POINTER, "%s is NULL", name);
  if ((uintptr_t)lse % 16 != 0)
    return cudadent_fail(CUDADENT_STATUS_MISALIGNED, "%s = %p is not 16-byte aligned", name, lse);
  return CUDADENT_STATUS_SUCCESS;
}

/* ---- workspace -------------------------------------------------------------------------------- */

cudadent_status_t cudadent_check_workspace_bound(size_t needed) {
  if (needed > (size_t)CUDADENT_MAX_TENSOR_BYTES)
    return cudadent_fail(CUDADENT_STATUS_SIZE_OVERFLOW,
                         "these params need a workspace of %zu bytes, more than 2^48 "
                         "(CUDADENT_MAX_TENSOR_BYTES)",
                         needed);
  return CUDADENT_STATUS_SUCCESS;
}

cudadent_status_t cudadent_check_workspace(size_t needed, const void *workspace, size_t bytes) {
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
