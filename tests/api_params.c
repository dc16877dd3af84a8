/* api_params.c - fixtures of the API tests (api_params.h). */
#include "api_params.h"

#include <stdio.h>
#include <string.h>

cudadent_tensor_t t_dense(void *data, int seqlen, int heads, int head_dim) {
  cudadent_tensor_t t = {data, (int64_t)seqlen * heads * head_dim, (int64_t)heads * head_dim,
                         head_dim, 1};
  return t;
}

void t_fwd_shape(cudadent_attn_fwd_params_t *p, int batch, int seqlen_q, int seqlen_k, int heads_q,
                 int heads_kv, int head_dim) {
  p->batch = batch;
  p->seqlen_q = seqlen_q;
  p->seqlen_k = seqlen_k;
  p->heads_q = heads_q;
  p->heads_kv = heads_kv;
  p->head_dim = head_dim;
  p->q = t_dense(FAKE(1), seqlen_q, heads_q, head_dim);
  p->k = t_dense(FAKE(2), seqlen_k, heads_kv, head_dim);
  p->v = t_dense(FAKE(3), seqlen_k, heads_kv, head_dim);
  p->o = t_dense(FAKE(4), seqlen_q, heads_q, head_dim);
}

cudadent_attn_fwd_params_t t_valid_fwd(void) {
  cudadent_attn_fwd_params_t p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.dtype = CUDADENT_DTYPE_BF16;
  t_fwd_shape(&p, 2, 100, 120, 8, 2, 64);
  p.lse = (float *)FAKE(5);
  p.softmax_scale = 0.125f;
  p.window_left = -1;
  p.window_right = -1;
  return p;
}

void t_bwd_shape(cudadent_attn_bwd_params_t *p, int batch, int seqlen_q, int seqlen_k, int heads_q,
                 int heads_kv, int head_dim) {
  cudadent_attn_fwd_params_t f;
  memset(&f, 0, sizeof f);
  t_fwd_shape(&f, batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim);
  p->batch = batch;
  p->seqlen_q = seqlen_q;
  p->seqlen_k = seqlen_k;
  p->heads_q = heads_q;
  p->heads_kv = heads_kv;
  p->head_dim = head_dim;
  p->q = f.q;
  p->k = f.k;
  p->v = f.v;
  p->o = f.o;
  p->dout = t_dense(FAKE(6), seqlen_q, heads_q, head_dim);
  p->dq = t_dense(FAKE(7), seqlen_q, heads_q, head_dim);
  p->dk = t_dense(FAKE(8), seqlen_k, heads_kv, head_dim);
  p->dv = t_dense(FAKE(9), seqlen_k, heads_kv, head_dim);
}

cudadent_attn_bwd_params_t t_valid_bwd(void) {
  cudadent_attn_bwd_params_t p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.dtype = CUDADENT_DTYPE_BF16;
  t_bwd_shape(&p, 2, 100, 120, 8, 2, 64);
  p.lse = (const float *)FAKE(5);
  p.softmax_scale = 0.125f;
  p.window_left = -1;
  p.window_right = -1;
  return p;
}

enum { UNTOUCHED = 12345 };

int t_expect_fwd(const cudadent_attn_fwd_params_t *p, cudadent_status_t want, const char *needle,
                 const char *what) {
  T_CHECK(want != CUDADENT_STATUS_SUCCESS, "%s: expect failures only (fake pointers)", what);
  size_t bytes = UNTOUCHED;
  cudadent_status_t got = cudadent_attn_fwd_workspace_size(p, &bytes);
  T_CHECK(got == want, "%s: workspace query gave %d, want %d (%s)", what, got, want,
          cudadent_get_last_error_message());
  T_CHECK(got == CUDADENT_STATUS_SUCCESS || bytes == UNTOUCHED,
          "%s: the failing workspace query wrote bytes = %zu", what, bytes);
  got = cudadent_attn_fwd(p, NULL, 0, NULL);
  const char *msg = cudadent_get_last_error_message();
  T_CHECK(got == want, "%s: fwd gave %d (%s), want %d", what, got, msg, want);
  T_CHECK(strstr(msg, needle) != NULL, "%s: message '%s' does not name '%s'", what, msg, needle);
  printf("    %-28s -> %s\n", what, msg);
  return T_PASS;
}

