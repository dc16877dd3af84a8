/*
 * cudadent.h - the whole public API of cudadent: attention kernels for LLM pretraining.
 *
 * Plain C11. Tensors are laid out (batch, seqlen, heads, head_dim) with arbitrary batch, sequence
 * and head strides (in elements) and a contiguous head_dim, as flash-attn takes them.
 *
 * Calls are asynchronous on the given stream; they allocate nothing, synchronize nothing and copy
 * nothing between host and device, so they can be captured in a CUDA graph. Scratch memory comes
 * from the caller (workspace), sized by the matching *_workspace_size query.
 *
 * Errors are values: every entry point returns a cudadent_status_t; on failure a detailed,
 * thread-local message naming the field and value at fault is kept for
 * cudadent_get_last_error_message(). Bad input is refused before any launch and nothing is
 * written to outputs.
 */
#ifndef CUDADENT_H
#define CUDADENT_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(CUDADENT_BUILDING_LIBRARY)
#    define CUDADENT_API __declspec(dllexport)
#  else
#    define CUDADENT_API __declspec(dllimport)
#  endif
#else
#  define CUDADENT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions -------------------------------------------------------------------------------- */
#define CUDADENT_VERSION_MAJOR 0
#define CUDADENT_VERSION_MINOR 1
#define CUDADENT_VERSION_PATCH 0
/* MAJOR * 10000 + MINOR * 100 + PATCH */
#define CUDADENT_VERSION \
  (CUDADENT_VERSION_MAJOR * 10000 + CUDADENT_VERSION_MINOR * 100 + CUDADENT_VERSION_PATCH)

/* The version of the library actually loaded, in the CUDADENT_VERSION encoding. */
CUDADENT_API int cudadent_get_version(void);

/* ---- status codes ---------------------------------------------------------------------------- */
typedef enum cudadent_status {
  CUDADENT_STATUS_SUCCESS = 0,
  CUDADENT_STATUS_NULL_POINTER = 1,        /* a required pointer is NULL */
  CUDADENT_STATUS_BAD_STRUCT_SIZE = 2,     /* params.struct_size is smaller than any known layout */
  CUDADENT_STATUS_BAD_SIZE = 3,            /* a size is negative, or zero where it must be positive */
  CUDADENT_STATUS_SIZE_OVERFLOW = 4,       /* a tensor's extent or a size product overflows */
  CUDADENT_STATUS_BAD_HEADS = 5,           /* heads_q is not a multiple of heads_kv */
  CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM = 6,
  CUDADENT_STATUS_UNSUPPORTED_DTYPE = 7,
  CUDADENT_STATUS_MISALIGNED = 8,          /* a pointer or a stride is not 16-byte aligned */
  CUDADENT_STATUS_NOT_CONTIGUOUS = 9,      /* head_dim stride is not 1 */
  CUDADENT_STATUS_BAD_WINDOW = 10,         /* window_left / window_right below -1 */
  CUDADENT_STATUS_BAD_SCALE = 11,          /* softmax_scale not finite or not positive */
  CUDADENT_STATUS_WORKSPACE_TOO_SMALL = 12,
  CUDADENT_STATUS_NO_DEVICE = 13,          /* no CUDA device, or no driver */
  CUDADENT_STATUS_UNSUPPORTED_ARCH = 14,   /* the current device has no kernel in this build */
  CUDADENT_STATUS_UNSUPPORTED_FEATURE = 15,/* a valid combination no kernel implements yet */
  CUDADENT_STATUS_CUDA_ERROR = 16,         /* a CUDA call failed; the message names it */
  CUDADENT_STATUS_INTERNAL_ERROR = 17
} cudadent_status_t;

/* A short static description of a status ("CUDADENT_STATUS_MISALIGNED: ..."). Never NULL. */
CUDADENT_API const char *cudadent_get_error_string(cudadent_status_t status);

/* The detailed message of the last failing call on this thread (field and value at fault), or ""
 * if the last call succeeded. The pointer stays valid until the next cudadent call on this thread. */
CUDADENT_API const char *cudadent_get_last_error_message(void);

/* ---- tensors and parameters ------------------------------------------------------------------ */
typedef enum cudadent_dtype {
  CUDADENT_DTYPE_FP16 = 0,
  CUDADENT_DTYPE_BF16 = 1,
  CUDADENT_DTYPE_FP8_E4M3 = 2 /* reserved: refused with CUDADENT_STATUS_UNSUPPORTED_DTYPE */
} cudadent_dtype_t;

/* A 4-d device tensor (batch, seqlen, heads, head_dim). Strides are in elements; stride_dim must
 * be 1 (head_dim contiguous). Pointer and the batch/seq/head strides (in bytes) must be multiples
 * of 16. A stride may be 0 only where that dimension has size 1. */
