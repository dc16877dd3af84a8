/*
 * test_gpu_varlen_bwd.c - the varlen backward (issue 28; cudadent.h, "features of layout v2") on
 * the GPU through the public API: the varlen forward, then the backward on NaN-poisoned dQ, dK,
 * dV, against the double-precision CPU reference (tools/problem.h's varlen mode: flash-attn's
 * criterion on each sequence on its own, for dQ per query range and dK / dV per key range; tokens
 * in no sequence, and a sequence's unused keys, must be exactly 0: problem_check counts any other
 * value as bad). Skipped with 'skipped: no CUDA device' where there is none, and while dispatch.h's
 * CUDADENT_SM80_BWD_VARLEN (or the forward's gate) is 0.
 *
 * Tests: gpu_varlen_bwd/<NN-name> (31; 00-14 the portable kernel's list): lengths 0, 1, odd and long in one batch; seqlen_q !=
 * seqlen_k per sequence both ways; sequences with no key or no query; GQA and MQA; no mask,
 * causal, windows; head dims 32 to 256 (exact and padded kernels), head_dim_v != head_dim,
 * softcap; layouts packed, padded, gapped; seqused_k; invalid arrays (clamped: the report of the
 * opt-in check, tokens and keys in no sequence zero); no key at all and no query at all (the
 * fills); the deterministic mode run 5 times, bitwise equal (problem_bwd_repeatable).
 * Cases 15-24 are the Hopper varlen backward's edges (src/kernels/sm90/bwd_varlen*,
 * docs/kernels/sm90_bwd_varlen.md; they run on whichever kernel dispatch picks): sequences
 * ending mid-tile at both BLOCK_M 64 (d128) and 128 (d64) rows and one past a tile, lengths 0 and
 * 1, a long sequence (> 2 key blocks of 128) next to short ones, seqlen_q != seqlen_k per sequence
 * (causal, both ways), windows, GQA and MQA, seqused_k, gapped and padded layouts, head dims 64,
 * 96, 128 and head_dim_v != head_dim both ways. Case 25: softcap at d128 (the Hopper varlen
 * softcap kernel); case 26 at d64 (the 64 / 64 row's, behind dispatch.h's
 * CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP). Cases 27-30: the wide rows (with cases 05 and 06, the
 * Hopper varlen backward's wide kernels behind CUDADENT_SM90_BWD_VARLEN_WIDE).
 * Paths: the default dispatch, or one forced by CUDADENT_KERNEL_BWD / CUDADENT_KERNEL (sm80, or
 * sm90 where dispatch.h CUDADENT_SM90_BWD_VARLEN is 1; a case the forced path does not take,
 * e.g. head dims over 128 where CUDADENT_SM90_BWD_VARLEN_WIDE is 0 or the deterministic mode on
 * sm90, skips; softcap at d128, case 25, runs there, and at d64, case 26, where that gate is 1).
 * Cost: the fp64 reference forward and backward, about 40 core-seconds for the whole list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "dispatch.h" /* CUDADENT_SM80_FWD_VARLEN, CUDADENT_SM80_BWD_VARLEN, CUDADENT_SM90_BWD_VARLEN */
#include "harness.h"
#include "problem.h"
#include "varlen_cases.h" /* the case fields, masks and ragged batches */

void register_gpu_varlen_bwd_tests(void);

enum { REPEAT_RUNS = 5 }; /* deterministic cases: backward runs compared bitwise */

/* The Hopper kernel's tile ends: 63, 65 (BLOCK_M 64 +- 1), 127, 129 (BLOCK_M / BLOCK_N 128 +- 1),
 * 0, 1, exactly 64 and 128, and 191 (a third tile); keys the same (square, causal diagonal) */
static const int tend_q[] = {63, 65, 127, 129, 1, 0, 64, 191, 128},
                 tend_k[] = {63, 65, 127, 129, 1, 0, 64, 191, 128};
