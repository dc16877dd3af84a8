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
                                              size > 1, or makes an output overlap itself; or
                                              varlen sizes that contradict each other, or a
                                              varlen field set in a dense call */
  CUDADENT_STATUS_SIZE_OVERFLOW = 4,       /* a size past the CUDADENT_MAX_* limits below, or a
                                              tensor extent, stride or size product too large */
  CUDADENT_STATUS_BAD_HEADS = 5,           /* heads_q is not a multiple of heads_kv */
  CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM = 6,/* no kernel for head_dim (or head_dim_v) in this build;
                                              the message names the supported set */
  CUDADENT_STATUS_UNSUPPORTED_DTYPE = 7,
  CUDADENT_STATUS_MISALIGNED = 8,          /* a pointer or a stride is not 16-byte aligned (the
                                              int32 varlen arrays: 4-byte) */
  CUDADENT_STATUS_NOT_CONTIGUOUS = 9,      /* head_dim stride is not 1 */
  CUDADENT_STATUS_BAD_WINDOW = 10,         /* window_left / window_right below -1 */
  CUDADENT_STATUS_BAD_SCALE = 11,          /* softmax_scale not finite or not positive, or
                                              softcap not finite or negative */
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
 * LSE = -inf. In a varlen call (below) the rule holds within each sequence, with i, j, seqlen_q
 * and seqlen_k that sequence's own positions and lengths (seqlen_k: seqused_k[b] where given). */

/* ---- features of layout v2 (see each field below) ------------------------------------------
 * head_dim_v: V (and so O, dO, dV) may have a head dim other than Q and K's: v, dv are
 *   [.., heads_kv, head_dim_v], o, dout are [.., heads_q, head_dim_v]. 0 means head_dim_v =
 *   head_dim. Which head dims a build runs: cudadent_attn_fwd_supported_head_dims() below.
 * softcap: logit soft-capping with flash-attn's semantics. With s = softmax_scale * (q . k),
 *   softcap > 0 replaces s by softcap * tanh(s / softcap) before the mask and the softmax (the
 *   LSE is that of the capped scores); the backward multiplies dS by 1 - tanh^2(s / softcap)
 *   before dQ and dK. 0: no capping (as before).
 * varlen (ragged batches, flash-attn's *_varlen_func): cu_seqlens_q and cu_seqlens_k non-NULL.
 *   batch = the number of sequences. cu_seqlens_q and cu_seqlens_k are device int32 arrays of
 *   batch + 1 entries, the prefix sums of the sequences' lengths: sequence b's queries are the
 *   tokens [cu_seqlens_q[b], cu_seqlens_q[b+1]) of q, its keys the tokens
 *   [cu_seqlens_k[b], cu_seqlens_k[b+1]) of k and v; cu_seqlens_*[0] = 0, non-decreasing,
 *   cu_seqlens_q[batch] = total_q, cu_seqlens_k[batch] = total_k. A sequence may be empty.
 *   seqlen_q and seqlen_k are then max_seqlen_q and max_seqlen_k: upper bounds of every
 *   sequence's length (kernels size their grids with them; every CUDADENT_MAX_* limit applies
 *   to them as to seqlen_q / seqlen_k). total_q and total_k are the token counts of q and k.
 *   Tensors: cudadent_tensor_t with the batch dimension dropped: q, o, dout, dq are
 *   (total_q, heads_q, head_dim[_v]) and k, v, dk, dv (total_k, heads_kv, head_dim[_v]), token t
 *   at data + t * stride_seq + h * stride_head (+ d, stride_dim = 1); stride_batch is ignored
 *   (any value; it reads as 0) and every other rule of cudadent_tensor_t applies with
 *   (1, total, heads, head_dim) as the tensor's sizes. LSE: fp32 (heads_q, total_q), contiguous
 *   (flash-attn's varlen layout): the LSE of token t of head h at lse[h * total_q + t], where the
 *   dense layout is lse[(b * heads_q + h) * seqlen_q + i].
 *   seqused_k (optional, device int32, batch entries): sequence b uses only the first
 *   seqused_k[b] of its keys (0 <= seqused_k[b] <= its length); its masks are aligned to
 *   seqused_k[b]; dK and dV of the unused keys are 0. NULL: all of them.
 *   Causal masks, windows and GQA apply within each sequence, bottom-right aligned per sequence.
 *   The host checks everything it knows: both cu_seqlens or neither (NULL_POINTER), 4-byte
 *   alignment (MISALIGNED), total_q, total_k >= 0 (BAD_SIZE) and at most CUDADENT_MAX_SEQLEN
 *   (SIZE_OVERFLOW), max_seqlen_q <= total_q and total_q <= batch * max_seqlen_q (the same for
 *   k; BAD_SIZE), the tensors at their varlen sizes; varlen fields in a dense call are refused
 *   (total_q, total_k != 0: BAD_SIZE; seqused_k or seqlens_report non-NULL: NULL_POINTER, naming
 *   cu_seqlens_q).
 *   The arrays themselves live on the device and the API never synchronizes, so they are not
 *   read by the host. Kernels clamp them so that nothing outside the tensors is ever touched:
 *   sequence b's queries are taken as [lo, hi) with lo = clamp(cu_seqlens_q[b], 0, total_q) and
 *   hi = clamp(cu_seqlens_q[b+1], lo, min(total_q, lo + max_seqlen_q)); its keys likewise with
 *   total_k and max_seqlen_k, and seqused_k[b] clamped to [0, its key count]. A token in no
 *   sequence's range gets O = 0, LSE = -inf, dQ = 0 (queries) and dK = dV = 0 (keys, as keys
 *   past seqused_k[b]: zero gradients, as flash-attn's). Valid
 *   arrays make every clamp the identity; with invalid ones, tokens in two sequences' ranges
 *   (only when cu_seqlens decreases) hold either sequence's result. Exception: where
 *   cu_seqlens_q is out of order (decreasing, or cu_seqlens_q[0] != 0), the backward's dQ of the
 *   queries of the sequences involved is unspecified (finite, and written only inside their
 *   ranges; the portable backward's dQ accumulator tiles of two such sequences may coincide).
 *   Opt-in checking: seqlens_report non-NULL makes the call validate the arrays on the device
 *   (on its stream, no synchronization) and write a cudadent_seqlens_report_t there: status 0
 *   when every entry is valid, else the first bad entry (lowest array, then lowest index).
 *   The clamped call runs either way.
 * Status in this build: the contract above is complete and every field is validated. head_dim and
 *   head_dim_v may each be any multiple of 8 up to 256, and softcap is implemented, on the portable
 *   (sm_80+) kernels, forward and backward; the Hopper forward and backward take every such
 *   head_dim and head_dim_v, and softcap (the forward: where a head dim is over 64, varlen ones
 *   with both head dims up to 128; the backward: every head dim, not deterministic, varlen ones
 *   with a head dim over 64 and both up to 128), so on H100/H200 the other softcap calls run the
 *   portable kernels. A call no kernel of the build and device runs is refused with
 *   CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM naming the supported set. varlen (seqused_k and
 *   seqlens_report included): the portable (sm_80+) forward and backward take it, with every head
 *   dim, head_dim_v, softcap, GQA, masks and the deterministic backward; on H100/H200 the Hopper
 *   forward takes varlen forwards (softcap ones with both head dims up to 128) and the Hopper
 *   backward varlen backwards with head dims up to 128, not deterministic (softcap ones with a head
 *   dim over 64) (the others run the portable kernels); a build whose portable kernels do not list
 *   it (dispatch gates each direction until its GPU tests pass) refuses varlen calls with
 *   CUDADENT_STATUS_UNSUPPORTED_FEATURE and a message that says it is not implemented yet; the
 *   workspace queries refuse alike. The backward's workspace grows with total_q + batch * 128
 *   (its fp32 dQ accumulator gives each sequence whole tiles of rows), not with batch *
 *   max_seqlen_q. */

