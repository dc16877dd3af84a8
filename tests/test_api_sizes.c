/*
 * test_api_sizes.c - the API's size limits and stride rules (include/cudadent.h, "limits" and
 * cudadent_tensor_t), without running a kernel:
 *   - sizes whose products overflowed int64 (issue 24: batch 32768, heads 32768, seqlen 2^30)
 *     and every CUDADENT_MAX_* limit are refused with SIZE_OVERFLOW, by the workspace queries
 *     too (which then write nothing); sizes just inside the limits are accepted with a workspace
 *     size that is plausible;
 *   - outputs that overlap themselves (a zero stride, rows overlapping, two dimensions on one
 *     stride) are refused with BAD_SIZE, outputs that interleave with others without overlapping
 *     themselves (dq/dk/dv in one fused buffer, packed qkv) are accepted; inputs may overlap
 *     themselves but take no zero stride (no broadcast K/V).
 * Under -fsanitize=undefined (make sanitize) these are also the tests that catch a size product
 * formed before its factors are bounded.
 */
#include <stdint.h>
#include <string.h>

#include "api_params.h"
#include "cudadent.h"
#include "harness.h"

/* The workspace query accepts p; its bytes are below 2^48. */
static int expect_fwd_accepted(const cudadent_attn_fwd_params_t *p, const char *what) {
  size_t bytes = 0;
  cudadent_status_t st = cudadent_attn_fwd_workspace_size(p, &bytes);
  T_CHECK(st == CUDADENT_STATUS_SUCCESS, "%s: refused: %s", what,
          cudadent_get_last_error_message());
  T_CHECK(bytes <= ((size_t)1 << 48), "%s: workspace %zu bytes", what, bytes);
  printf("    %-40s accepted (forward workspace %zu bytes)\n", what, bytes);
  return T_PASS;
}

static int expect_bwd_accepted(const cudadent_attn_bwd_params_t *p, const char *what) {
  size_t bytes = 0;
  cudadent_status_t st = cudadent_attn_bwd_workspace_size(p, &bytes);
  T_CHECK(st == CUDADENT_STATUS_SUCCESS, "%s: refused: %s", what,
          cudadent_get_last_error_message());
  T_CHECK(bytes > 0 && bytes <= ((size_t)1 << 48), "%s: workspace %zu bytes", what, bytes);
  printf("    %-40s accepted (backward workspace %zu bytes)\n", what, bytes);
  return T_PASS;
}

