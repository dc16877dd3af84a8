/*
 * test_api_v2.c - the fields of params layout v2 (include/cudadent.h, "features of layout v2")
 * and the supported-head-dims queries, without running a kernel:
 *   - every new field is validated on the host, each failure with its status and a message
 *     naming the field (head_dim_v, softcap, the varlen pointers and sizes, the tensors at their
 *     varlen sizes or at head_dim_v);
 *   - valid varlen forwards and backwards (seqused_k, seqlens_report included) are accepted by
 *     the workspace query where the build has the direction's portable kernels and its gate
 *     (dispatch.h CUDADENT_SM80_FWD_VARLEN / CUDADENT_SM80_BWD_VARLEN, issue 28) is 1, else
 *     refused, by the workspace queries too, with UNSUPPORTED_FEATURE and "not implemented yet";
 *     a varlen backward's workspace grows with total_q and batch (the dQ accumulator), not with
 *     batch * max_seqlen_q; head_dim_v != head_dim and softcap likewise (UNSUPPORTED_HEAD_DIM /
 *     UNSUPPORTED_FEATURE) where the build's portable kernels are from before issue 27, and
 *     accepted where they are issue 27's (t_portable_has_issue27: the query at cc 8.0 lists
 *     every multiple of 8 up to 256); a head_dim_v past every kernel's is refused either way,
 *     naming head_dim_v;
 *   - cudadent_attn_{fwd,bwd}_supported_head_dims answer from the dispatch table, agree with what
 *     the calls accept, and the unsupported-head-dim message names that set.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "api_params.h"
#include "cudadent.h"
#include "dispatch.h" /* CUDADENT_SM80_FWD_VARLEN, CUDADENT_SM80_BWD_VARLEN, CUDADENT_SM90_BWD_VARLEN */
#include "harness.h"

void register_api_v2_tests(void);

/* A valid varlen forward (3 sequences, at most 40 queries / 50 keys each, 100 / 120 tokens),
 * (total, heads, head_dim) tensors with a garbage stride_batch (ignored in varlen calls). */
static cudadent_attn_fwd_params_t varlen_fwd(void) {
  cudadent_attn_fwd_params_t p = t_valid_fwd();
  p.batch = 3;
  p.seqlen_q = 40;
  p.seqlen_k = 50;
  p.total_q = 100;
  p.total_k = 120;
  p.q = t_dense(FAKE(1), 1, 100 * 8, 64); /* stride_batch 100*8*64: ignored */
  p.q.stride_seq = 8 * 64;
  p.q.stride_head = 64;
  p.k = t_dense(FAKE(2), 120, 2, 64);
  p.v = t_dense(FAKE(3), 120, 2, 64);
  p.o = t_dense(FAKE(4), 100, 8, 64);
  p.k.stride_batch = 3; /* misaligned, negative: ignored all the same */
  p.v.stride_batch = -24;
  p.cu_seqlens_q = (const int32_t *)FAKE(10);
  p.cu_seqlens_k = (const int32_t *)((char *)FAKE(11) + 4); /* int32 arrays: 4-byte aligned */
  return p;
}

/* The Hopper varlen backward's workspace at head_dim 64 (src/kernels/sm90/bwd_varlen.cu: BLOCK_M =
 * BLOCK_N = 128; accumulator heads_q x R x 64 fp32, LSE2 and delta heads_q x R fp32, R = total_q +
 * 128 batch rounded up to 128, 256-byte aligned parts, then the unit list 16 + 24 cap bytes). The
 * workspace query reports the largest over the built rows that take the call (dispatch.c), so
 * this row's size counts where it is built (CUDADENT_HAVE_SM90_BWD, from tests/CMakeLists.txt)
 * and lists varlen (dispatch.h CUDADENT_SM90_BWD_VARLEN). */
