/*
 * test_gpu_varlen.c - the varlen forward (issue 28; cudadent.h, "features of layout v2") on the
 * GPU through the public API against the double-precision CPU reference (tools/problem.h's
 * varlen mode: the sequences packed into (total, heads, dim) tensors, cu_seqlens uploaded, fresh
 * random inputs, poisoned outputs, flash-attn's criterion applied to each sequence on its own,
 * tokens in no sequence O == 0 and LSE == -inf). Skipped with 'skipped: no CUDA device' where
 * there is none.
 *
 * Tests: gpu_varlen_fwd/<NN-name> (21), the cases below: lengths 0, 1, odd and long in one batch,
 * seqlen_q != seqlen_k per sequence both ways, sequences with no key (every row O = 0,
 * LSE = -inf), GQA and MQA, no mask, causal, windows, head dims 32 to 256, head_dim_v != head_dim,
 * softcap, layouts packed, padded, gapped (a read past a row's real dim or past the packed tokens
 * fails), large and small tiles (the tile choice follows the grid's bound batch * heads *
 * tiles of max_seqlen_q; 132-SM H100 / H200), seqused_k, invalid arrays (clamped: the report of
 * the opt-in check is compared with the first bad entry, and the tokens in no sequence must be
 * O = 0 / LSE = -inf), and no key at all (max_seqlen_k = 0: the fills). Cases 14-18 aim at the
 * Hopper forward's sequence ends (docs/kernels/sm90_fwd.md section 2.6): sequences of 1, 127,
 * 129, ... tokens side by side (a tile's rows and keys crossing into the next sequence), the same
 * with a gap of tokens in no sequence after sequences cut at max_seqlen_q = 129 and after the
 * last one (their O must stay 0 from the gap fill: a store past a sequence's end into its
 * neighbour shows there, whatever order the tiles ran in), with and without LSE, and overlapping
 * query ranges (identical sequences: either's result is the reference) that overflow the sm90
 * tile list into its fallback order.
 * Paths: the default dispatch, or one forced by CUDADENT_KERNEL_FWD / CUDADENT_KERNEL (sm80, or
 * sm90 where dispatch.h CUDADENT_SM90_FWD_VARLEN is 1; a case the forced path does not take
 * skips; the softcap cases (7, 19, 20: the d128 and d256 rows' softcap kernels) run there).
 * Cost: the fp64 reference, about 10 core-seconds for the whole list.
 * The backward of ragged batches: tests/test_gpu_varlen_bwd.c (the gpu_varlen_bwd tests).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "dispatch.h" /* CUDADENT_SM80_FWD_VARLEN, CUDADENT_SM90_FWD_VARLEN */
#include "harness.h"
#include "problem.h"
#include "varlen_cases.h" /* the case fields, masks and ragged batches */

void register_gpu_varlen_tests(void);

/* sequence ends inside tiles (128- and 192-row tiles, 16-row warp stores, 128- and 64-key
 * blocks): 1, 127, 129 side by side, and more */
static const int edge_q[] = {1, 127, 129, 1, 129, 127, 255, 64, 1, 193};
static const int edge_k[] = {1, 127, 129, 5, 100, 127, 255, 64, 300, 193};
/* gaps after sequences: max_seqlen_q = 129 (the longest length below); cu_seqlens_q cuts
 * sequences 0 and 1 at 129 tokens (tokens [129, 150) and [279, 300) in no sequence), then
 * sequences of 1, 127 and 22 tokens, and tokens [450, 614) after the last one in no sequence */
static const int gap_q[] = {129, 129, 129, 127, 100}, gap_k[] = {129, 200, 5, 127, 22};
static const int gap_cu_q[] = {0, 150, 300, 301, 428, 450};
/* overlapping query ranges: sequences 0 and 2 are the same tokens [0, 1024) with the same keys
 * [0, 300) (sequence 1 is empty), so either's result is the reference; 16 query blocks of 128
 * rows where the sm90 list holds 12 (ceil(1026 / 128) + 3): its fallback order */
static const int ovl_q[] = {1024, 1, 1}, ovl_k[] = {300, 1, 1};
static const int ovl_cu_q[] = {0, 1024, 0, 1024}, ovl_cu_k[] = {0, 300, 0, 300};

