/*
 * test_gpu_softcap.c - softcap on the Hopper forward and backward (issue 27; docs/kernels/sm90_fwd.md
 * and sm90_bwd_softcap.md): scores = softcap * tanh(scores / softcap) before the mask, on the GPU through the
 * public API against the double-precision CPU reference (tools/problem.h: fresh random inputs,
 * poisoned outputs, flash-attn's criterion). Skipped with 'skipped: no CUDA device' where there
 * is none.
 *
 * Tests: gpu_softcap_hopper_fwd/<case>, each named "NN-d<head_dim>[v<head_dim_v>]-cap<softcap>
 * [-nolse][-bwd]": the softcap kernels of the Hopper forward's d128 and d256 rows and calls
 * rounded up to them (d96 -> 128, 192 / 128 -> 256), causal, windows and none, GQA and MQA,
 * seqlen_q != seqlen_k both ways and lengths off the 128-key tiles (ragged tails), with and
 * without LSE, fp16 and bf16, a large softcap (50, 30) and a small one (5) over large scores
 * (softmax_scale 1 and outliers: tanh saturates); one case also runs the backward (-bwd: the
 * Hopper forward's LSE feeding the portable backward, which recomputes P against it), and one
 * d64 case that the Hopper row leaves to the portable kernel (its supports(): no softcap kernel
 * of width 64). The forward is checked, and with -bwd dQ, dK, dV too.
 *
 * Tests: gpu_softcap_hopper_bwd/<case>, "NN-d<head_dim>[v<head_dim_v>]-cap<softcap>[-det]": the
 * backward (forward, then backward, O, LSE, dQ, dK, dV checked): the Hopper backward's softcap
 * kernel of the 128 / 128 row (d128 and 128 / 64 rounded up to it; d96 the 96 / 96 row's since
 * session 28, config.cuh SM90_BWD_D96), causal, local and
 * two-sided windows and none, GQA and MQA, seqlen_q != seqlen_k both ways with ragged tails, fp16
 * and bf16, a saturating softcap (5 at softmax_scale 1 with outliers) and mild ones (30, 50); and
 * the calls that row leaves to the portable backward: deterministic (-det; the row's
 * deterministic softcap kernel takes it where dispatch.h's CUDADENT_SM90_BWD_DET_SOFTCAP is 1), and
 * d64, which the 64 / 64 row's softcap kernel takes where dispatch.h's CUDADENT_SM90_BWD_D64_SOFTCAP
 * is 1. From
 * case 10 the wide rows' softcap kernels (256 / 256 and 192 / 128, and 176 / 104 rounded up to
 * 192 / 128): d256 causal GQA with seqlen_q > seqlen_k off the 64-row tiles (rows with no key),
 * d256 two-sided window fp16, d256 MQA saturated (softcap 5, outliers), 192 / 128 causal local
 * window, 176 / 104; and a deterministic d256 one, left to the portable backward.
 *
 * Paths. CUDADENT_KERNEL_FWD=sm90 (or CUDADENT_KERNEL=sm90) forces the forward onto the Hopper
 * path: the cases skip while dispatch.h's CUDADENT_SM90_FWD_SOFTCAP is 0 (the row does not list
 * softcap), and so does a case the row does not take (the d64 one; the -bwd case where the
 * backward is forced onto sm90 too, whose row takes no d256 softcap). Under the default dispatch
 * every case must run: on sm_90 the Hopper forward takes the ones with enough work (its
 * preferred()) where the gate is 1, the portable kernel the others (and all of them where it is
 * 0). CUDADENT_KERNEL_BWD=sm90 forces the backward cases' backward onto the Hopper path: they skip
 * while their row's gate in dispatch.h is 0 (CUDADENT_SM90_BWD_SOFTCAP: head dims up to 128, and
 * at d64 CUDADENT_SM90_BWD_D64_SOFTCAP too; CUDADENT_SM90_BWD_WIDE_SOFTCAP with
 * CUDADENT_SM90_BWD_WIDE: a head dim over 128), and so do those the row leaves to the portable
 * backward (-det); at gate 1 a d64 case the row refuses fails. Under the default dispatch every one
 * runs (the Hopper backward where the gate is 1 and its supports() takes the call, else the
 * portable one).
 *
 * Cost: the fp64 reference, about 2 ns per score and head-dim column on one core, a forward
 * check twice, a backward check about ten times: about 20 core-seconds for the forward cases,
 * about 40 for the backward ones (estimated).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "dispatch.h" /* CUDADENT_SM90_FWD_SOFTCAP, CUDADENT_SM90_BWD_SOFTCAP, _WIDE, _WIDE_SOFTCAP, _D64_SOFTCAP, _DET_SOFTCAP */
