/*
 * api_params.h - fixtures of the API tests (test_api.c, test_api_sizes.c, test_struct_size.c):
 * valid forward/backward params on fake, never-dereferenced device addresses (the API refuses bad
 * input before any launch, which is the property under test), and expectations on the status and
 * message of both the workspace query and the call.
 */
#ifndef CUDADENT_TEST_API_PARAMS_H
#define CUDADENT_TEST_API_PARAMS_H

#include <stdint.h>

#include "cudadent.h"
#include "harness.h"

/* A fake, 4 GiB-spaced, 16-byte aligned device address. */
#define FAKE(n) ((void *)(uintptr_t)(0x7f0000000000ull + (uint64_t)(n) * 0x100000000ull))

/* Dense (batch, seqlen, heads, head_dim) strides. */
cudadent_tensor_t t_dense(void *data, int seqlen, int heads, int head_dim);
/* b2 sq100 sk120 h8/2 d64 bf16, dense, lse set, no mask. */
cudadent_attn_fwd_params_t t_valid_fwd(void);
cudadent_attn_bwd_params_t t_valid_bwd(void);
/* The forward's shape fields and tensors set to (batch, seqlen_q, seqlen_k, heads_q, heads_kv,
 * head_dim), dense. */
void t_fwd_shape(cudadent_attn_fwd_params_t *p, int batch, int seqlen_q, int seqlen_k, int heads_q,
                 int heads_kv, int head_dim);
void t_bwd_shape(cudadent_attn_bwd_params_t *p, int batch, int seqlen_q, int seqlen_k, int heads_q,
                 int heads_kv, int head_dim);

/* T_PASS when both the workspace query and the call give want (a failure: the pointers are fake)
 * and the call's message contains needle (printed); the failing query must leave *bytes alone. */
int t_expect_fwd(const cudadent_attn_fwd_params_t *p, cudadent_status_t want, const char *needle,
                 const char *what);
int t_expect_bwd(const cudadent_attn_bwd_params_t *p, cudadent_status_t want, const char *needle,
                 const char *what);

/* T_PASS when the workspace query accepts p (the call itself is not made: the pointers are
 * fake). */
int t_accept_fwd(const cudadent_attn_fwd_params_t *p, const char *what);
int t_accept_bwd(const cudadent_attn_bwd_params_t *p, const char *what);

/* What this build's portable (sm80) kernels of a direction (bwd 0: forward) are, read from the
 * supported-head-dims query at compute capability 8.0 (no device needed): 1 when it lists every
 * multiple of 8 from 8 to 256, issue 27's kernels, which implement head_dim_v != head_dim and
 * softcap too (the design brings the three together: notes of issue 27); 0 otherwise (the
 * kernels from before: 64 and 128, those features refused as "not implemented yet"). */
int t_portable_has_issue27(int bwd);
/* The smallest multiple of 8 from 8 to 512 that the direction's query lists for neither compute
 * capability 8.0 nor 9.0: a head dim every call refuses (UNSUPPORTED_HEAD_DIM). */
int t_unlisted_head_dim(int bwd);

/* Apply `mutation` to valid params named p, then expect status and a message naming needle. */
#define EXPECT_FWD(mutation, status, needle)                 \
  do {                                                       \
    cudadent_attn_fwd_params_t p = t_valid_fwd();            \
    mutation;                                                \
    int r_ = t_expect_fwd(&p, status, needle, #mutation);    \
    if (r_ != T_PASS) return r_;                             \
  } while (0)
#define EXPECT_BWD(mutation, status, needle)                 \
  do {                                                       \
    cudadent_attn_bwd_params_t p = t_valid_bwd();            \
    mutation;                                                \
    int r_ = t_expect_bwd(&p, status, needle, #mutation);    \
    if (r_ != T_PASS) return r_;                             \
  } while (0)

/* A call using a layout-v2 feature (head_dim_v, softcap): accepted by the workspace query where
 * the direction's portable kernels are issue 27's (t_portable_has_issue27), else refused with
 * status and a message naming needle. */
#define EXPECT_FEATURE_FWD(mutation, status, needle)                                      \
  do {                                                                                    \
    cudadent_attn_fwd_params_t p = t_valid_fwd();                                         \
    mutation;                                                                             \
    int r_ = t_portable_has_issue27(0) ? t_accept_fwd(&p, #mutation)                      \
                                       : t_expect_fwd(&p, status, needle, #mutation);     \
    if (r_ != T_PASS) return r_;                                                          \
  } while (0)
#define EXPECT_FEATURE_BWD(mutation, status, needle)                                      \
  do {                                                                                    \
    cudadent_attn_bwd_params_t p = t_valid_bwd();                                         \
    mutation;                                                                             \
    int r_ = t_portable_has_issue27(1) ? t_accept_bwd(&p, #mutation)                      \
                                       : t_expect_bwd(&p, status, needle, #mutation);     \
    if (r_ != T_PASS) return r_;                                                          \
  } while (0)

#endif
