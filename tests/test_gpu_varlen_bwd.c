/*
 * test_gpu_varlen_bwd.c - the varlen backward (issue 28; cudadent.h, "features of layout v2") on
 * the GPU through the public API: the varlen forward, then the backward on NaN-poisoned dQ, dK,
 * dV, against the double-precision CPU reference (tools/problem.h's varlen mode: flash-attn's
 * criterion on each sequence on its own, for dQ per query range and dK / dV per key range; tokens
 * in no sequence, and a sequence's unused keys, must be exactly 0: problem_check counts any other
 * value as bad). Skipped with 'skipped: no CUDA device' where there is none, and while dispatch.h's
 * CUDADENT_SM80_BWD_VARLEN (or the forward's gate) is 0.
 *
 * Tests: gpu_varlen_bwd/<NN-name> (15): lengths 0, 1, odd and long in one batch; seqlen_q !=
 * seqlen_k per sequence both ways; sequences with no key or no query; GQA and MQA; no mask,
 * causal, windows; head dims 32 to 256 (exact and padded kernels), head_dim_v != head_dim,
 * softcap; layouts packed, padded, gapped; seqused_k; invalid arrays (clamped: the report of the
 * opt-in check, tokens and keys in no sequence zero); no key at all and no query at all (the
 * fills); the deterministic mode run 5 times, bitwise equal (problem_bwd_repeatable).
 * Cost: the fp64 reference forward and backward, about 20 core-seconds for the whole list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "dispatch.h" /* CUDADENT_SM80_FWD_VARLEN, CUDADENT_SM80_BWD_VARLEN */
#include "harness.h"
#include "problem.h"
#include "varlen_cases.h" /* the case fields, masks and ragged batches */

void register_gpu_varlen_bwd_tests(void);

enum { REPEAT_RUNS = 5 }; /* deterministic cases: backward runs compared bitwise */