typedef struct cudadent_tensor {
  void *data;
  int64_t stride_batch;
  int64_t stride_seq;
  int64_t stride_head;
  int64_t stride_dim;
} cudadent_tensor_t;

/* Masking. Query row i sees key column j when
 *     (window_left  < 0 || j >= i + (seqlen_k - seqlen_q) - window_left) &&
 *     (window_right < 0 || j <= i + (seqlen_k - seqlen_q) + window_right)
 * i.e. windows are aligned to the bottom-right corner, as flash-attn. causal != 0 is the same as
 * window_right = 0 (and overrides window_right). A query row that sees no key gets O = 0 and
 * LSE = -inf. */

typedef struct cudadent_attn_fwd_params {
  size_t struct_size;        /* = sizeof(cudadent_attn_fwd_params_t); lets the struct grow */
  cudadent_dtype_t dtype;    /* of q, k, v, o */
  int batch;
  int seqlen_q;
  int seqlen_k;
  int heads_q;
  int heads_kv;              /* heads_q % heads_kv == 0: GQA (1 < ratio), MQA (heads_kv == 1) */
  int head_dim;
  cudadent_tensor_t q;       /* [batch, seqlen_q, heads_q,  head_dim] */
  cudadent_tensor_t k;       /* [batch, seqlen_k, heads_kv, head_dim] */
  cudadent_tensor_t v;       /* [batch, seqlen_k, heads_kv, head_dim] */
  cudadent_tensor_t o;       /* [batch, seqlen_q, heads_q,  head_dim] output */
  float *lse;                /* [batch, heads_q, seqlen_q] fp32 contiguous, natural log of the
                                softmax denominator of scaled scores; NULL: not written (the
                                Hopper kernel then sums P's rows on the tensor core: same O
                                accuracy, a few % faster; the backward needs the LSE) */
  float softmax_scale;       /* usually 1/sqrt(head_dim) */
  int causal;
  int window_left;           /* -1: unbounded */
  int window_right;          /* -1: unbounded */
  int deterministic;         /* forward is always deterministic; kept for symmetry */
} cudadent_attn_fwd_params_t;

typedef struct cudadent_attn_bwd_params {
  size_t struct_size;        /* = sizeof(cudadent_attn_bwd_params_t) */
  cudadent_dtype_t dtype;    /* of q, k, v, o, dout, dq, dk, dv */
  int batch;
  int seqlen_q;
  int seqlen_k;
  int heads_q;
  int heads_kv;
  int head_dim;
  cudadent_tensor_t q;       /* [batch, seqlen_q, heads_q,  head_dim] */
  cudadent_tensor_t k;       /* [batch, seqlen_k, heads_kv, head_dim] */
  cudadent_tensor_t v;       /* [batch, seqlen_k, heads_kv, head_dim] */
  cudadent_tensor_t o;       /* [batch, seqlen_q, heads_q,  head_dim] forward output */
  cudadent_tensor_t dout;    /* [batch, seqlen_q, heads_q,  head_dim] gradient of o */
  cudadent_tensor_t dq;      /* [batch, seqlen_q, heads_q,  head_dim] output */
  cudadent_tensor_t dk;      /* [batch, seqlen_k, heads_kv, head_dim] output */
  cudadent_tensor_t dv;      /* [batch, seqlen_k, heads_kv, head_dim] output */
  const float *lse;          /* [batch, heads_q, seqlen_q] from the forward; required */
  float softmax_scale;
  int causal;
  int window_left;
  int window_right;
  int deterministic;         /* != 0: dq/dk/dv bit-identical run to run (slower) */
} cudadent_attn_bwd_params_t;

/* ---- entry points ---------------------------------------------------------------------------- */

/* The same type as cudaStream_t (struct CUstream_st *), named here so that this header needs no
 * CUDA headers; a cudaStream_t passes as it is. NULL is the legacy default stream. */
struct CUstream_st;
typedef struct CUstream_st *cudadent_stream_t;

/* Bytes of device workspace the call needs for these params (on the current device). */
CUDADENT_API cudadent_status_t cudadent_attn_fwd_workspace_size(
    const cudadent_attn_fwd_params_t *params, size_t *bytes);
CUDADENT_API cudadent_status_t cudadent_attn_bwd_workspace_size(
    const cudadent_attn_bwd_params_t *params, size_t *bytes);

/* Launch on stream. The workspace must be device memory of at least the queried size, 256-byte
 * aligned; it may be NULL when the query returned 0. Its content on entry does not matter. */
CUDADENT_API cudadent_status_t cudadent_attn_fwd(const cudadent_attn_fwd_params_t *params,
                                                 void *workspace, size_t workspace_bytes,
                                                 cudadent_stream_t stream);
CUDADENT_API cudadent_status_t cudadent_attn_bwd(const cudadent_attn_bwd_params_t *params,
                                                 void *workspace, size_t workspace_bytes,
                                                 cudadent_stream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* CUDADENT_H */