#define ACCEPT_FWD(mutation)                                  \
  do {                                                        \
    cudadent_attn_fwd_params_t p = t_valid_fwd();             \
    mutation;                                                 \
    int r_ = expect_fwd_accepted(&p, #mutation);              \
    if (r_ != T_PASS) return r_;                              \
  } while (0)
#define ACCEPT_BWD(mutation)                                  \
  do {                                                        \
    cudadent_attn_bwd_params_t p = t_valid_bwd();             \
    mutation;                                                 \
    int r_ = expect_bwd_accepted(&p, #mutation);              \
    if (r_ != T_PASS) return r_;                              \
  } while (0)

/* Issue 24's sizes: the element count batch * heads * seqlen * head_dim wrapped to 0, and the
 * queries answered success (forward) and 2^62 bytes (backward). */
static int test_overflowing_sizes_refused(void) {
  EXPECT_FWD(t_fwd_shape(&p, 32768, 1 << 30, 1 << 30, 32768, 32768, 128),
             CUDADENT_STATUS_SIZE_OVERFLOW, "query tiles");
  EXPECT_FWD(t_fwd_shape(&p, 32768, 1 << 29, 1 << 29, 32768, 32768, 128),
             CUDADENT_STATUS_SIZE_OVERFLOW, "query tiles");
  EXPECT_BWD(t_bwd_shape(&p, 32768, 1 << 29, 1 << 29, 32768, 32768, 128),
             CUDADENT_STATUS_SIZE_OVERFLOW, "query tiles");
  EXPECT_FWD(t_fwd_shape(&p, 65535, 0x7fffffff, 0x7fffffff, 65535, 1, 128),
             CUDADENT_STATUS_SIZE_OVERFLOW, "CUDADENT_MAX_SEQLEN");
  return T_PASS;
}

/* Each limit of cudadent.h, just past it (refused) and at it (accepted). */
static int test_limits(void) {
  EXPECT_FWD(p.batch = CUDADENT_MAX_BATCH + 1, CUDADENT_STATUS_SIZE_OVERFLOW, "batch = 65536");
  EXPECT_BWD(p.batch = CUDADENT_MAX_BATCH + 1, CUDADENT_STATUS_SIZE_OVERFLOW, "batch = 65536");
  EXPECT_FWD((p.heads_q = CUDADENT_MAX_HEADS + 1, p.heads_kv = 1), CUDADENT_STATUS_SIZE_OVERFLOW,
             "heads_q = 65536");
  EXPECT_FWD(p.seqlen_q = CUDADENT_MAX_SEQLEN + 1, CUDADENT_STATUS_SIZE_OVERFLOW,
             "seqlen_q = 1073741825");
  EXPECT_BWD(p.seqlen_k = CUDADENT_MAX_SEQLEN + 1, CUDADENT_STATUS_SIZE_OVERFLOW,
             "seqlen_k = 1073741825");
  EXPECT_FWD(p.seqlen_q = 0x7fffffff, CUDADENT_STATUS_SIZE_OVERFLOW, "seqlen_q = 2147483647");
  /* batch 1, heads 1, seqlen 2^30: every position at its limit (one head of 2^30 rows) */
  ACCEPT_FWD(t_fwd_shape(&p, 1, CUDADENT_MAX_SEQLEN, CUDADENT_MAX_SEQLEN, 1, 1, 64));
  ACCEPT_BWD(t_bwd_shape(&p, 1, CUDADENT_MAX_SEQLEN, CUDADENT_MAX_SEQLEN, 1, 1, 64));
  /* query tiles: 8192 heads of 65535 tiles of 64 rows = 2^29 - 2^13 tiles; one head more is past
   * 2^29 - 1 */
  ACCEPT_FWD(t_fwd_shape(&p, 1, 64 * 65535, 128, 8192, 1, 128));
  ACCEPT_BWD(t_bwd_shape(&p, 1, 64 * 65535, 128, 8192, 1, 128));
  EXPECT_FWD(t_fwd_shape(&p, 1, 64 * 65535, 128, 8193, 1, 128), CUDADENT_STATUS_SIZE_OVERFLOW,
             "query tiles");
  EXPECT_BWD(t_bwd_shape(&p, 1, 64 * 65535, 128, 8193, 1, 128), CUDADENT_STATUS_SIZE_OVERFLOW,
             "query tiles");
  EXPECT_FWD(t_fwd_shape(&p, 65535, 64, 64, 65535, 1, 64), CUDADENT_STATUS_SIZE_OVERFLOW,
             "query tiles");
  /* scores: 4096 heads x 2^20 queries x 2^30 keys = 2^62 (accepted); 8192 heads: 2^63 */
  ACCEPT_FWD(t_fwd_shape(&p, 1, 1 << 20, 1 << 30, 4096, 1, 128));
  EXPECT_FWD(t_fwd_shape(&p, 1, 1 << 20, 1 << 30, 8192, 1, 128), CUDADENT_STATUS_SIZE_OVERFLOW,
             "CUDADENT_MAX_SCORES");
  /* strides: below 2^40 bytes; the extent at most 2^48 bytes */
  ACCEPT_FWD(p.k.stride_batch = ((int64_t)1 << 39) - 8);
  EXPECT_FWD(p.k.stride_batch = (int64_t)1 << 39, CUDADENT_STATUS_SIZE_OVERFLOW,
             "k.stride_batch = 549755813888 elements (1099511627776 bytes) is not below 2^40");
  EXPECT_BWD(p.dv.stride_seq = (int64_t)1 << 39, CUDADENT_STATUS_SIZE_OVERFLOW, "dv.stride_seq");
  EXPECT_FWD((t_fwd_shape(&p, 1, 2000, 2000, 8, 8, 64), p.v.stride_seq = ((int64_t)1 << 39) - 8),
             CUDADENT_STATUS_SIZE_OVERFLOW, "v spans");
  return T_PASS;
}

/* A zero stride on a dimension of size > 1 is refused everywhere (outputs: they would overlap;
 * inputs: no broadcast, the TMA tensor maps take none); on a dimension of size 1 any stride is
 * ignored. */
static int test_zero_strides(void) {
  EXPECT_FWD(t_fwd_shape(&p, 2, 256, 256, 8, 2, 64); p.o.stride_seq = 0, CUDADENT_STATUS_BAD_SIZE,
             "o.stride_seq = 0 with seqlen_q = 256");
  EXPECT_BWD(p.dq.stride_batch = 0, CUDADENT_STATUS_BAD_SIZE, "dq.stride_batch = 0 with batch = 2");
  EXPECT_BWD(p.dk.stride_head = 0, CUDADENT_STATUS_BAD_SIZE, "dk.stride_head = 0 with heads_kv = 2");
  EXPECT_FWD(p.k.stride_batch = 0, CUDADENT_STATUS_BAD_SIZE, "k.stride_batch = 0 with batch = 2");
  EXPECT_FWD(p.v.stride_seq = 0, CUDADENT_STATUS_BAD_SIZE, "v.stride_seq = 0 with seqlen_k = 120");
  EXPECT_BWD(p.dout.stride_head = 0, CUDADENT_STATUS_BAD_SIZE, "dout.stride_head = 0");
  ACCEPT_FWD((p.batch = 1, p.o.stride_batch = 0, p.k.stride_batch = -5, p.q.stride_batch = 7));
  ACCEPT_BWD((p.heads_q = p.heads_kv = 1, p.dq.stride_head = 0, p.dk.stride_head = 3));
  return T_PASS;
}

/* Outputs that overlap themselves are refused. */
static int test_output_overlap_refused(void) {
  /* head rows of 64 elements, 8 apart (the o.stride_head = 8 with head_dim 128) */
  EXPECT_FWD(p.o.stride_head = 8, CUDADENT_STATUS_BAD_SIZE, "o.stride_head = 8 makes the output o");
  EXPECT_FWD((t_fwd_shape(&p, 2, 100, 100, 8, 8, 128), p.o.stride_head = 8),
             CUDADENT_STATUS_BAD_SIZE, "at least 128");
  /* seq and head on one stride: row s of head h+1 is row s+1 of head h */
  EXPECT_FWD(p.o.stride_seq = p.o.stride_head, CUDADENT_STATUS_BAD_SIZE, "overlap itself");
  /* batches overlapping: a batch stride shorter than one batch's rows */
  EXPECT_BWD(p.dq.stride_batch = 64 * 8 * 99, CUDADENT_STATUS_BAD_SIZE, "dq.stride_batch");
  EXPECT_BWD(p.dv.stride_seq = 32, CUDADENT_STATUS_BAD_SIZE, "dv.stride_seq = 32");
  return T_PASS;
}

/* Outputs interleaved with other tensors without overlapping themselves, and inputs overlapping
 * themselves, are accepted. */
static int test_interleaved_layouts_accepted(void) {
  /* heads-first output (batch, heads, seqlen, head_dim) */
  ACCEPT_FWD((p.o.stride_seq = 64, p.o.stride_head = 100 * 64, p.o.stride_batch = 8 * 100 * 64));
  /* dq, dk, dv as slices of one (batch, seqlen, 3, heads, head_dim) buffer (heads_q == heads_kv) */
  {
    cudadent_attn_bwd_params_t p = t_valid_bwd();
    t_bwd_shape(&p, 2, 128, 128, 4, 4, 64);
    const int64_t row = 3 * 4 * 64;
    cudadent_tensor_t *g[3] = {&p.dq, &p.dk, &p.dv};
    for (int i = 0; i < 3; ++i) {
      g[i]->data = (char *)FAKE(20) + i * 4 * 64 * 2;
      g[i]->stride_batch = 128 * row;
      g[i]->stride_seq = row;
      g[i]->stride_head = 64;
    }
    int r = expect_bwd_accepted(&p, "dq/dk/dv in one (b, s, 3, h, d) buffer");
    if (r != T_PASS) return r;
    /* and q, k, v of a packed (batch, seqlen, heads, 3, head_dim) projection */
    const int64_t qkv_row = 4 * 3 * 64;
    cudadent_tensor_t *in[3] = {&p.q, &p.k, &p.v};
    for (int i = 0; i < 3; ++i) {
      in[i]->data = (char *)FAKE(21) + i * 64 * 2;
      in[i]->stride_batch = 128 * qkv_row;
      in[i]->stride_seq = qkv_row;
      in[i]->stride_head = 3 * 64;
    }
    r = expect_bwd_accepted(&p, "q/k/v of a packed (b, s, h, 3, d) qkv");
    if (r != T_PASS) return r;
  }
  /* GQA: o, and dq/dk/dv of one (batch, seqlen, heads_q + 2 heads_kv, head_dim) buffer */
  {
    cudadent_attn_bwd_params_t p = t_valid_bwd(); /* heads 8 / 2, seqlen_q 100, seqlen_k 120 */
    t_bwd_shape(&p, 2, 120, 120, 8, 2, 64);
    const int64_t row = (8 + 2 + 2) * 64;
    const int heads_before[3] = {0, 8, 10};
    cudadent_tensor_t *g[3] = {&p.dq, &p.dk, &p.dv};
    for (int i = 0; i < 3; ++i) {
      g[i]->data = (char *)FAKE(22) + heads_before[i] * 64 * 2;
      g[i]->stride_batch = 120 * row;
      g[i]->stride_seq = row;
      g[i]->stride_head = 64;
    }
    int r = expect_bwd_accepted(&p, "GQA dq/dk/dv in one (b, s, hq+2hkv, d)");
    if (r != T_PASS) return r;
  }
  /* padded rows and batches */
  ACCEPT_FWD((p.o.stride_head = 72, p.o.stride_seq = 8 * 72 + 8, p.o.stride_batch = 1000 * 8 * 72));
  /* an input overlapping itself is only read: accepted */
  ACCEPT_FWD(p.q.stride_head = 8);
  ACCEPT_FWD(p.k.stride_seq = p.k.stride_head);
  return T_PASS;
}

/* Sizes past 2^31 elements are accepted by validation (kernels use int64 offsets): the size query
 * succeeds for a 2^33-element q. */
static int test_large_sizes_accepted(void) {
  ACCEPT_FWD(t_fwd_shape(&p, 64, 1 << 16, 1 << 16, 32, 32, 128));
  ACCEPT_BWD(t_bwd_shape(&p, 64, 1 << 16, 1 << 16, 32, 32, 128));
  return T_PASS;
}

void register_api_sizes_tests(void) {
  t_register("api_overflowing_sizes_refused", test_overflowing_sizes_refused);
  t_register("api_limits", test_limits);
  t_register("api_zero_strides", test_zero_strides);
  t_register("api_output_overlap_refused", test_output_overlap_refused);
  t_register("api_interleaved_layouts_accepted", test_interleaved_layouts_accepted);
  t_register("api_large_sizes_accepted", test_large_sizes_accepted);
}