int t_expect_bwd(const cudadent_attn_bwd_params_t *p, cudadent_status_t want, const char *needle,
                 const char *what) {
  T_CHECK(want != CUDADENT_STATUS_SUCCESS, "%s: expect failures only (fake pointers)", what);
  size_t bytes = UNTOUCHED;
  cudadent_status_t got = cudadent_attn_bwd_workspace_size(p, &bytes);
  T_CHECK(got == want, "%s: workspace query gave %d, want %d (%s)", what, got, want,
          cudadent_get_last_error_message());
  T_CHECK(got == CUDADENT_STATUS_SUCCESS || bytes == UNTOUCHED,
          "%s: the failing workspace query wrote bytes = %zu", what, bytes);
  got = cudadent_attn_bwd(p, NULL, 0, NULL);
  const char *msg = cudadent_get_last_error_message();
  T_CHECK(got == want, "%s: bwd gave %d (%s), want %d", what, got, msg, want);
  T_CHECK(strstr(msg, needle) != NULL, "%s: message '%s' does not name '%s'", what, msg, needle);
  printf("    %-28s -> %s\n", what, msg);
  return T_PASS;
}

int t_accept_fwd(const cudadent_attn_fwd_params_t *p, const char *what) {
  size_t bytes = UNTOUCHED;
  const cudadent_status_t got = cudadent_attn_fwd_workspace_size(p, &bytes);
  T_CHECK(got == CUDADENT_STATUS_SUCCESS, "%s: workspace query gave %d (%s), want success", what,
          got, cudadent_get_last_error_message());
  printf("    %-28s -> accepted (workspace %zu bytes)\n", what, bytes);
  return T_PASS;
}

int t_accept_bwd(const cudadent_attn_bwd_params_t *p, const char *what) {
  size_t bytes = UNTOUCHED;
  const cudadent_status_t got = cudadent_attn_bwd_workspace_size(p, &bytes);
  T_CHECK(got == CUDADENT_STATUS_SUCCESS, "%s: workspace query gave %d (%s), want success", what,
          got, cudadent_get_last_error_message());
  printf("    %-28s -> accepted (workspace %zu bytes)\n", what, bytes);
  return T_PASS;
}

typedef cudadent_status_t (*dims_query_fn)(cudadent_dtype_t, int, int *, int, int *);

/* The direction's head dims at compute capability cc (bf16), or -1 on a failing query. */
static int query_dims(int bwd, int cc, int *dims, int capacity) {
  const dims_query_fn q = bwd ? cudadent_attn_bwd_supported_head_dims
                              : cudadent_attn_fwd_supported_head_dims;
  int count = 0;
  if (q(CUDADENT_DTYPE_BF16, cc, dims, capacity, &count) != CUDADENT_STATUS_SUCCESS) return -1;
  return count < capacity ? count : capacity;
}

int t_portable_has_issue27(int bwd) {
  int dims[64];
  const int n = query_dims(bwd, 80, dims, 64);
  if (n != 32) return 0;
  for (int i = 0; i < 32; ++i)
    if (dims[i] != 8 * (i + 1)) return 0;
  return 1;
}

int t_unlisted_head_dim(int bwd) {
  int a[64], b[64];
  const int na = query_dims(bwd, 80, a, 64), nb = query_dims(bwd, 90, b, 64);
  for (int d = 8; d <= 512; d += 8) {
    int listed = 0;
    for (int i = 0; i < na; ++i) listed |= a[i] == d;
    for (int i = 0; i < nb; ++i) listed |= b[i] == d;
    if (!listed) return d;
  }
  return 0;
}