#include "harness.h"
#include "problem.h"

void register_gpu_softcap_tests(void);

#define NONE 0, -1, -1
#define CAUSAL 1, -1, -1
#define WINDOW 0, 33, 7 /* sliding window, both sides */
#define LOCAL 1, 64, -1 /* causal local window */

typedef struct softcap_case {
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  cudadent_dtype_t dtype;
  int mask[3]; /* causal, window_left, window_right */
  float softcap;
  float softmax_scale; /* 0: 1/sqrt(head_dim); 1: large scores, tanh saturates at softcap 5 */
  problem_layout_t layout;
  int outliers, no_lse;
  int bwd; /* 1: the backward too, checked */
  int det; /* 1: a deterministic backward */
} softcap_case_t;

/* b, sq, sk, hq, hkv, head_dim, head_dim_v, dtype, mask, softcap, scale, layout, outliers, no_lse,
 * bwd; the reference's estimated core-seconds in the comment */
#define SC(b, sq, sk, hq, hkv, dim, dimv, dt, mask, cap, scale, lay, out, nolse, bwd)           \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, cap, scale, LAYOUT_##lay, out,    \
   nolse, bwd, 0}
static const softcap_case_t cases[] = {
    /* d128 row */
    SC(1, 800, 800, 8, 2, 128, 0, BF16, CAUSAL, 50.0f, 0, GAPPED, 0, 0, 0),   /* 2.6, GQA */
    SC(2, 300, 1000, 8, 1, 128, 0, FP16, NONE, 30.0f, 0, CONTIGUOUS, 0, 1, 0), /* 2.5, MQA */
    SC(1, 1000, 700, 8, 4, 128, 0, BF16, LOCAL, 5.0f, 1.0f, GAPPED, 1, 0, 0), /* 2.9, saturated */
    SC(2, 700, 300, 4, 2, 96, 0, FP16, CAUSAL, 30.0f, 0, GAPPED, 0, 0, 0),   /* 0.6, rows w/o keys */
    /* d256 row */
    SC(1, 700, 700, 8, 2, 256, 0, BF16, CAUSAL, 30.0f, 0, CONTIGUOUS, 0, 0, 0), /* 4.0, GQA */
    SC(2, 1000, 257, 8, 8, 256, 0, FP16, NONE, 5.0f, 1.0f, GAPPED, 1, 1, 0),  /* 4.2, saturated */
    SC(1, 500, 900, 8, 2, 192, 128, FP16, WINDOW, 50.0f, 0, GAPPED, 0, 0, 0), /* 1.4, 192 / 128 */
    /* training: the Hopper forward's LSE into the portable backward */
    SC(1, 300, 300, 4, 2, 256, 0, BF16, CAUSAL, 30.0f, 0, GAPPED, 0, 0, 1),  /* 1.8 */
    /* d64: left to the portable kernel (no softcap kernel of width 64 on the Hopper path) */
    SC(1, 1000, 1000, 8, 2, 64, 0, FP16, CAUSAL, 30.0f, 0, CONTIGUOUS, 0, 0, 0), /* 2.0 */
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* The backward cases (gpu_softcap_hopper_bwd): b, sq, sk, hq, hkv, head_dim, head_dim_v, dtype,
 * mask, softcap, scale, layout, outliers, deterministic; the reference's estimated core-seconds */
#define SB(b, sq, sk, hq, hkv, dim, dimv, dt, mask, cap, scale, lay, out, det)                     \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, cap, scale, LAYOUT_##lay, out, 0, \
   1, det}