/* What the opt-in varlen check writes (device memory, 16-byte aligned). */
typedef enum cudadent_seqlens_error {
  CUDADENT_SEQLENS_OK = 0,
  CUDADENT_SEQLENS_FIRST_NOT_ZERO = 1,  /* cu_seqlens_*[0] != 0 */
  CUDADENT_SEQLENS_DECREASING = 2,      /* cu_seqlens_*[index] < cu_seqlens_*[index - 1] */
  CUDADENT_SEQLENS_TOO_LONG = 3,        /* sequence index - 1 is longer than max_seqlen_* */
  CUDADENT_SEQLENS_BAD_TOTAL = 4,       /* cu_seqlens_*[batch] != total_* */
  CUDADENT_SEQLENS_BAD_USED = 5         /* seqused_k[index] < 0 or above sequence index's keys */
} cudadent_seqlens_error_t;

typedef struct cudadent_seqlens_report {
  int32_t status;  /* a cudadent_seqlens_error_t */
  int32_t array;   /* 0: cu_seqlens_q, 1: cu_seqlens_k, 2: seqused_k */
  int32_t index;   /* the first bad entry */
  int32_t value;   /* its value */
} cudadent_seqlens_report_t;

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
 * Layouts so far, on LP64: v1 (cudadent 0.1.0): 232 and 392 bytes (forward, backward), up to
 * `deterministic`; v2: 280 and 440 bytes, adding the varlen fields, head_dim_v and softcap.
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
  int batch;                 /* varlen: the number of sequences */
  int seqlen_q;              /* varlen: max_seqlen_q, the longest sequence's queries at most */
  int seqlen_k;              /* varlen: max_seqlen_k, the longest sequence's keys at most */
  int heads_q;
  int heads_kv;              /* heads_q % heads_kv == 0: GQA (1 < ratio), MQA (heads_kv == 1) */
  int head_dim;              /* of q and k (and of v and o where head_dim_v is 0) */
  cudadent_tensor_t q;       /* [batch, seqlen_q, heads_q,  head_dim]   (varlen: [total_q, ..]) */
  cudadent_tensor_t k;       /* [batch, seqlen_k, heads_kv, head_dim]   (varlen: [total_k, ..]) */
  cudadent_tensor_t v;       /* [batch, seqlen_k, heads_kv, head_dim_v] (varlen: [total_k, ..]) */
  cudadent_tensor_t o;       /* [batch, seqlen_q, heads_q,  head_dim_v] output (varlen: total_q) */
  float *lse;                /* [batch, heads_q, seqlen_q] (varlen: [heads_q, total_q]) fp32
                                contiguous, natural log of the
                                softmax denominator of scaled scores; NULL: not written (the
                                Hopper kernel then sums P's rows on the tensor core: same O
                                accuracy, a few % faster; the backward needs the LSE) */
  float softmax_scale;       /* usually 1/sqrt(head_dim) */
  int causal;
  int window_left;           /* -1: unbounded */
  int window_right;          /* -1: unbounded */
  int deterministic;         /* forward is always deterministic; kept for symmetry */
  /* ---- layout v2 (see "features of layout v2"; 0 / NULL everywhere: v1's behaviour) ---- */
  const int32_t *cu_seqlens_q; /* device [batch + 1]; NULL: dense. With cu_seqlens_k: varlen */
  const int32_t *cu_seqlens_k; /* device [batch + 1]; NULL: dense */
  const int32_t *seqused_k;  /* device [batch], varlen only; NULL: every key of each sequence */
  cudadent_seqlens_report_t *seqlens_report; /* device, varlen only; NULL: no device check */
  int total_q;               /* varlen: tokens of q and o (= cu_seqlens_q[batch]); dense: 0 */
  int total_k;               /* varlen: tokens of k and v (= cu_seqlens_k[batch]); dense: 0 */
  int head_dim_v;            /* head dim of v and o; 0: = head_dim */
  float softcap;             /* > 0: scores = softcap * tanh(scores / softcap); 0: none */
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
  cudadent_tensor_t v;       /* [batch, seqlen_k, heads_kv, head_dim_v] */
  cudadent_tensor_t o;       /* [batch, seqlen_q, heads_q,  head_dim_v] forward output */
  cudadent_tensor_t dout;    /* [batch, seqlen_q, heads_q,  head_dim_v] gradient of o */
  cudadent_tensor_t dq;      /* [batch, seqlen_q, heads_q,  head_dim] output */
  cudadent_tensor_t dk;      /* [batch, seqlen_k, heads_kv, head_dim] output */
  cudadent_tensor_t dv;      /* [batch, seqlen_k, heads_kv, head_dim_v] output */
  const float *lse;          /* [batch, heads_q, seqlen_q] (varlen: [heads_q, total_q]) from the
                                forward; required */
  float softmax_scale;
  int causal;
  int window_left;
  int window_right;
  int deterministic;         /* != 0: dq/dk/dv bit-identical run to run (slower) */
  /* ---- layout v2: the forward's fields, with the same meaning and defaults; v, dv are
   * [.., heads_kv, head_dim_v] and o, dout [.., heads_q, head_dim_v]. A backward must get the
   * forward's head_dim_v, softcap and varlen arrays. ---- */
  const int32_t *cu_seqlens_q;
  const int32_t *cu_seqlens_k;
  const int32_t *seqused_k;
  cudadent_seqlens_report_t *seqlens_report;
  int total_q;
  int total_k;
  int head_dim_v;
  float softcap;
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

