/*
 * test_api.c - the public API without running a kernel: versions, status strings, and every
 * validation path of the forward and backward (each bad field gets its own status and a message
 * naming it). Params point at fake, never-dereferenced addresses: the API refuses them before any
 * launch, which is the property under test. The one test that needs a valid call (no CUDA device
 * -> CUDADENT_STATUS_NO_DEVICE) runs only where there is no device.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "api_params.h"
#include "cudadent.h"
#include "harness.h"

static int test_version(void) {
  T_CHECK(cudadent_get_version() == CUDADENT_VERSION, "library %d, header %d",
          cudadent_get_version(), CUDADENT_VERSION);
  printf("    version %d\n", cudadent_get_version());
  return T_PASS;
}

static int test_error_strings(void) {
  for (int s = CUDADENT_STATUS_SUCCESS; s <= CUDADENT_STATUS_INTERNAL_ERROR; ++s) {
    const char *str = cudadent_get_error_string((cudadent_status_t)s);
    T_CHECK(str != NULL && strncmp(str, "CUDADENT_STATUS_", 16) == 0, "status %d: '%s'", s,
            str ? str : "(null)");
    for (int t = CUDADENT_STATUS_SUCCESS; t < s; ++t)
      T_CHECK(strcmp(str, cudadent_get_error_string((cudadent_status_t)t)) != 0,
              "statuses %d and %d share a string", s, t);
  }
  T_CHECK(cudadent_get_error_string((cudadent_status_t)999) != NULL, "unknown status: NULL");
  return T_PASS;
}

static int test_fwd_rejects_bad_input(void) {
  T_CHECK(cudadent_attn_fwd(NULL, NULL, 0, NULL) == CUDADENT_STATUS_NULL_POINTER, "NULL params");
  {
    cudadent_attn_fwd_params_t p = t_valid_fwd();
    T_CHECK(cudadent_attn_fwd_workspace_size(&p, NULL) == CUDADENT_STATUS_NULL_POINTER,
            "NULL bytes");
  }
  EXPECT_FWD(p.struct_size = 8, CUDADENT_STATUS_BAD_STRUCT_SIZE, "struct_size");
  EXPECT_FWD(p.dtype = CUDADENT_DTYPE_FP8_E4M3, CUDADENT_STATUS_UNSUPPORTED_DTYPE, "FP8");
  EXPECT_FWD(p.dtype = (cudadent_dtype_t)7, CUDADENT_STATUS_UNSUPPORTED_DTYPE, "dtype = 7");
  EXPECT_FWD(p.batch = -1, CUDADENT_STATUS_BAD_SIZE, "batch = -1");
  EXPECT_FWD(p.seqlen_q = -5, CUDADENT_STATUS_BAD_SIZE, "seqlen_q = -5");
  EXPECT_FWD(p.seqlen_k = -1, CUDADENT_STATUS_BAD_SIZE, "seqlen_k = -1");
  EXPECT_FWD(p.heads_q = 0, CUDADENT_STATUS_BAD_SIZE, "heads_q = 0");
  EXPECT_FWD(p.heads_kv = 0, CUDADENT_STATUS_BAD_SIZE, "heads_kv = 0");
  EXPECT_FWD(p.head_dim = 0, CUDADENT_STATUS_BAD_SIZE, "head_dim = 0");
  EXPECT_FWD(p.heads_kv = 3, CUDADENT_STATUS_BAD_HEADS, "heads_kv = 3");
  { /* a head dim no kernel lists (the query's answer: 8 before issue 27's kernels, 264 after) */
    const int unlisted = t_unlisted_head_dim(0);
    char needle[32];
    snprintf(needle, sizeof needle, "head_dim = %d", unlisted);
    T_CHECK(unlisted > 0, "the query lists every multiple of 8 up to 512");
    EXPECT_FWD(p.head_dim = unlisted, CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, needle);
  }
  EXPECT_FWD(p.head_dim = 60, CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim = 60");
  EXPECT_FWD(p.head_dim = 1000, CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim = 1000");
  EXPECT_FWD(p.softmax_scale = NAN, CUDADENT_STATUS_BAD_SCALE, "softmax_scale");
  EXPECT_FWD(p.softmax_scale = INFINITY, CUDADENT_STATUS_BAD_SCALE, "softmax_scale");
  EXPECT_FWD(p.softmax_scale = 0.0f, CUDADENT_STATUS_BAD_SCALE, "softmax_scale = 0");
  EXPECT_FWD(p.softmax_scale = -0.5f, CUDADENT_STATUS_BAD_SCALE, "softmax_scale = -0.5");
  EXPECT_FWD(p.window_left = -2, CUDADENT_STATUS_BAD_WINDOW, "window_left = -2");
  EXPECT_FWD(p.window_right = -7, CUDADENT_STATUS_BAD_WINDOW, "window_right = -7");
  EXPECT_FWD(p.q.data = NULL, CUDADENT_STATUS_NULL_POINTER, "q.data");
  EXPECT_FWD(p.k.data = NULL, CUDADENT_STATUS_NULL_POINTER, "k.data");
  EXPECT_FWD(p.v.data = NULL, CUDADENT_STATUS_NULL_POINTER, "v.data");
  EXPECT_FWD(p.o.data = NULL, CUDADENT_STATUS_NULL_POINTER, "o.data");
  EXPECT_FWD(p.q.stride_dim = 2, CUDADENT_STATUS_NOT_CONTIGUOUS, "q.stride_dim = 2");
  EXPECT_FWD(p.v.stride_dim = 0, CUDADENT_STATUS_NOT_CONTIGUOUS, "v.stride_dim = 0");
  EXPECT_FWD(p.q.data = (char *)p.q.data + 8, CUDADENT_STATUS_MISALIGNED, "q.data");
  EXPECT_FWD(p.o.data = (char *)p.o.data + 2, CUDADENT_STATUS_MISALIGNED, "o.data");
  EXPECT_FWD(p.k.stride_seq = 130, CUDADENT_STATUS_MISALIGNED, "k.stride_seq = 130");
  EXPECT_FWD(p.q.stride_head = 65, CUDADENT_STATUS_MISALIGNED, "q.stride_head = 65");
  EXPECT_FWD(p.v.stride_batch += 4, CUDADENT_STATUS_MISALIGNED, "v.stride_batch");
  EXPECT_FWD(p.lse = (float *)((char *)p.lse + 4), CUDADENT_STATUS_MISALIGNED, "lse");
  EXPECT_FWD(p.q.stride_seq = -512, CUDADENT_STATUS_BAD_SIZE, "q.stride_seq = -512");
  EXPECT_FWD(p.k.stride_batch = (int64_t)1 << 61, CUDADENT_STATUS_SIZE_OVERFLOW, "k.stride_batch");
  EXPECT_FWD((p.seqlen_q = 2000, p.q.stride_seq = (int64_t)1 << 38), CUDADENT_STATUS_SIZE_OVERFLOW,
             "q spans");
  EXPECT_FWD(p.v.stride_head = INT64_MAX - 7, CUDADENT_STATUS_SIZE_OVERFLOW, "v.stride_head");
  EXPECT_FWD(p.batch = 70000, CUDADENT_STATUS_SIZE_OVERFLOW, "batch = 70000");
  EXPECT_FWD(p.heads_q = 131072, CUDADENT_STATUS_SIZE_OVERFLOW, "heads_q = 131072");
  return T_PASS;
}

static int test_bwd_rejects_bad_input(void) {
  T_CHECK(cudadent_attn_bwd(NULL, NULL, 0, NULL) == CUDADENT_STATUS_NULL_POINTER, "NULL params");
  EXPECT_BWD(p.struct_size = sizeof(cudadent_attn_fwd_params_t), CUDADENT_STATUS_BAD_STRUCT_SIZE,
             "struct_size");
  EXPECT_BWD(p.dtype = CUDADENT_DTYPE_FP8_E4M3, CUDADENT_STATUS_UNSUPPORTED_DTYPE, "FP8");
  EXPECT_BWD(p.seqlen_k = -3, CUDADENT_STATUS_BAD_SIZE, "seqlen_k = -3");
  EXPECT_BWD(p.heads_q = 7, CUDADENT_STATUS_BAD_HEADS, "heads_q = 7");
  {
    const int unlisted = t_unlisted_head_dim(1);
    char needle[32];
    snprintf(needle, sizeof needle, "head_dim = %d", unlisted);
    T_CHECK(unlisted > 0, "the query lists every multiple of 8 up to 512");
    EXPECT_BWD(p.head_dim = unlisted, CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, needle);
  }
  EXPECT_BWD(p.head_dim = 44, CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM, "head_dim = 44");
  EXPECT_BWD(p.softmax_scale = -INFINITY, CUDADENT_STATUS_BAD_SCALE, "softmax_scale");
  EXPECT_BWD(p.window_left = -9, CUDADENT_STATUS_BAD_WINDOW, "window_left = -9");
  EXPECT_BWD(p.lse = NULL, CUDADENT_STATUS_NULL_POINTER, "lse");
  EXPECT_BWD(p.dout.data = NULL, CUDADENT_STATUS_NULL_POINTER, "dout.data");
  EXPECT_BWD(p.dq.data = NULL, CUDADENT_STATUS_NULL_POINTER, "dq.data");
  EXPECT_BWD(p.dk.data = NULL, CUDADENT_STATUS_NULL_POINTER, "dk.data");
  EXPECT_BWD(p.dv.data = NULL, CUDADENT_STATUS_NULL_POINTER, "dv.data");
  EXPECT_BWD(p.dk.stride_dim = 3, CUDADENT_STATUS_NOT_CONTIGUOUS, "dk.stride_dim = 3");
  EXPECT_BWD(p.dq.data = (char *)p.dq.data + 6, CUDADENT_STATUS_MISALIGNED, "dq.data");
  EXPECT_BWD(p.dv.stride_head = 72 + 1, CUDADENT_STATUS_MISALIGNED, "dv.stride_head = 73");
  EXPECT_BWD(p.dout.stride_seq = -8, CUDADENT_STATUS_BAD_SIZE, "dout.stride_seq = -8");
  EXPECT_BWD(p.dq.stride_batch = INT64_MAX - 7, CUDADENT_STATUS_SIZE_OVERFLOW, "dq.stride_batch");
  return T_PASS;
}

/* A workspace smaller than the query (when the backward needs one) is refused before the device
 * is looked at; a workspace that is not 256-byte aligned too. */
static int test_workspace_checks(void) {
  cudadent_attn_bwd_params_t p = t_valid_bwd();
  size_t need = 0;
  T_CHECK(cudadent_attn_bwd_workspace_size(&p, &need) == CUDADENT_STATUS_SUCCESS, "%s",
          cudadent_get_last_error_message());
  printf("    backward workspace for b2 sq100 sk120 h8/2 d64: %zu bytes\n", need);
  if (need == 0) return T_PASS;
  T_CHECK(cudadent_attn_bwd(&p, NULL, 0, NULL) == CUDADENT_STATUS_WORKSPACE_TOO_SMALL, "NULL ws");
  T_CHECK(strstr(cudadent_get_last_error_message(), "workspace") != NULL, "message");
  T_CHECK(cudadent_attn_bwd(&p, FAKE(20), need - 1, NULL) == CUDADENT_STATUS_WORKSPACE_TOO_SMALL,
          "short ws");
  T_CHECK(cudadent_attn_bwd(&p, (char *)FAKE(20) + 128, need, NULL) == CUDADENT_STATUS_MISALIGNED,
          "misaligned ws");
  printf("    %s\n", cudadent_get_last_error_message());
  return T_PASS;
}

/* A zero-length batch is a no-op that succeeds, with or without a device, and pointers of empty
 * tensors may be NULL. */
static int test_zero_batch_is_noop(void) {
  cudadent_attn_fwd_params_t p = t_valid_fwd();
  p.batch = 0;
  p.q.data = p.k.data = p.v.data = p.o.data = NULL;
  p.lse = NULL;
  T_CHECK(cudadent_attn_fwd(&p, NULL, 0, NULL) == CUDADENT_STATUS_SUCCESS, "fwd: %s",
          cudadent_get_last_error_message());
  T_CHECK(cudadent_get_last_error_message()[0] == '\0', "message not cleared");
  cudadent_attn_bwd_params_t b = t_valid_bwd();
  b.batch = 0;
  b.q.data = b.dq.data = NULL;
  b.lse = NULL;
  T_CHECK(cudadent_attn_bwd(&b, NULL, 0, NULL) == CUDADENT_STATUS_SUCCESS, "bwd: %s",
          cudadent_get_last_error_message());
  /* seqlen_q == 0 in the forward: nothing to write, no device needed */
  p = t_valid_fwd();
  p.seqlen_q = 0;
  p.q.data = p.o.data = NULL;
  T_CHECK(cudadent_attn_fwd(&p, NULL, 0, NULL) == CUDADENT_STATUS_SUCCESS, "sq=0: %s",
          cudadent_get_last_error_message());
  return T_PASS;
}

static int test_no_device(void) {
  if (!t_gpu_skip_reason)
    return t_skip("a CUDA device is present (this test checks the no-device status)");
  cudadent_attn_fwd_params_t p = t_valid_fwd();
  cudadent_status_t st = cudadent_attn_fwd(&p, NULL, 0, NULL);
  T_CHECK(st == CUDADENT_STATUS_NO_DEVICE, "fwd gave %d: %s", st, cudadent_get_last_error_message());
  printf("    %s\n", cudadent_get_last_error_message());
  cudadent_attn_bwd_params_t b = t_valid_bwd();
  size_t need = 0;
  T_CHECK(cudadent_attn_bwd_workspace_size(&b, &need) == CUDADENT_STATUS_SUCCESS, "query");
  st = cudadent_attn_bwd(&b, need ? FAKE(30) : NULL, need, NULL);
  T_CHECK(st == CUDADENT_STATUS_NO_DEVICE, "bwd gave %d: %s", st, cudadent_get_last_error_message());
  return T_PASS;
}

void register_api_tests(void) {
  t_register("api_version", test_version);
  t_register("api_error_strings", test_error_strings);
  t_register("api_fwd_rejects_bad_input", test_fwd_rejects_bad_input);
  t_register("api_bwd_rejects_bad_input", test_bwd_rejects_bad_input);
  t_register("api_workspace_checks", test_workspace_checks);
  t_register("api_zero_batch_is_noop", test_zero_batch_is_noop);
  t_register("api_no_device", test_no_device);
}
