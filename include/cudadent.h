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
  CUDADENT_STATUS_BAD_STRUCT_SIZE = 2,     /* params.struct_size is no layout this library can read
                                              (see "struct_size" below) */
  CUDADENT_STATUS_BAD_SIZE = 3,            /* a size is negative, or zero where it must be positive;
                                              or a stride is negative, zero on a dimension of
                                              size > 1, or makes an output overlap itself */
  CUDADENT_STATUS_SIZE_OVERFLOW = 4,       /* a size past the CUDADENT_MAX_* limits below, or a
                                              tensor extent, stride or size product too large */
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

/* A 4-d device tensor (batch, seqlen, heads, head_dim). Strides are in elements.
 *   - stride_dim must be 1 (head_dim contiguous). The pointer and the batch/seq/head strides in
 *     bytes must be multiples of 16, and each of those strides in bytes below 2^40
 *     (CUDADENT_MAX_STRIDE_BYTES). The tensor's extent (its first to one past its last element)
 *     must be at most 2^48 bytes (CUDADENT_MAX_TENSOR_BYTES).
 *   - Strides are >= 0. The stride of a dimension of size 1 is ignored (any value). A stride of 0
 *     on a dimension of size > 1 is refused for every tensor, inputs too: no broadcast K/V. (The
 *     Hopper forward reads Q, K, V through TMA tensor maps built on the rule that only a size-1
 *     dimension has a zero stride, which they replace: a broadcast K/V would read wrong rows
 *     there. Expand such a tensor into memory first.)
 *   - An output (o; dq, dk, dv) must not overlap itself. Checked as: order its dimensions of
 *     size > 1 by stride; each stride must be at least the elements spanned by the dimensions of
 *     smaller stride (head_dim plus stride * (size - 1) of each). Dense tensors in any dimension
 *     order pass, and so do views that interleave with other tensors without overlapping
 *     themselves: dq, dk, dv as slices of one (batch, seqlen, 3, heads, head_dim) buffer, q/k/v
 *     of a packed qkv projection, padded rows. (A few exotic layouts whose dimensions interleave
 *     with each other without overlap are refused too.)
 *   - Inputs may overlap themselves and each other: they are only read. Whether different
 *     tensors overlap is not checked: an output sharing memory with an input or with another
 *     output gives undefined results.
 * A tensor with no element (a size of 0) is not checked at all; its pointer may be NULL. */
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

/* ---- struct_size: how the params structs grow ----------------------------------------------
 * Every params struct starts with struct_size. Set it to sizeof the struct as the header you
 * build with declares it, and zero the whole struct before filling it (= {0} or memset), so that
 * every field you do not set is 0. The library reads the struct as follows:
 *   - struct_size equal to the size of a layout the struct has had (a caller built against this
 *     header or an older one): read; the fields that layout lacks take their defaults (0);
 *   - struct_size larger than this library's sizeof (a caller built against a newer header):
 *     accepted if every byte past this library's sizeof, up to struct_size, is zero (the caller
 *     left every field this library does not know at 0); otherwise refused with
 *     CUDADENT_STATUS_BAD_STRUCT_SIZE and a message naming the offset of the first non-zero
 *     byte;
 *   - anything else (smaller than this library's sizeof but no older layout, or above 4096) is
 *     refused with CUDADENT_STATUS_BAD_STRUCT_SIZE.
 * Layouts so far: v1 (cudadent 0.1), the structs below: 232 and 392 bytes on LP64.
 * Adding a field: append it at the end, at or past the previous layout's sizeof (never in its
 * tail padding), and make 0 mean exactly the behaviour from before the field existed; that is
 * what an older caller gets. Fields are never reordered, resized or removed. */

/* ---- limits -----------------------------------------------------------------------------------
 * The largest calls every kernel of this build indexes safely, on every device. Memory offsets
 * (tensors, LSE, workspace) are int64 everywhere, but the kernels count grid blocks, tiles and
 * sequence positions in int32, and the Hopper kernel's TMA tensor maps take strides below 2^40
 * bytes. A call past any limit is refused with CUDADENT_STATUS_SIZE_OVERFLOW (its message names
 * the limit) before anything is launched; the workspace queries refuse it too. */
#define CUDADENT_MAX_BATCH 65535          /* batch: grid dimension z of the backward's kernels */
#define CUDADENT_MAX_HEADS 65535          /* heads_q (so heads_kv too): grid dimension y of the
                                             backward's kernels */
#define CUDADENT_MAX_SEQLEN (1 << 30)     /* seqlen_q and seqlen_k, each: the forward's key range
                                             of a row, i + seqlen_k - seqlen_q + window, is int32 */
#define CUDADENT_MAX_QUERY_TILES ((1 << 29) - 1) /* batch * heads_q * ceil(seqlen_q / 64), the
                                             64-row query tiles: the backward's per-row pass runs
                                             4 blocks a tile in a 1-D grid (at most 2^31 - 1);
                                             the forward's grid and the Hopper kernel's
                                             persistent tile counter are int32 */
#define CUDADENT_MAX_SCORES ((int64_t)1 << 62) /* batch * heads_q * seqlen_q * seqlen_k: the
                                             host's work estimates count scores in int64 */
#define CUDADENT_MAX_STRIDE_BYTES ((int64_t)1 << 40) /* each stride in bytes is below this: the
                                             TMA tensor maps' limit (cuTensorMapEncodeTiled) */
#define CUDADENT_MAX_TENSOR_BYTES ((int64_t)1 << 48) /* a tensor's extent, and the workspace, in
                                             bytes are at most this */

typedef struct cudadent_attn_fwd_params {
  size_t struct_size;        /* = sizeof(cudadent_attn_fwd_params_t): see "struct_size" */
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
  size_t struct_size;        /* = sizeof(cudadent_attn_bwd_params_t): see "struct_size" */
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