/* The head dims this build runs in one direction for dtype, ascending, each as head_dim with
 * head_dim_v = head_dim (0) and no optional feature: the union over the dispatch table's kernels
 * for a device of the given compute capability (major * 10 + minor, e.g. 90). A call with a head
 * dim outside the list is refused with CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM.
 *   compute_capability > 0: answered from the table alone, no device needed; a device property
 *     may still narrow it on a real device (the sm80 backward needs ~162 KB of shared memory per
 *     block: none on sm_86 / sm_89);
 *   compute_capability == 0: the current device, exactly what a call there gets (NO_DEVICE
 *     without one).
 * Writes min(count, capacity) head dims to head_dims (which may be NULL when capacity is 0) and
 * the full count to *count (0: none, e.g. a compute capability with no kernel). Statuses:
 * NULL_POINTER (count, or head_dims with capacity > 0), BAD_SIZE (capacity or
 * compute_capability < 0), UNSUPPORTED_DTYPE (a value that is no cudadent_dtype_t; the reserved
 * CUDADENT_DTYPE_FP8_E4M3 answers 0 head dims), NO_DEVICE. */
CUDADENT_API cudadent_status_t cudadent_attn_fwd_supported_head_dims(
    cudadent_dtype_t dtype, int compute_capability, int *head_dims, int capacity, int *count);
CUDADENT_API cudadent_status_t cudadent_attn_bwd_supported_head_dims(
    cudadent_dtype_t dtype, int compute_capability, int *head_dims, int capacity, int *count);

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