static const softcap_case_t bwd_cases[] = {
    /* the 128 / 128 row's softcap kernel */
    SB(1, 520, 520, 4, 2, 128, 0, BF16, CAUSAL, 30.0f, 0, GAPPED, 0, 0),      /* 3.3, GQA */
    SB(2, 200, 700, 2, 1, 128, 0, FP16, NONE, 50.0f, 0, CONTIGUOUS, 0, 0),    /* 1.7, MQA */
    SB(1, 700, 300, 4, 2, 128, 0, BF16, WINDOW, 5.0f, 1.0f, GAPPED, 1, 0),    /* 2.6, saturated */
    SB(1, 450, 200, 4, 1, 128, 0, FP16, LOCAL, 5.0f, 1.0f, GAPPED, 1, 0),     /* 1.1, saturated, rows w/o keys */
    SB(2, 300, 300, 4, 4, 96, 0, FP16, CAUSAL, 30.0f, 0, GAPPED, 0, 0),       /* 2.0, d96: the 96 / 96 row */
    SB(1, 400, 600, 4, 2, 128, 64, FP16, CAUSAL, 30.0f, 0, GAPPED, 0, 0),     /* 2.2, 128 / 64 */
    SB(1, 1000, 800, 2, 1, 128, 0, BF16, NONE, 50.0f, 0, CONTIGUOUS, 1, 0),   /* 4.9, MQA, outliers */
    /* deterministic (the row's deterministic softcap kernel where CUDADENT_SM90_BWD_DET_SOFTCAP is
     * 1, else the portable backward); d64 (the 64 / 64 row's softcap kernel where
     * CUDADENT_SM90_BWD_D64_SOFTCAP is 1) */
    SB(1, 300, 300, 4, 2, 128, 0, BF16, CAUSAL, 30.0f, 0, GAPPED, 0, 1),      /* 1.1 */
    SB(1, 500, 500, 4, 2, 64, 0, FP16, CAUSAL, 30.0f, 0, CONTIGUOUS, 0, 0),   /* 1.5 */
    SB(1, 300, 700, 4, 4, 64, 0, BF16, NONE, 5.0f, 1.0f, GAPPED, 1, 0),       /* 1.3, saturated */
    /* the wide rows' softcap kernels (CUDADENT_SM90_BWD_WIDE_SOFTCAP) */
    SB(1, 450, 333, 4, 2, 256, 0, BF16, CAUSAL, 30.0f, 0, GAPPED, 0, 0),      /* 3.1, GQA, rows w/o keys */
    SB(2, 200, 380, 4, 4, 256, 0, FP16, WINDOW, 50.0f, 0, CONTIGUOUS, 0, 0),  /* 3.1, sq < sk */
    SB(1, 257, 520, 4, 1, 256, 0, BF16, NONE, 5.0f, 1.0f, GAPPED, 1, 0),      /* 2.7, MQA, saturated */
    SB(1, 390, 270, 4, 2, 192, 128, FP16, LOCAL, 30.0f, 0, GAPPED, 0, 0),     /* 1.1, 192 / 128 */
    SB(2, 130, 300, 4, 1, 176, 104, BF16, NONE, 50.0f, 0, GAPPED, 0, 0),      /* 0.7, 176 / 104 -> 192 / 128 */
    /* left to the portable backward: deterministic */
    SB(1, 300, 300, 4, 2, 256, 0, BF16, CAUSAL, 30.0f, 0, GAPPED, 0, 1),      /* 1.8 */
};
enum { N_BWD_CASES = sizeof bwd_cases / sizeof bwd_cases[0] };

static const char *forced_of(const char *own) {
  const char *v = getenv(own);
  if (!v || !v[0]) v = getenv("CUDADENT_KERNEL");
  return v;
}