static const varlen_case_t cases[] = {
    {"mixed-d64", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 4, 2, 64, 0, CUDADENT_DTYPE_BF16,
     {NONE}, 0, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"mixed-causal-gapped", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 4, 2, 64, 0,
     CUDADENT_DTYPE_FP16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"transposed-causal-d128", LEN(tr_q), tr_q, tr_k, NULL, NULL, NULL, 4, 1, 128, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_PADDED, 0, NO_REPORT},
    /* unmasked, 6 x 8 x 3 = 144 CTAs: the large tiles (W128 128x64, the kernel that spills) */
    {"mixed-d128-large-tiles", LEN(mix_q), mix_q, mix_k, NULL, NULL, NULL, 8, 2, 128, 0,
     CUDADENT_DTYPE_BF16, {NONE}, 0, LAYOUT_PADDED, 0, NO_REPORT},
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
    {"long-causal-large-tiles", LEN(long_q), long_q, long_k, NULL, NULL, NULL, 16, 4, 32, 0,
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
    {"edges-1-127-129-d64", LEN(edge_q), edge_q, edge_k, NULL, NULL, NULL, 4, 2, 64, 0,
     CUDADENT_DTYPE_BF16, {NONE}, 0, LAYOUT_GAPPED, 0, NO_REPORT},
    {"edges-causal-d64-gqa", LEN(edge_q), edge_q, edge_k, NULL, NULL, NULL, 6, 2, 64, 0,
     CUDADENT_DTYPE_FP16, {CAUSAL}, 0, LAYOUT_CONTIGUOUS, 0, NO_REPORT},
    {"edge-gaps-causal-d128-v96-no-lse", LEN(gap_q), gap_q, gap_k, NULL, gap_cu_q, NULL, 4, 2, 128,
     96, CUDADENT_DTYPE_BF16, {CAUSAL}, 0, LAYOUT_GAPPED, 0, 1,
     {CUDADENT_SEQLENS_TOO_LONG, 0, 1, 150}, 1},
    {"edge-gaps-d64", LEN(gap_q), gap_q, gap_k, NULL, gap_cu_q, NULL, 4, 4, 64, 0,
     CUDADENT_DTYPE_FP16, {NONE}, 0, LAYOUT_GAPPED, 0, 1, {CUDADENT_SEQLENS_TOO_LONG, 0, 1, 150},
     0},
    {"overlap-fallback-d128", LEN(ovl_q), ovl_q, ovl_k, NULL, ovl_cu_q, ovl_cu_k, 4, 2, 128, 0,
     CUDADENT_DTYPE_BF16, {NONE}, 0, LAYOUT_PADDED, 0, 1, {CUDADENT_SEQLENS_DECREASING, 0, 2, 0}, 0},
    /* the Hopper varlen softcap kernel (the d128 row; docs/kernels/sm90_fwd.md section 2.7):
     * causal GQA over sequence ends inside tiles */
    {"edges-causal-d128-gqa-softcap", LEN(edge_q), edge_q, edge_k, NULL, NULL, NULL, 6, 2, 128, 0,
     CUDADENT_DTYPE_BF16, {CAUSAL}, 20.0f, LAYOUT_GAPPED, 0, NO_REPORT},
    /* the d256 row's (session 27): Gemma 2's width, head_dim_v below it, fp16, sequence ends inside
     * tiles, gaps of tokens in no sequence */
    {"edge-gaps-causal-d256-v200-gqa-softcap", LEN(gap_q), gap_q, gap_k, NULL, gap_cu_q, NULL, 4, 2,
     256, 200, CUDADENT_DTYPE_FP16, {CAUSAL}, 30.0f, LAYOUT_GAPPED, 0, 1,
     {CUDADENT_SEQLENS_TOO_LONG, 0, 1, 150}, 0},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

static int run_varlen_case(int i) {
  T_REQUIRE_GPU();
  if (!CUDADENT_SM80_FWD_VARLEN)
    return t_skip("the varlen forward is not enabled (dispatch.h CUDADENT_SM80_FWD_VARLEN 0 until "
                  "these tests have passed on a GPU)");
  if (i >= N_CASES) return T_FAILF("no case %d", i);
  const varlen_case_t *c = &cases[i];
  const char *forced = getenv("CUDADENT_KERNEL_FWD");
  if (!forced || !forced[0]) forced = getenv("CUDADENT_KERNEL");
  const int forced_sm90 = forced && strcmp(forced, "sm90") == 0;
  if (forced_sm90 && !CUDADENT_SM90_FWD_VARLEN)
    return t_skip("varlen forward forced onto sm90 (CUDADENT_KERNEL*): its varlen is not enabled "
                  "(dispatch.h CUDADENT_SM90_FWD_VARLEN 0 until these tests pass there)");
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
  const cudadent_status_t st = problem_run_fwd(&pr, NULL);
  if (st == CUDADENT_STATUS_UNSUPPORTED_ARCH && forced_sm90) {
    problem_destroy(&pr);
    return t_skip("varlen forward forced onto sm90 (CUDADENT_KERNEL*): not a case it takes (e.g. "
                  "softcap with head dims up to 64)");
  }
  if (st != CUDADENT_STATUS_SUCCESS) {
    problem_destroy(&pr);
    return T_FAILF("%s: %s: %s", c->name, cudadent_get_error_string(st),
                   cudadent_get_last_error_message());
  }
  cudadent_seqlens_report_t rep = {-1, -1, -1, -1};
  if (c->report && problem_varlen_report(&pr, &rep) != 0) {
    problem_destroy(&pr);
    return T_FAILF("%s: CUDA failure reading the report", c->name);
  }
  check_result_t r;
  const int rc = problem_check(&pr, 0, &r);
  problem_destroy(&pr);
  if (rc != 0)
    return T_FAILF("%s: CUDA failure: %s", c->name, cudaGetErrorString(cudaGetLastError()));
  problem_print_check(&r, 0);
  if (c->report) {
    printf("    report: status %d array %d index %d value %d (want %d %d %d %d)\n", rep.status,
           rep.array, rep.index, rep.value, c->expect.status, c->expect.array, c->expect.index,
           c->expect.value);
    T_CHECK(rep.status == c->expect.status && rep.array == c->expect.array &&
                rep.index == c->expect.index && rep.value == c->expect.value,
            "%s: the seqlens report differs from the first bad entry", c->name);
  }
  return r.pass ? T_PASS
                : T_FAILF("%s: outside the criterion (or a clobbered gap, a non-finite output, "
                          "or a token in no sequence not O = 0 / LSE = -inf: 'bad' above)",
                          c->name);
}

#define VARLEN_FN(i) \
  static int varlen_fwd_##i(void) { return run_varlen_case(i); }
VARLEN_FN(0) VARLEN_FN(1) VARLEN_FN(2) VARLEN_FN(3) VARLEN_FN(4) VARLEN_FN(5) VARLEN_FN(6)
VARLEN_FN(7) VARLEN_FN(8) VARLEN_FN(9) VARLEN_FN(10) VARLEN_FN(11) VARLEN_FN(12) VARLEN_FN(13)
VARLEN_FN(14) VARLEN_FN(15) VARLEN_FN(16) VARLEN_FN(17) VARLEN_FN(18) VARLEN_FN(19)
VARLEN_FN(20)
static const t_fn varlen_fns[] = {varlen_fwd_0,  varlen_fwd_1,  varlen_fwd_2,  varlen_fwd_3,
                                  varlen_fwd_4,  varlen_fwd_5,  varlen_fwd_6,  varlen_fwd_7,
                                  varlen_fwd_8,  varlen_fwd_9,  varlen_fwd_10, varlen_fwd_11,
                                  varlen_fwd_12, varlen_fwd_13, varlen_fwd_14, varlen_fwd_15,
                                  varlen_fwd_16, varlen_fwd_17, varlen_fwd_18, varlen_fwd_19,
                                  varlen_fwd_20};
_Static_assert(sizeof varlen_fns / sizeof varlen_fns[0] >= N_CASES, "add VARLEN_FN rows");

void register_gpu_varlen_tests(void) {
  static char names[N_CASES][64];
  for (int i = 0; i < N_CASES; ++i) {
    snprintf(names[i], sizeof names[i], "gpu_varlen_fwd/%02d-%s", i, cases[i].name);
    t_register(names[i], varlen_fns[i]);
  }
}