#if defined(CUDADENT_HAVE_SM90_BWD) && CUDADENT_SM90_BWD_VARLEN
#define SM90_ROW_TAKES_VARLEN_BWD 1
#else
#define SM90_ROW_TAKES_VARLEN_BWD 0
#endif
static size_t sm90_varlen_bwd_workspace_d64(const cudadent_attn_bwd_params_t *p) {
  const size_t r = ((size_t)p->total_q + (size_t)p->batch * 128 + 127) / 128 * 128 * p->heads_q;
  const size_t rows = (r * 4 + 255) / 256 * 256;
  const size_t by_max = (size_t)p->batch * ((p->seqlen_k + 127) / 128);
  const size_t by_total = ((size_t)p->total_k + 127) / 128 + p->batch;
  const size_t cap = by_max < by_total ? by_max : by_total;
  return (r * 64 * 4 + 255) / 256 * 256 + 2 * rows + 16 + 24 * cap;
}

/* What the workspace query must report for a varlen backward whose portable size is portable. */
static size_t varlen_bwd_workspace_want(const cudadent_attn_bwd_params_t *p, size_t portable) {
  const size_t hopper = SM90_ROW_TAKES_VARLEN_BWD ? sm90_varlen_bwd_workspace_d64(p) : 0;
  return hopper > portable ? hopper : portable;
}

static cudadent_attn_bwd_params_t varlen_bwd(void) {
  cudadent_attn_bwd_params_t p = t_valid_bwd();
  const cudadent_attn_fwd_params_t f = varlen_fwd();
  p.batch = f.batch;
  p.seqlen_q = f.seqlen_q;
  p.seqlen_k = f.seqlen_k;
  p.total_q = f.total_q;
  p.total_k = f.total_k;
  p.q = f.q;
  p.k = f.k;
  p.v = f.v;
  p.o = f.o;
  p.dout = t_dense(FAKE(6), 100, 8, 64);
  p.dq = t_dense(FAKE(7), 100, 8, 64);
  p.dk = t_dense(FAKE(8), 120, 2, 64);
  p.dv = t_dense(FAKE(9), 120, 2, 64);
  p.cu_seqlens_q = f.cu_seqlens_q;
  p.cu_seqlens_k = f.cu_seqlens_k;
  return p;
}