/* case i of the forward cases (hopper_bwd 0) or of the backward ones (1) */
static int run_softcap_case(int i, int hopper_bwd) {
  T_REQUIRE_GPU();
  if (i >= (hopper_bwd ? N_BWD_CASES : N_CASES)) return T_FAILF("no case %d", i);
  const softcap_case_t *c = hopper_bwd ? &bwd_cases[i] : &cases[i];
  const char *ff = forced_of("CUDADENT_KERNEL_FWD"), *fb = forced_of("CUDADENT_KERNEL_BWD");
  const int fwd_sm90 = ff && strcmp(ff, "sm90") == 0, bwd_sm90 = fb && strcmp(fb, "sm90") == 0;
  if (fwd_sm90 && !CUDADENT_SM90_FWD_SOFTCAP)
    return t_skip("softcap forward forced onto sm90 (CUDADENT_KERNEL*): its softcap is not enabled "
                  "(dispatch.h CUDADENT_SM90_FWD_SOFTCAP 0 in this build)");
  /* the row's gate: the 128 / 128 row's, or the wide rows' (a head dim over 128) */
  const int wide = c->head_dim > 128 || c->head_dim_v > 128;
  if (c->bwd && bwd_sm90 && !wide && !CUDADENT_SM90_BWD_SOFTCAP)
    return t_skip("softcap backward forced onto sm90 (CUDADENT_KERNEL*): its softcap is not enabled "
                  "(dispatch.h CUDADENT_SM90_BWD_SOFTCAP 0 in this build)");
  if (c->bwd && bwd_sm90 && wide && !(CUDADENT_SM90_BWD_WIDE && CUDADENT_SM90_BWD_WIDE_SOFTCAP))
    return t_skip("softcap backward forced onto sm90 (CUDADENT_KERNEL*): its wide rows' softcap is "
                  "not enabled (dispatch.h CUDADENT_SM90_BWD_WIDE_SOFTCAP 0 in this build)");
  problem_desc_t d;
  memset(&d, 0, sizeof d);
  d.batch = c->batch;
  d.seqlen_q = c->seqlen_q;
  d.seqlen_k = c->seqlen_k;
  d.heads_q = c->heads_q;
  d.heads_kv = c->heads_kv;
  d.head_dim = c->head_dim;
  d.head_dim_v = c->head_dim_v;
  d.dtype = c->dtype;
  d.causal = c->mask[0];
  d.window_left = c->mask[1];
  d.window_right = c->mask[2];
  d.softcap = c->softcap;
  d.softmax_scale = c->softmax_scale;
  d.layout = c->layout;
  d.outliers = c->outliers;
  d.no_lse = c->no_lse;
  d.deterministic = c->det;
  d.gap_width = c->layout == LAYOUT_GAPPED ? 256 : 0; /* the widest row: any overread shows */
  problem_t pr;
  char err[256] = "", name[200];
  problem_describe(&d, name, sizeof name);
  if (problem_create(&pr, &d, err, sizeof err) != 0) {
    problem_destroy(&pr);
    return T_FAILF("%s: setup: %s", name, err);
  }
  printf("    %s softmax_scale %g seed %llu\n", name, (double)c->softmax_scale,
         (unsigned long long)pr.d.seed);
  cudadent_status_t st = problem_run_fwd(&pr, NULL);
  if (st == CUDADENT_STATUS_UNSUPPORTED_ARCH && fwd_sm90) {
    problem_destroy(&pr);
    return t_skip("forward forced onto sm90: a softcap call its row leaves to the portable kernel "
                  "(head dims up to 64)");
  }
  if (st == CUDADENT_STATUS_SUCCESS && c->bwd) {
    if (problem_gap_o_for_bwd(&pr) != 0) {
      problem_destroy(&pr);
      return T_FAILF("%s: CUDA failure refilling O's gaps: %s", name,
                     cudaGetErrorString(cudaGetLastError()));
    }
    st = problem_run_bwd(&pr, NULL);
    /* a dense call of a row whose gate is 1 must be taken (a deterministic one of the 128 / 128 row
     * where CUDADENT_SM90_BWD_DET_SOFTCAP is 1 too): no skip */
    const int d64_row = c->head_dim <= 64 && (c->head_dim_v == 0 || c->head_dim_v <= 64);
    const int det_ok = !c->det || (CUDADENT_SM90_BWD_DET_SOFTCAP && !wide && !d64_row);
    const int row_takes = det_ok && (wide ? CUDADENT_SM90_BWD_WIDE && CUDADENT_SM90_BWD_WIDE_SOFTCAP
                                     : d64_row ? CUDADENT_SM90_BWD_SOFTCAP && CUDADENT_SM90_BWD_D64_SOFTCAP
                                               : CUDADENT_SM90_BWD_SOFTCAP);
    if (st == CUDADENT_STATUS_UNSUPPORTED_ARCH && bwd_sm90 && !row_takes) {
      problem_destroy(&pr);
      return t_skip("softcap backward forced onto sm90: a call its row leaves to the portable backward "
                    "(head dims up to 64 while CUDADENT_SM90_BWD_D64_SOFTCAP is 0, deterministic)");
    }
  }
  if (st != CUDADENT_STATUS_SUCCESS) {
    problem_destroy(&pr);
    return T_FAILF("%s: %s: %s", name, cudadent_get_error_string(st),
                   cudadent_get_last_error_message());
  }
  check_result_t r;
  const int rc = problem_check(&pr, c->bwd, &r);
  problem_destroy(&pr);
  if (rc != 0) return T_FAILF("%s: CUDA failure: %s", name, cudaGetErrorString(cudaGetLastError()));
  problem_print_check(&r, c->bwd);
  return r.pass ? T_PASS : T_FAILF("%s: outside the criterion (or a clobbered gap, or a "
                                   "non-finite output: 'bad' above)", name);
}