static const varlen_case_t cases[] = {
    {"mixed-d64", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 4, 2, 64, 0, CUDADENT_DTYPE_BF16,
     {NONE}, 0, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"mixed-causal-gapped", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 4, 2, 64, 0,
     CUDADENT_DTYPE_FP16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"transposed-causal-d128-mqa", LEN(tr_q), tr_q, tr_k, NULL, NULL, NULL, 4, 1, 128, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_PADDED, 0, NO_REPORT},
    {"mixed-window-d128", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 4, 1, 128, 0,
     CUDADENT_DTYPE_FP16, {WINDOW}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"transposed-local-d96", LEN(tr_q), tr_q, tr_k, NULL, NULL, NULL, 6, 2, 96, 0,
     CUDADENT_DTYPE_BF16, {LOCAL}, 0, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"mixed-causal-d256", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 2, 1, 256, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"mixed-d192v128-softcap", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 2, 2, 192, 128,
     CUDADENT_DTYPE_FP16, {CAUSAL}, 30.0f, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"many-short-causal", LEN(many_q), many_q, many_k, NULL, NULL, NULL, 4, 2, 64, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"long-causal-d32", LEN(long_q), long_q, long_k, NULL, NULL, NULL, 8, 2, 32, 0,
     CUDADENT_DTYPE_FP16, {CAUSAL}, 0, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"seqused-causal-report", LEN(used_q), used_q, used_k, used_u, NULL, NULL, 4, 2, 64, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, 1, {CUDADENT_SEQLENS_OK, 0, 0, 0}, 0},
    {"invalid-cu-q-report", LEN(bad_q), bad_q, bad_k, NULL, bad_cu_q, NULL, 4, 2, 64, 0,
     CUDADENT_DTYPE_FP16, {NONE}, 0, LAYOUT_GAPPED, 0, 1, {CUDADENT_SEQLENS_TOO_LONG, 0, 2, 150}, 0},
    {"invalid-cu-k-report", LEN(bad_q), bad_q, bad_k, NULL, NULL, badk_cu_k, 4, 2, 64, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_CONTIGUOUS, 0, 1,
     {CUDADENT_SEQLENS_TOO_LONG, 1, 2, 130}, 0},
    {"no-key-report", LEN(nokey_q), nokey_q, nokey_k, NULL, NULL, NULL, 4, 2, 64, 0,
     CUDADENT_DTYPE_BF16, {NONE}, 0, LAYOUT_GAPPED, 0, 1, {CUDADENT_SEQLENS_OK, 0, 0, 0}, 0},
    {"no-query", LEN(noq_q), noq_q, noq_k, NULL, NULL, NULL, 4, 2, 64, 0, CUDADENT_DTYPE_FP16,
     {CAUSAL}, 0, LAYOUT_PADDED, 0, NO_REPORT},
    {"deterministic-mixed-causal-d128", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 4, 2, 128, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_GAPPED, 1, NO_REPORT},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* The forced backward path (CUDADENT_KERNEL_BWD, else CUDADENT_KERNEL), or "". */
static const char *forced_bwd(void) {
  const char *f = getenv("CUDADENT_KERNEL_BWD");
  if (!f || !f[0]) f = getenv("CUDADENT_KERNEL");
  return f ? f : "";
}

/* The forward, O's gaps refilled (an input of the backward), the report poisoned again (the
 * backward's own is compared), the gradients poisoned (problem_create did), the backward. */
static cudadent_status_t run_fwd_bwd(problem_t *pr, char *why, size_t len) {
  cudadent_status_t st = problem_run_fwd(pr, NULL);
  if (st != CUDADENT_STATUS_SUCCESS) {
    snprintf(why, len, "fwd: %s", cudadent_get_last_error_message());
    return st;
  }
  if (problem_gap_o_for_bwd(pr) != 0 ||
      (pr->dev_report && cudaMemset(pr->dev_report, 0xFF, sizeof *pr->dev_report) != cudaSuccess)) {
    snprintf(why, len, "CUDA failure between forward and backward");
    return CUDADENT_STATUS_CUDA_ERROR;
  }
  st = problem_run_bwd(pr, NULL);
  if (st != CUDADENT_STATUS_SUCCESS) snprintf(why, len, "bwd: %s", cudadent_get_last_error_message());
  return st;
}

static int run_case(int i) {
  T_REQUIRE_GPU();
  if (!CUDADENT_SM80_BWD_VARLEN || !CUDADENT_SM80_FWD_VARLEN)
    return t_skip("the varlen backward (or forward) is not enabled (dispatch.h "
                  "CUDADENT_SM80_BWD_VARLEN / CUDADENT_SM80_FWD_VARLEN)");
  if (strcmp(forced_bwd(), "sm90") == 0)
    return t_skip("varlen backward forced onto sm90 (CUDADENT_KERNEL*): only sm80 has varlen");
  if (i >= N_CASES) return T_FAILF("no case %d", i);
  const varlen_case_t *c = &cases[i];
  problem_desc_t desc = varlen_case_desc(c);
  problem_t pr;
  char err[256] = "", name[400];
  if (problem_create(&pr, &desc, err, sizeof err) != 0) {
    problem_destroy(&pr);
    return T_FAILF("%s: setup: %s", c->name, err);
  }
  problem_describe(&pr.d, name, sizeof name);
  printf("    %s: %s, total %d/%d, seed %llu\n", c->name, name, pr.total_q, pr.total_k,
         (unsigned long long)pr.d.seed);
  if (c->deterministic) {
    const int rc = problem_bwd_repeatable(&pr, REPEAT_RUNS, err, sizeof err);
    problem_destroy(&pr);
    return rc == 0 ? T_PASS : T_FAILF("%s: %s", c->name, err);
  }
  if (run_fwd_bwd(&pr, err, sizeof err) != CUDADENT_STATUS_SUCCESS) {
    problem_destroy(&pr);
    return T_FAILF("%s: %s", c->name, err);
  }
  cudadent_seqlens_report_t rep = {-1, -1, -1, -1};
  if (c->report && problem_varlen_report(&pr, &rep) != 0) {
    problem_destroy(&pr);
    return T_FAILF("%s: CUDA failure reading the report", c->name);
  }
  check_result_t r;
  const int rc = problem_check(&pr, 1, &r);
  problem_destroy(&pr);
  if (rc != 0)
    return T_FAILF("%s: CUDA failure: %s", c->name, cudaGetErrorString(cudaGetLastError()));
  problem_print_check(&r, 1);
  if (c->report) {
    printf("    backward's report: status %d array %d index %d value %d (want %d %d %d %d)\n",
           rep.status, rep.array, rep.index, rep.value, c->expect.status, c->expect.array,
           c->expect.index, c->expect.value);
    T_CHECK(rep.status == c->expect.status && rep.array == c->expect.array &&
                rep.index == c->expect.index && rep.value == c->expect.value,
            "%s: the backward's seqlens report differs from the first bad entry", c->name);
  }
  return r.pass ? T_PASS
                : T_FAILF("%s: outside the criterion (or a clobbered gap, a non-finite output, "
                          "or a token in no sequence / an unused key not exactly 0: 'bad' above)",
                          c->name);
}

#define CASE_FN(i) \
  static int varlen_bwd_##i(void) { return run_case(i); }
CASE_FN(0) CASE_FN(1) CASE_FN(2) CASE_FN(3) CASE_FN(4) CASE_FN(5) CASE_FN(6) CASE_FN(7)
CASE_FN(8) CASE_FN(9) CASE_FN(10) CASE_FN(11) CASE_FN(12) CASE_FN(13) CASE_FN(14) CASE_FN(15)
static const t_fn case_fns[] = {varlen_bwd_0,  varlen_bwd_1,  varlen_bwd_2,  varlen_bwd_3,
                                varlen_bwd_4,  varlen_bwd_5,  varlen_bwd_6,  varlen_bwd_7,
                                varlen_bwd_8,  varlen_bwd_9,  varlen_bwd_10, varlen_bwd_11,
                                varlen_bwd_12, varlen_bwd_13, varlen_bwd_14, varlen_bwd_15};
_Static_assert(sizeof case_fns / sizeof case_fns[0] >= N_CASES, "add CASE_FN rows");

void register_gpu_varlen_bwd_tests(void) {
  static char names[N_CASES][64];
  for (int i = 0; i < N_CASES; ++i) {
    snprintf(names[i], sizeof names[i], "gpu_varlen_bwd/%02d-%s", i, cases[i].name);
    t_register(names[i], case_fns[i]);
  }
}