/* a long sequence (6 key blocks) among short ones, and one of 300 (3 key blocks) */
static const int lng_q[] = {5, 700, 1, 300, 0, 33}, lng_k[] = {5, 700, 1, 300, 0, 33};
/* seqlen_q != seqlen_k within each sequence, both ways (bottom-right alignment per sequence) */
static const int ne_q[] = {100, 7, 260, 1, 129, 64}, ne_k[] = {300, 7, 90, 129, 1, 200};

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
    /* 15-24: the Hopper varlen backward's edges */
    {"tile-ends-causal-d128", LEN(tend_q), tend_q, tend_k, NULL, NULL, NULL, 4, 2, 128, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"tile-ends-d64-gqa-gapped", LEN(tend_q), tend_q, tend_k, NULL, NULL, NULL, 8, 2, 64, 0,
     CUDADENT_DTYPE_FP16, {NONE}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"long-short-causal-d128-mqa", LEN(lng_q), lng_q, lng_k, NULL, NULL, NULL, 4, 1, 128, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_PADDED, 0, NO_REPORT},
    {"sq-ne-sk-causal-d96", LEN(ne_q), ne_q, ne_k, NULL, NULL, NULL, 6, 3, 96, 0,
     CUDADENT_DTYPE_FP16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"sq-ne-sk-causal-d64", LEN(ne_q), ne_q, ne_k, NULL, NULL, NULL, 4, 2, 64, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"window-d64-mqa", LEN(ne_q), ne_q, ne_k, NULL, NULL, NULL, 4, 1, 64, 0,
     CUDADENT_DTYPE_BF16, {WINDOW}, 0, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"local-long-d128-gqa", LEN(lng_q), lng_q, lng_k, NULL, NULL, NULL, 8, 2, 128, 0,
     CUDADENT_DTYPE_FP16, {LOCAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"seqused-causal-d128", LEN(used_q), used_q, used_k, used_u, NULL, NULL, 4, 2, 128, 0,
     CUDADENT_DTYPE_FP16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"tile-ends-d128v64-causal", LEN(tend_q), tend_q, tend_k, NULL, NULL, NULL, 4, 2, 128, 64,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_PADDED, 0, NO_REPORT},
    {"many-short-d64v96", LEN(many_q), many_q, many_k, NULL, NULL, NULL, 4, 2, 64, 96,
     CUDADENT_DTYPE_FP16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    /* 25: the Hopper varlen softcap backward (the 128 / 128 row; docs/kernels/sm90_bwd.md
     * "Softcap"): causal GQA over sequences ending mid-tile */
    {"tile-ends-causal-d128-gqa-softcap", LEN(tend_q), tend_q, tend_k, NULL, NULL, NULL, 8, 2, 128,
     0, CUDADENT_DTYPE_FP16, {CAUSAL}, 20.0f, LAYOUT_GAPPED, 0, NO_REPORT},
    /* 26: softcap at d64 (the 64 / 64 row's varlen softcap kernel where dispatch.h's
     * CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP is 1, else the portable backward): sequences ending
     * mid-tile of the row's 128 query rows, MQA, softcap 5 */
    {"tile-ends-causal-d64-mqa-softcap", LEN(tend_q), tend_q, tend_k, NULL, NULL, NULL, 4, 1, 64, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 5.0f, LAYOUT_GAPPED, 0, NO_REPORT},
    /* 27-30: the wide rows (192 / 128 and 256 / 256, 64 keys a CTA: tile ends 63 / 65 are key
     * tails too) on the Hopper varlen backward where dispatch.h's CUDADENT_SM90_BWD_VARLEN_WIDE is
     * 1, else the portable backward: exact and padded head dims (160 -> 192, 232 -> 256), GQA and
     * MQA, causal, a window, seqused_k, softcap, every layout but transposed */
    {"tile-ends-causal-d256-gqa", LEN(tend_q), tend_q, tend_k, NULL, NULL, NULL, 4, 2, 256, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"long-short-window-d192v128-mqa", LEN(lng_q), lng_q, lng_k, NULL, NULL, NULL, 4, 1, 192, 128,
     CUDADENT_DTYPE_FP16, {WINDOW}, 0, LAYOUT_PADDED, 0, NO_REPORT},
    {"seqused-causal-d160v128", LEN(used_q), used_q, used_k, used_u, NULL, NULL, 4, 2, 160, 128,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"sq-ne-sk-causal-d232-softcap", LEN(ne_q), ne_q, ne_k, NULL, NULL, NULL, 2, 1, 232, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 30.0f, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
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
  const int forced_sm90 = strcmp(forced_bwd(), "sm90") == 0;
  if (forced_sm90 && !CUDADENT_SM90_BWD_VARLEN)
    return t_skip("varlen backward forced onto sm90 (CUDADENT_KERNEL*): its varlen is not enabled "
                  "(dispatch.h CUDADENT_SM90_BWD_VARLEN 0 until these tests pass there)");
  if (i >= N_CASES) return T_FAILF("no case %d", i);
  const varlen_case_t *c = &cases[i];
  if (forced_sm90 && c->deterministic) /* bwd.cu supports(): the portable kernel's */
    return t_skip("varlen backward forced onto sm90 (CUDADENT_KERNEL*): not deterministic ones");
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
  const cudadent_status_t st = run_fwd_bwd(&pr, err, sizeof err);
  if (st == CUDADENT_STATUS_UNSUPPORTED_ARCH && forced_sm90 && strncmp(err, "bwd:", 4) == 0) {
    problem_destroy(&pr);
    return t_skip("varlen backward forced onto sm90 (CUDADENT_KERNEL*): not a case it takes (e.g. "
                  "head dims over 128)");
  }
  if (st != CUDADENT_STATUS_SUCCESS) {
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
CASE_FN(16) CASE_FN(17) CASE_FN(18) CASE_FN(19) CASE_FN(20) CASE_FN(21) CASE_FN(22) CASE_FN(23)
CASE_FN(24) CASE_FN(25) CASE_FN(26) CASE_FN(27) CASE_FN(28) CASE_FN(29) CASE_FN(30)
static const t_fn case_fns[] = {varlen_bwd_0,  varlen_bwd_1,  varlen_bwd_2,  varlen_bwd_3,
                                varlen_bwd_4,  varlen_bwd_5,  varlen_bwd_6,  varlen_bwd_7,
                                varlen_bwd_8,  varlen_bwd_9,  varlen_bwd_10, varlen_bwd_11,
                                varlen_bwd_12, varlen_bwd_13, varlen_bwd_14, varlen_bwd_15,
                                varlen_bwd_16, varlen_bwd_17, varlen_bwd_18, varlen_bwd_19,
                                varlen_bwd_20, varlen_bwd_21, varlen_bwd_22, varlen_bwd_23,
                                varlen_bwd_24, varlen_bwd_25, varlen_bwd_26, varlen_bwd_27,
                                varlen_bwd_28, varlen_bwd_29, varlen_bwd_30};
_Static_assert(sizeof case_fns / sizeof case_fns[0] >= N_CASES, "add CASE_FN rows");

void register_gpu_varlen_bwd_tests(void) {
  static char names[N_CASES][64];
  for (int i = 0; i < N_CASES; ++i) {
    snprintf(names[i], sizeof names[i], "gpu_varlen_bwd/%02d-%s", i, cases[i].name);
    t_register(names[i], case_fns[i]);
  }
}
