/*
 * checks.h - the device-free checks of api.c, field by field: sizes and the limits every kernel
 * indexes safely (cudadent.h, "limits"), tensors (pointer, head_dim stride, alignment, strides,
 * extent, an output overlapping itself), the LSE pointer, the workspace. Each failure records its
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
} cudadent_shape_t;

/* The shape of a fwd or bwd params struct (both have these fields). */
#define CUDADENT_SHAPE_OF(p)                                                                \
  {(p)->dtype,    (p)->batch,    (p)->seqlen_q,      (p)->seqlen_k,    (p)->heads_q,        \
   (p)->heads_kv, (p)->head_dim, (p)->softmax_scale, (p)->window_left, (p)->window_right}

/* dtype, sizes (sign, heads ratio, the CUDADENT_MAX_* limits), softmax_scale, windows. */
cudadent_status_t cudadent_check_shape(const cudadent_shape_t *s);

/* The tensors of one call: a name for messages, whether it is laid out like k (seqlen_k,
 * heads_kv) or like q (seqlen_q, heads_q), and whether it is an output (must not overlap itself).
 * Strides of dimensions of size 1 are set to 0 (the normal form kernels see). */
typedef struct cudadent_named_tensor {
  const char *name;
  cudadent_tensor_t *t;
  int like_k;
  int output;
} cudadent_named_tensor_t;

cudadent_status_t cudadent_check_tensors(const cudadent_named_tensor_t *ts, size_t n,
                                         const cudadent_shape_t *s);

/* A [batch, heads_q, seqlen_q] fp32 LSE pointer (not checked when that is empty). */
cudadent_status_t cudadent_check_lse(const char *name, const void *lse,
                                     const cudadent_shape_t *s);

/* The workspace the call needs (needed bytes from dispatch) against the caller's. */
cudadent_status_t cudadent_check_workspace_bound(size_t needed);
cudadent_status_t cudadent_check_workspace(size_t needed, const void *workspace, size_t bytes);

#endif /* CUDADENT_CHECKS_H */