#define SOFTCAP_BWD_FN(i) \
  static int softcap_bwd_##i(void) { return run_softcap_case(i, 1); }
#define SOFTCAP_FN(i) \
  static int softcap_##i(void) { return run_softcap_case(i, 0); } \
  SOFTCAP_BWD_FN(i)
SOFTCAP_FN(0) SOFTCAP_FN(1) SOFTCAP_FN(2) SOFTCAP_FN(3) SOFTCAP_FN(4) SOFTCAP_FN(5)
SOFTCAP_FN(6) SOFTCAP_FN(7) SOFTCAP_FN(8) SOFTCAP_FN(9) SOFTCAP_FN(10) SOFTCAP_FN(11)
SOFTCAP_BWD_FN(12) SOFTCAP_BWD_FN(13) SOFTCAP_BWD_FN(14) SOFTCAP_BWD_FN(15) SOFTCAP_BWD_FN(16)
SOFTCAP_BWD_FN(17)
static const t_fn softcap_fns[] = {softcap_0, softcap_1, softcap_2, softcap_3,
                                   softcap_4, softcap_5, softcap_6, softcap_7,
                                   softcap_8, softcap_9, softcap_10, softcap_11};
static const t_fn softcap_bwd_fns[] = {softcap_bwd_0,  softcap_bwd_1,  softcap_bwd_2,  softcap_bwd_3,
                                       softcap_bwd_4,  softcap_bwd_5,  softcap_bwd_6,  softcap_bwd_7,
                                       softcap_bwd_8,  softcap_bwd_9,  softcap_bwd_10, softcap_bwd_11,
                                       softcap_bwd_12, softcap_bwd_13, softcap_bwd_14, softcap_bwd_15,
                                       softcap_bwd_16, softcap_bwd_17};
_Static_assert(sizeof softcap_fns / sizeof softcap_fns[0] >= N_CASES &&
                   sizeof softcap_bwd_fns / sizeof softcap_bwd_fns[0] >= N_BWD_CASES,
               "add SOFTCAP_FN rows for new cases");

/* "gpu_softcap_hopper_fwd/NN-..." (hopper_bwd 0) or "gpu_softcap_hopper_bwd/NN-..." (1) */
static void name_case(char *out, size_t n, int hopper_bwd, int i, const softcap_case_t *c) {
  char tail[32] = "";
  if (c->head_dim_v && c->head_dim_v != c->head_dim) snprintf(tail, sizeof tail, "v%d", c->head_dim_v);
  snprintf(out, n, "gpu_softcap_hopper_%s/%02d-d%d%s-cap%g%s%s%s", hopper_bwd ? "bwd" : "fwd", i,
           c->head_dim, tail, (double)c->softcap, c->no_lse ? "-nolse" : "",
           c->bwd && !hopper_bwd ? "-bwd" : "", c->det ? "-det" : "");
}

void register_gpu_softcap_tests(void) {
  static char names[N_CASES][64], bwd_names[N_BWD_CASES][64];
  for (int i = 0; i < N_CASES; ++i) {
    name_case(names[i], sizeof names[i], 0, i, &cases[i]);
    t_register(names[i], softcap_fns[i]);
  }
  for (int i = 0; i < N_BWD_CASES; ++i) {
    name_case(bwd_names[i], sizeof bwd_names[i], 1, i, &bwd_cases[i]);
    t_register(bwd_names[i], softcap_bwd_fns[i]);
  }
}
