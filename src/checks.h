/*
 * checks.h - the device-free checks of api.c, field by field: sizes and the limits every kernel
 * indexes safely (cudadent.h, "limits"), tensors (pointer, head_dim stride, alignment, strides,
 * extent, an output overlapping itself), the LSE pointer, the layout-v2 fields (head_dim_v,
 * softcap, varlen), the workspace. Each failure records its
 * own status and a message naming the field and value at fault (errors.h); none touches the
 * device, so every input error reads the same with or without a GPU.
 */
#ifndef CUDADENT_CHECKS_H
#define CUDADENT_CHECKS_H

#include <stddef.h>

#include "cudadent.h"

/* The fields forward and backward share. */
typedef struct cudadent_shape {
  cudadent_dtype_t dtype;
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  float softmax_scale;
  int window_left, window_right;
  /* layout v2 */
  int head_dim_v; /* as the caller gave it: 0 means head_dim */
  float softcap;
  const void *cu_seqlens_q, *cu_seqlens_k, *seqused_k, *seqlens_report;
  int total_q, total_k;
} cudadent_shape_t;

/* The shape of a fwd or bwd params struct (both have these fields). */
#define CUDADENT_SHAPE_OF(p)                                                                \
  {(p)->dtype,    (p)->batch,    (p)->seqlen_q,      (p)->seqlen_k,    (p)->heads_q,        \
   (p)->heads_kv, (p)->head_dim, (p)->softmax_scale, (p)->window_left, (p)->window_right,  \
   (p)->head_dim_v, (p)->softcap, (p)->cu_seqlens_q, (p)->cu_seqlens_k, (p)->seqused_k,     \
   (p)->seqlens_report, (p)->total_q, (p)->total_k}

/* A varlen call (cudadent.h, "features of layout v2"): cu_seqlens_q or cu_seqlens_k set. */
static inline int cudadent_is_varlen(const cudadent_shape_t *s) {
  return s->cu_seqlens_q != NULL || s->cu_seqlens_k != NULL;
}

/* dtype, sizes (sign, heads ratio, the CUDADENT_MAX_* limits), softmax_scale, windows, and the
 * layout-v2 fields: head_dim_v, softcap, the varlen sizes and pointers (both cu_seqlens or none,
 * 4-byte aligned; totals against max_seqlen and batch; none in a dense call). */
cudadent_status_t cudadent_check_shape(const cudadent_shape_t *s);

/* The tensors of one call: a name for messages, whether it is laid out like k (seqlen_k,
 * heads_kv) or like q (seqlen_q, heads_q), whether its last dimension is head_dim_v (v, o, dout,
 * dv) rather than head_dim, and whether it is an output (must not overlap itself). In a varlen
 * call the sizes are (1, total_q or total_k, heads, head dim). Strides of dimensions of size 1
 * are set to 0 (the normal form kernels see). */
typedef struct cudadent_named_tensor {
  const char *name;
  cudadent_tensor_t *t;
  int like_k;
  int output;
  int value_dim;
} cudadent_named_tensor_t;

cudadent_status_t cudadent_check_tensors(const cudadent_named_tensor_t *ts, size_t n,
                                         const cudadent_shape_t *s);

/* A [batch, heads_q, seqlen_q] (varlen: [heads_q, total_q]) fp32 LSE pointer (not checked when
 * that is empty). */
cudadent_status_t cudadent_check_lse(const char *name, const void *lse,
                                     const cudadent_shape_t *s);

/* The workspace the call needs (needed bytes from dispatch) against the caller's. */
cudadent_status_t cudadent_check_workspace_bound(size_t needed);
cudadent_status_t cudadent_check_workspace(size_t needed, const void *workspace, size_t bytes);

#endif /* CUDADENT_CHECKS_H */