#define EXPECT_VARLEN_FWD(mutation, status, needle)          \
  do {                                                       \
    cudadent_attn_fwd_params_t p = varlen_fwd();             \
    mutation;                                                \
    int r_ = t_expect_fwd(&p, status, needle, #mutation);    \
    if (r_ != T_PASS) return r_;                             \
  } while (0)
#define EXPECT_VARLEN_BWD(mutation, status, needle)          \
  do {                                                       \
    cudadent_attn_bwd_params_t p = varlen_bwd();             \
    mutation;                                                \
    int r_ = t_expect_bwd(&p, status, needle, #mutation);    \
    if (r_ != T_PASS) return r_;                             \
  } while (0)

static const char *const k_not_yet = "not implemented yet";

/* A valid varlen forward: accepted by the workspace query where the build has the portable
 * forward (t_portable_has_issue27(0)) and its row lists varlen (dispatch.h
 * CUDADENT_SM80_FWD_VARLEN, issue 28), else refused with UNSUPPORTED_FEATURE naming needle. */
#define EXPECT_VARLEN_FEATURE_FWD(mutation, needle)                                       \
  do {                                                                                    \
    cudadent_attn_fwd_params_t p = varlen_fwd();                                          \
    mutation;                                                                             \
    int r_ = t_portable_has_issue27(0) && CUDADENT_SM80_FWD_VARLEN                        \
                 ? t_accept_fwd(&p, #mutation)                                            \
                 : t_expect_fwd(&p, CUDADENT_STATUS_UNSUPPORTED_FEATURE, needle, #mutation); \
    if (r_ != T_PASS) return r_;                                                          \
  } while (0)

/* The same for a valid varlen backward (CUDADENT_SM80_BWD_VARLEN). */
#define EXPECT_VARLEN_FEATURE_BWD(mutation, needle)                                       \
  do {                                                                                    \
    cudadent_attn_bwd_params_t p = varlen_bwd();                                          \
    mutation;                                                                             \
    int r_ = t_portable_has_issue27(1) && CUDADENT_SM80_BWD_VARLEN                        \
                 ? t_accept_bwd(&p, #mutation)                                            \
                 : t_expect_bwd(&p, CUDADENT_STATUS_UNSUPPORTED_FEATURE, needle, #mutation); \
    if (r_ != T_PASS) return r_;                                                          \
  } while (0)

static int test_head_dim_v_and_softcap(void) {
  /* head_dim_v == head_dim is today's call: accepted */
  {
    cudadent_attn_fwd_params_t p = t_valid_fwd();
    p.head_dim_v = 64;
    size_t bytes = 0;
    T_CHECK(cudadent_attn_fwd_workspace_size(&p, &bytes) == CUDADENT_STATUS_SUCCESS,
            "head_dim_v = head_dim refused: %s", cudadent_get_last_error_message());
  }
  EXPECT_FWD(p.head_dim_v = -1, CUDADENT_STATUS_BAD_SIZE, "head_dim_v = -1");
  /* v and o are checked at head_dim_v: rows of 120 bytes, an o whose heads overlap */
  EXPECT_FWD(p.head_dim_v = 60, CUDADENT_STATUS_MISALIGNED, "v: head_dim_v = 60");
  EXPECT_FWD(p.head_dim_v = 128, CUDADENT_STATUS_BAD_SIZE, "head_dim_v = 128");
  /* valid calls with the features: refused as not implemented yet by the kernels from before
   * issue 27, accepted by issue 27's (the workspace query; t_portable_has_issue27) */
  printf("    portable kernels of issue 27: forward %d, backward %d\n", t_portable_has_issue27(0),
         t_portable_has_issue27(1));
  EXPECT_FEATURE_FWD((p.head_dim_v = 128, p.v = t_dense(FAKE(3), 120, 2, 128),
                      p.o = t_dense(FAKE(4), 100, 8, 128)),
                     CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                     "head_dim_v = 128 != head_dim = 64 is not implemented yet");
  EXPECT_FEATURE_FWD((p.head_dim = 192, p.q = t_dense(FAKE(1), 100, 8, 192),
                      p.k = t_dense(FAKE(2), 120, 2, 192), p.head_dim_v = 128,
                      p.v = t_dense(FAKE(3), 120, 2, 128), p.o = t_dense(FAKE(4), 100, 8, 128)),
                     CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim = 192");
  EXPECT_FEATURE_FWD(p.head_dim_v = 8, CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                     "head_dim_v = 8 != head_dim = 64 is not implemented yet");
  EXPECT_FWD(p.softcap = -1.0f, CUDADENT_STATUS_BAD_SCALE, "softcap = -1");
  EXPECT_FWD(p.softcap = NAN, CUDADENT_STATUS_BAD_SCALE, "softcap");
  EXPECT_FWD(p.softcap = INFINITY, CUDADENT_STATUS_BAD_SCALE, "softcap = inf");
  EXPECT_FEATURE_FWD(p.softcap = 30.0f, CUDADENT_STATUS_UNSUPPORTED_FEATURE,
                     "softcap = 30 is not implemented yet");
  EXPECT_FEATURE_FWD((p.softcap = 5.0f, p.head_dim_v = 32), CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                     k_not_yet);
  EXPECT_BWD(p.head_dim_v = -8, CUDADENT_STATUS_BAD_SIZE, "head_dim_v = -8");
  EXPECT_BWD(p.head_dim_v = 128, CUDADENT_STATUS_BAD_SIZE, "spanned by head_dim_v = 128");
  EXPECT_BWD((p.head_dim_v = 32, p.dv.stride_head = 16), CUDADENT_STATUS_BAD_SIZE,
             "dv.stride_head = 16");
  EXPECT_FEATURE_BWD(p.head_dim_v = 32, CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim_v = 32");
  EXPECT_BWD(p.softcap = -0.5f, CUDADENT_STATUS_BAD_SCALE, "softcap = -0.5");
  EXPECT_FEATURE_BWD(p.softcap = 50.0f, CUDADENT_STATUS_UNSUPPORTED_FEATURE, k_not_yet);
  EXPECT_FEATURE_BWD((p.softcap = 50.0f, p.head_dim_v = 32), CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
                     k_not_yet);
  /* a head_dim_v past every kernel's (264 > 256; the tensors sized for it): refused in any build,
   * naming head_dim_v */
  EXPECT_FWD((p.head_dim_v = 264, p.v = t_dense(FAKE(3), 120, 2, 264),
              p.o = t_dense(FAKE(4), 100, 8, 264)),
             CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim_v = 264");
  EXPECT_BWD((p.head_dim_v = 264, p.v = t_dense(FAKE(3), 120, 2, 264),
              p.o = t_dense(FAKE(4), 100, 8, 264), p.dout = t_dense(FAKE(6), 100, 8, 264),
              p.dv = t_dense(FAKE(9), 120, 2, 264)),
             CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim_v = 264");
  /* an unsupported head_dim is reported before the feature (the query's answer: a head dim no
   * kernel lists) */
  {
    const int unlisted = t_unlisted_head_dim(0);
    char needle[32];
    snprintf(needle, sizeof needle, "head_dim = %d", unlisted);
    EXPECT_FWD((p.head_dim = unlisted, p.softcap = 30.0f), CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM,
               needle);
  }
  return T_PASS;
}

static int test_varlen_fields(void) {
  /* dense calls must leave the varlen fields alone */
  EXPECT_FWD(p.seqused_k = (const int32_t *)FAKE(12), CUDADENT_STATUS_NULL_POINTER, "seqused_k");
  EXPECT_FWD(p.seqlens_report = (cudadent_seqlens_report_t *)FAKE(13),
             CUDADENT_STATUS_NULL_POINTER, "seqlens_report");
  EXPECT_FWD(p.total_q = 5, CUDADENT_STATUS_BAD_SIZE, "total_q = 5 is set in a dense call");
  EXPECT_BWD(p.total_k = 7, CUDADENT_STATUS_BAD_SIZE, "total_k = 7");
  /* a valid varlen forward: validated in full, then accepted where the build has the portable
   * forward (issue 28: it takes varlen, seqused_k and seqlens_report), else refused as not
   * implemented yet; the backward has no varlen kernel: refused in every build */
  printf("    portable forward built: %d, takes varlen: %d\n", t_portable_has_issue27(0),
         CUDADENT_SM80_FWD_VARLEN);
  EXPECT_VARLEN_FEATURE_FWD((void)0, "varlen (cu_seqlens_q / cu_seqlens_k) is not implemented yet");
  EXPECT_VARLEN_FEATURE_FWD(p.seqused_k = (const int32_t *)FAKE(12), k_not_yet);
  EXPECT_VARLEN_FEATURE_FWD(p.seqlens_report = (cudadent_seqlens_report_t *)FAKE(13), k_not_yet);
  EXPECT_VARLEN_FEATURE_FWD(p.lse = NULL, k_not_yet);
  EXPECT_VARLEN_FEATURE_FWD((p.total_q = 0, p.seqlen_q = 0, p.q.data = NULL, p.o.data = NULL),
                            k_not_yet); /* empty q: not checked */
  EXPECT_VARLEN_FEATURE_FWD((p.causal = 1, p.head_dim_v = 32, p.v = t_dense(FAKE(3), 120, 2, 32),
                             p.o = t_dense(FAKE(4), 100, 8, 32)),
                            k_not_yet);
  printf("    portable backward built: %d, takes varlen: %d\n", t_portable_has_issue27(1),
         CUDADENT_SM80_BWD_VARLEN);
  EXPECT_VARLEN_FEATURE_BWD((void)0,
                            "varlen (cu_seqlens_q / cu_seqlens_k) is not implemented yet: no backward");
  EXPECT_VARLEN_FEATURE_BWD(p.seqused_k = (const int32_t *)FAKE(12), k_not_yet);
  EXPECT_VARLEN_FEATURE_BWD(p.seqlens_report = (cudadent_seqlens_report_t *)FAKE(13), k_not_yet);
  EXPECT_VARLEN_FEATURE_BWD((p.deterministic = 1, p.causal = 1, p.window_left = 7), k_not_yet);
  EXPECT_VARLEN_FEATURE_BWD((p.softcap = 30.0f, p.head_dim_v = 32, p.v = t_dense(FAKE(3), 120, 2, 32),
                             p.o = t_dense(FAKE(4), 100, 8, 32), p.dout = t_dense(FAKE(6), 100, 8, 32),
                             p.dv = t_dense(FAKE(9), 120, 2, 32)),
                            k_not_yet);
  EXPECT_VARLEN_FEATURE_BWD((p.total_q = 0, p.seqlen_q = 0, p.q.data = NULL, p.o.data = NULL,
                             p.dout.data = NULL, p.dq.data = NULL),
                            k_not_yet); /* empty q: not checked */
  if (t_portable_has_issue27(1) && CUDADENT_SM80_BWD_VARLEN) {
    /* the workspace follows total_q + batch * BLOCK_M (each sequence's dQ accumulator tiles
     * start on a tile of their own; head_dim 64: width 64, BLOCK_M 128) and delta
     * [heads_q][total_q], not batch * max_seqlen_q */
    cudadent_attn_bwd_params_t p = varlen_bwd();
    size_t small = 0, many = 0;
    T_CHECK(cudadent_attn_bwd_workspace_size(&p, &small) == CUDADENT_STATUS_SUCCESS, "%s",
            cudadent_get_last_error_message());
    const size_t portable_small = (size_t)8 * 512 * 64 * 4 + 3328; /* 100 + 3 * 128 -> 512 rows */
    const size_t want_small = varlen_bwd_workspace_want(&p, portable_small);
    printf("    varlen bwd workspace: %zu bytes (3 sequences, 100 tokens; want %zu, the portable "
           "row's %zu)\n", small, want_small, portable_small);
    T_CHECK(small == want_small, "varlen workspace %zu, want %zu", small, want_small);
    p.batch = 1000; /* 1000 sequences, at most 4096 queries each, 6000 tokens in all */
    p.seqlen_q = 4096;
    p.total_q = 6000;
    p.q = t_dense(FAKE(1), 6000, 8, 64);
    p.o = t_dense(FAKE(4), 6000, 8, 64);
    p.dout = t_dense(FAKE(6), 6000, 8, 64);
    p.dq = t_dense(FAKE(7), 6000, 8, 64);
    T_CHECK(cudadent_attn_bwd_workspace_size(&p, &many) == CUDADENT_STATUS_SUCCESS, "%s",
            cudadent_get_last_error_message());
    /* (6000 + 1000 * 128) rows -> 134016, x 8 heads x 64 fp32; delta 8 x 6000 fp32 */
    const size_t portable_many = (size_t)134016 * 8 * 64 * 4 + 192000;
    const size_t want_many = varlen_bwd_workspace_want(&p, portable_many);
    printf("    1000 sequences, 6000 tokens: %zu bytes (want %zu, the portable row's %zu; dense "
           "1000 x 4096 would take %zu)\n", many, want_many, portable_many,
           (size_t)1000 * 4096 * 8 * 65 * 4);
    T_CHECK(many == want_many, "varlen workspace %zu, want %zu", many, want_many);
  }
  /* pointers */
  EXPECT_VARLEN_FWD(p.cu_seqlens_k = NULL, CUDADENT_STATUS_NULL_POINTER,
                    "cu_seqlens_k is NULL while cu_seqlens_q is set");
  EXPECT_VARLEN_FWD(p.cu_seqlens_q = NULL, CUDADENT_STATUS_NULL_POINTER, "cu_seqlens_q is NULL");
  EXPECT_VARLEN_FWD(p.cu_seqlens_q = (const int32_t *)((char *)FAKE(10) + 2),
                    CUDADENT_STATUS_MISALIGNED, "cu_seqlens_q");
  EXPECT_VARLEN_FWD(p.seqused_k = (const int32_t *)((char *)FAKE(12) + 1),
                    CUDADENT_STATUS_MISALIGNED, "seqused_k");
  EXPECT_VARLEN_FWD(p.seqlens_report = (cudadent_seqlens_report_t *)((char *)FAKE(13) + 4),
                    CUDADENT_STATUS_MISALIGNED, "seqlens_report");
  /* sizes */
  EXPECT_VARLEN_FWD(p.total_q = -1, CUDADENT_STATUS_BAD_SIZE, "total_q = -1");
  EXPECT_VARLEN_FWD(p.total_k = (1 << 30) + 1, CUDADENT_STATUS_SIZE_OVERFLOW, "total_k");
  EXPECT_VARLEN_FWD(p.seqlen_q = 101, CUDADENT_STATUS_BAD_SIZE, "exceeds total_q = 100");
  EXPECT_VARLEN_FWD(p.seqlen_k = 121, CUDADENT_STATUS_BAD_SIZE, "exceeds total_k = 120");
  EXPECT_VARLEN_FWD(p.total_q = 121, CUDADENT_STATUS_BAD_SIZE, "total_q = 121 exceeds batch");
  EXPECT_VARLEN_FWD(p.batch = 0, CUDADENT_STATUS_BAD_SIZE, "total_q = 100 exceeds batch");
  EXPECT_VARLEN_FWD(p.seqlen_k = -1, CUDADENT_STATUS_BAD_SIZE, "seqlen_k = -1");
  EXPECT_VARLEN_BWD(p.seqlen_q = 30, CUDADENT_STATUS_BAD_SIZE, "total_q = 100 exceeds batch");
  /* tensors at their varlen sizes (total, heads, head_dim) */
  EXPECT_VARLEN_FWD(p.o.stride_seq = 64, CUDADENT_STATUS_BAD_SIZE, "output o overlap itself");
  EXPECT_VARLEN_FWD(p.o.stride_seq = 64, CUDADENT_STATUS_BAD_SIZE, "total_q = 100");
  EXPECT_VARLEN_FWD(p.k.stride_seq = 0, CUDADENT_STATUS_BAD_SIZE, "total_k = 120");
  EXPECT_VARLEN_FWD(p.v.data = NULL, CUDADENT_STATUS_NULL_POINTER, "v.data");
  EXPECT_VARLEN_FWD(p.lse = (float *)((char *)FAKE(5) + 4), CUDADENT_STATUS_MISALIGNED, "lse");
  EXPECT_VARLEN_BWD(p.lse = NULL, CUDADENT_STATUS_NULL_POINTER, "lse");
  EXPECT_VARLEN_BWD(p.dk.stride_seq = 2 * 64 + 4, CUDADENT_STATUS_MISALIGNED, "dk.stride_seq");
  EXPECT_VARLEN_BWD(p.dq.stride_head = 32, CUDADENT_STATUS_BAD_SIZE, "dq.stride_head = 32");
  return T_PASS;
}

/* ---- the supported-head-dims queries ---- */

typedef cudadent_status_t (*dims_query_t)(cudadent_dtype_t, int, int *, int, int *);

static int format_dims(const int *dims, int n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && used < len; ++i)
    used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? ", " : "", dims[i]);
  return n;
}

static int in_list(const int *dims, int n, int d) {
  for (int i = 0; i < n; ++i)
    if (dims[i] == d) return 1;
  return 0;
}

static int test_head_dims_query(void) {
  const struct { const char *dir; dims_query_t q; } dirs[2] = {
      {"forward", cudadent_attn_fwd_supported_head_dims},
      {"backward", cudadent_attn_bwd_supported_head_dims}};
  for (int di = 0; di < 2; ++di) {
    const dims_query_t query = dirs[di].q;
    int all[64], n_all = 0; /* the union over the architectures */
    const int ccs[4] = {75, 80, 89, 90};
    for (int c = 0; c < 4; ++c) {
      int dims[64], count = -1;
      T_CHECK(query(CUDADENT_DTYPE_BF16, ccs[c], dims, 64, &count) == CUDADENT_STATUS_SUCCESS,
              "%s cc %d: %s", dirs[di].dir, ccs[c], cudadent_get_last_error_message());
      char list[256];
      format_dims(dims, count, list, sizeof list);
      printf("    %s bf16 cc %d.%d: %d head dims {%s}\n", dirs[di].dir, ccs[c] / 10, ccs[c] % 10,
             count, list);
      T_CHECK(count >= 0 && count <= 64, "count %d", count);
      if (ccs[c] < 80) T_CHECK(count == 0, "cc 7.5 has no kernel, yet %d head dims", count);
      for (int i = 0; i < count; ++i) {
        T_CHECK(i == 0 || dims[i] > dims[i - 1], "not ascending: %s", list);
        if (!in_list(all, n_all, dims[i])) all[n_all++] = dims[i];
      }
      /* fp16 is built alike; fp8 has no kernel */
      int dims16[64], count16 = -1, count8 = -1;
      T_CHECK(query(CUDADENT_DTYPE_FP16, ccs[c], dims16, 64, &count16) == CUDADENT_STATUS_SUCCESS &&
                  count16 == count && !memcmp(dims16, dims, sizeof(int) * (size_t)count),
              "fp16 differs from bf16 at cc %d", ccs[c]);
      T_CHECK(query(CUDADENT_DTYPE_FP8_E4M3, ccs[c], NULL, 0, &count8) == CUDADENT_STATUS_SUCCESS &&
                  count8 == 0, "fp8: %d head dims", count8);
    }
    /* what the calls accept (head dims 8..512, device-free) is the union over the archs */
    for (int d = 8; d <= 512; d += 8) {
      size_t bytes = 0;
      cudadent_status_t st;
      if (di == 0) {
        cudadent_attn_fwd_params_t p = t_valid_fwd();
        t_fwd_shape(&p, 2, 100, 120, 8, 2, d);
        st = cudadent_attn_fwd_workspace_size(&p, &bytes);
      } else {
        cudadent_attn_bwd_params_t p = t_valid_bwd();
        t_bwd_shape(&p, 2, 100, 120, 8, 2, d);
        st = cudadent_attn_bwd_workspace_size(&p, &bytes);
      }
      const int listed = in_list(all, n_all, d);
      T_CHECK(st == (listed ? CUDADENT_STATUS_SUCCESS : CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM),
              "%s head_dim %d: listed %d, the call gives %d (%s)", dirs[di].dir, d, listed, st,
              cudadent_get_last_error_message());
      if (!listed && n_all > 0) { /* the refusal names the supported set */
        char want[256] = "supported: ";
        format_dims(all, n_all, want + strlen(want), sizeof want - strlen(want));
        T_CHECK(strstr(cudadent_get_last_error_message(), want) != NULL,
                "'%s' does not name '%s'", cudadent_get_last_error_message(), want);
      }
    }
    /* capacity: the full count, min(count, capacity) written */
    int one[2] = {-7, -7}, count = -1, full = -1;
    T_CHECK(query(CUDADENT_DTYPE_BF16, 90, NULL, 0, &full) == CUDADENT_STATUS_SUCCESS, "NULL, 0");
    T_CHECK(query(CUDADENT_DTYPE_BF16, 90, one, 1, &count) == CUDADENT_STATUS_SUCCESS &&
                count == full && (full == 0 ? one[0] == -7 : one[0] > 0) && one[1] == -7,
            "capacity 1: count %d (full %d), dims %d %d", count, full, one[0], one[1]);
    /* bad arguments */
    T_CHECK(query(CUDADENT_DTYPE_BF16, 90, one, 1, NULL) == CUDADENT_STATUS_NULL_POINTER, "count");
    T_CHECK(query(CUDADENT_DTYPE_BF16, 90, NULL, 4, &count) == CUDADENT_STATUS_NULL_POINTER,
            "head_dims NULL with capacity 4");
    T_CHECK(query(CUDADENT_DTYPE_BF16, 90, one, -1, &count) == CUDADENT_STATUS_BAD_SIZE, "cap -1");
    T_CHECK(query(CUDADENT_DTYPE_BF16, -90, one, 1, &count) == CUDADENT_STATUS_BAD_SIZE, "cc -90");
    T_CHECK(query((cudadent_dtype_t)7, 90, one, 1, &count) == CUDADENT_STATUS_UNSUPPORTED_DTYPE,
            "dtype 7");
    T_CHECK(strstr(cudadent_get_last_error_message(), "dtype = 7") != NULL, "message");
    /* the current device */
    count = -1;
    const cudadent_status_t st = query(CUDADENT_DTYPE_BF16, 0, one, 0, &count);
    if (t_gpu_skip_reason) {
      T_CHECK(st == CUDADENT_STATUS_NO_DEVICE, "cc 0 without a device gave %d", st);
      printf("    %s, current device: %s\n", dirs[di].dir, cudadent_get_last_error_message());
    } else {
      T_CHECK(st == CUDADENT_STATUS_SUCCESS && count >= 0, "cc 0: %s",
              cudadent_get_last_error_message());
      printf("    %s, current device: %d head dims\n", dirs[di].dir, count);
    }
  }
  return T_PASS;
}

void register_api_v2_tests(void) {
  t_register("api_v2_head_dim_v_and_softcap", test_head_dim_v_and_softcap);
  t_register("api_v2_varlen_fields", test_varlen_fields);
  t_register("api_v2_supported_head_dims", test_head_dims_query);
}
