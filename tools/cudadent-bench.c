/*
 * cudadent-bench - run one attention shape (or the default suite) through the public API: check it
 * against the double-precision CPU reference and time it.
 *
 *   cudadent-bench [--batch B] [--seqlen-q SQ] [--seqlen-k SK] [--heads H] [--heads-kv HKV]
 *                  [--head-dim D] [--dtype bf16|fp16] [--causal] [--window L,R] [--layout
 *                  contiguous|padded|heads-first] [--bwd] [--deterministic] [--check]
 *                  [--iters N] [--graph N] [--seed S] [--outliers] [--no-lse]
 *   cudadent-bench SHAPE --check-seeds N   the forward checked on seeds S.. S+N-1 (S = --seed,
 *                                        default 1): the distribution of O's error ratio to the
 *                                        low-precision reference's, and the failures
 *   cudadent-bench --suite default      the small shapes and a few FA3-suite shapes, each checked
 *                                        and timed, forward and backward
 *
 * Timing: CUDA events around each call after 3 warm-up calls, L2 flushed (256 MiB memset) before
 * each, median of --iters (default 30); --graph N also reports GPU time per call of a CUDA graph of
 * N calls. TFLOP/s by the FlashAttention convention (4 B Hq Sq Sk D forward, halved for causal,
 * backward 2.5x). Exit status: 0 ok, 1 check failed or CUDA failure, 2 bad arguments or input
 * refused by the API, 3 no CUDA device.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cudadent.h"
#include "problem.h"

typedef struct options {
  problem_desc_t d;
  int bwd, check, iters, graph_calls, suite;
  int check_seeds; /* --check-seeds N: the forward checked on N seeds, the error ratios summed up */
} options_t;

static void usage(FILE *f) {
  fprintf(f,
          "usage: cudadent-bench [--batch B] [--seqlen-q SQ] [--seqlen-k SK] [--heads H]\n"
          "                      [--heads-kv HKV] [--head-dim D] [--dtype bf16|fp16] [--causal]\n"
          "                      [--window L,R] [--layout contiguous|padded|heads-first] [--bwd]\n"
          "                      [--deterministic] [--no-lse] [--check] [--iters N] [--graph N]\n"
          "                      [--seed S] [--outliers] [--check-seeds N]\n"
          "       cudadent-bench --suite default\n");
}

static int parse_int(const char *flag, const char *text, int min, int *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0' || v < min || v > INT_MAX) {
    fprintf(stderr, "cudadent-bench: %s expects an integer >= %d, got '%s'\n", flag, min, text);
    return -1;
  }
  *out = (int)v;
  return 0;
}

static int parse_args(int argc, char **argv, options_t *o) {
  memset(o, 0, sizeof *o);
  problem_desc_t *d = &o->d;
  d->batch = 4; d->seqlen_q = d->seqlen_k = 1024; d->heads_q = 16; d->heads_kv = 0;
  d->head_dim = 128; d->dtype = CUDADENT_DTYPE_BF16; d->window_left = d->window_right = -1;
  o->iters = 30;
  int seqlen_k_given = 0;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define TAKES_VALUE                                                             \
  do {                                                                          \
    if (!val) {                                                                 \
      fprintf(stderr, "cudadent-bench: %s needs a value\n", a);                 \
      return -1;                                                                \
    }                                                                           \
    ++i;                                                                        \
  } while (0)
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(0); }
    else if (!strcmp(a, "--batch")) { TAKES_VALUE; if (parse_int(a, val, -1000000, &d->batch)) return -1; }
    else if (!strcmp(a, "--seqlen-q")) { TAKES_VALUE; if (parse_int(a, val, -1000000, &d->seqlen_q)) return -1; }
    else if (!strcmp(a, "--seqlen-k")) { TAKES_VALUE; seqlen_k_given = 1; if (parse_int(a, val, -1000000, &d->seqlen_k)) return -1; }
    else if (!strcmp(a, "--seqlen")) { TAKES_VALUE; if (parse_int(a, val, -1000000, &d->seqlen_q)) return -1; }
    else if (!strcmp(a, "--heads")) { TAKES_VALUE; if (parse_int(a, val, -1000000, &d->heads_q)) return -1; }
    else if (!strcmp(a, "--heads-kv")) { TAKES_VALUE; if (parse_int(a, val, -1000000, &d->heads_kv)) return -1; }
    else if (!strcmp(a, "--head-dim")) { TAKES_VALUE; if (parse_int(a, val, -1000000, &d->head_dim)) return -1; }
    else if (!strcmp(a, "--iters")) { TAKES_VALUE; if (parse_int(a, val, 1, &o->iters)) return -1; }
    else if (!strcmp(a, "--graph")) { TAKES_VALUE; if (parse_int(a, val, 1, &o->graph_calls)) return -1; }
    else if (!strcmp(a, "--seed")) { TAKES_VALUE; d->seed = strtoull(val, NULL, 10); }
    else if (!strcmp(a, "--dtype")) {
      TAKES_VALUE;
      if (!strcmp(val, "bf16")) d->dtype = CUDADENT_DTYPE_BF16;
      else if (!strcmp(val, "fp16")) d->dtype = CUDADENT_DTYPE_FP16;
      else if (!strcmp(val, "fp8")) d->dtype = CUDADENT_DTYPE_FP8_E4M3;
      else { fprintf(stderr, "cudadent-bench: --dtype expects bf16 or fp16, got '%s'\n", val); return -1; }
    } else if (!strcmp(a, "--window")) {
      TAKES_VALUE;
      if (sscanf(val, "%d,%d", &d->window_left, &d->window_right) != 2) {
        fprintf(stderr, "cudadent-bench: --window expects L,R (e.g. 256,0; -1 unbounded), got '%s'\n", val);
        return -1;
      }
    } else if (!strcmp(a, "--layout")) {
      TAKES_VALUE;
      if (!strcmp(val, "contiguous")) d->layout = LAYOUT_CONTIGUOUS;
      else if (!strcmp(val, "padded")) d->layout = LAYOUT_PADDED;
      else if (!strcmp(val, "heads-first")) d->layout = LAYOUT_HEADS_FIRST;
      else { fprintf(stderr, "cudadent-bench: unknown --layout '%s'\n", val); return -1; }
    } else if (!strcmp(a, "--suite")) {
      TAKES_VALUE;
      if (strcmp(val, "default") != 0) { fprintf(stderr, "cudadent-bench: unknown suite '%s'\n", val); return -1; }
      o->suite = 1;
    }
    else if (!strcmp(a, "--causal")) d->causal = 1;
    else if (!strcmp(a, "--bwd")) o->bwd = 1;
    else if (!strcmp(a, "--deterministic")) d->deterministic = 1;
    else if (!strcmp(a, "--no-lse")) d->no_lse = 1; /* forward with lse = NULL */
    else if (!strcmp(a, "--outliers")) d->outliers = 1; /* inputs: rare large elements */
    else if (!strcmp(a, "--check")) o->check = 1;
    else if (!strcmp(a, "--check-seeds")) {
      TAKES_VALUE;
      if (parse_int(a, val, 1, &o->check_seeds) != 0) return -1;
    }
    else { fprintf(stderr, "cudadent-bench: unknown argument '%s'\n", a); usage(stderr); return -1; }
#undef TAKES_VALUE
  }
  if (!seqlen_k_given) d->seqlen_k = d->seqlen_q;
  if (d->heads_kv == 0) d->heads_kv = d->heads_q;
  if (o->check_seeds && (o->bwd || o->suite)) {
    fprintf(stderr, "cudadent-bench: --check-seeds checks the forward of one shape (no --bwd, --suite)\n");
    return -1;
  }
  if (d->no_lse && o->bwd) {
    fprintf(stderr, "cudadent-bench: --no-lse is forward-only (the backward reads the LSE)\n");
    return -1;
  }
  return 0;
}

/* Validate the shape through the API itself (device-free checks) with stand-in aligned pointers,
 * so that bad input gets the library's own status and message, GPU or not. */
static int validate(const options_t *o) {
  const problem_desc_t *d = &o->d;
  problem_t fake;
  memset(&fake, 0, sizeof fake);
  fake.d = *d;
  if (fake.d.softmax_scale == 0.0f && d->head_dim > 0) fake.d.softmax_scale = 1.0f / sqrtf((float)d->head_dim);
  if (fake.d.softmax_scale == 0.0f) fake.d.softmax_scale = 1.0f;
  problem_tensor_t *ts[] = {&fake.q, &fake.k, &fake.v, &fake.o, &fake.dout, &fake.dq, &fake.dk, &fake.dv};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) {
    const int is_q = i == 0 || i == 3 || i == 4 || i == 5;
    const int64_t h = is_q ? d->heads_q : d->heads_kv, s = is_q ? d->seqlen_q : d->seqlen_k;
    ts[i]->t.data = (void *)(uintptr_t)(0x100000000ull * (i + 1));
    ts[i]->t.stride_dim = 1;
    ts[i]->t.stride_head = d->head_dim;
    ts[i]->t.stride_seq = h * d->head_dim;
    ts[i]->t.stride_batch = s * h * d->head_dim;
  }
  fake.lse = (float *)(uintptr_t)0x1000000000ull;
  size_t bytes = 0;
  cudadent_status_t st;
  if (o->bwd) {
    cudadent_attn_bwd_params_t p;
    problem_bwd_params(&fake, &p);
    st = cudadent_attn_bwd_workspace_size(&p, &bytes);
  } else {
    cudadent_attn_fwd_params_t p;
    problem_fwd_params(&fake, &p);
    st = cudadent_attn_fwd_workspace_size(&p, &bytes);
  }
  if (st != CUDADENT_STATUS_SUCCESS) {
    fprintf(stderr, "cudadent-bench: input refused: %s: %s\n", cudadent_get_error_string(st),
            cudadent_get_last_error_message());
    return -1;
  }
  return 0;
}

/* Runs one shape: (check), time, print a row. Returns 0 ok, 1 failure. */
static int run_shape(const options_t *o, int print_header) {
  char desc[160], err[256] = "";
  problem_describe(&o->d, desc, sizeof desc);
  if (print_header)
    printf("%-58s %-4s %-6s %10s %9s %12s\n", "shape", "dir", "check", "ms", "TFLOP/s", "graph us/call");
  problem_t pr;
  if (problem_create(&pr, &o->d, err, sizeof err) != 0) {
    printf("%-58s setup failed: %s\n", desc, err);
    problem_destroy(&pr);
    return 1;
  }
  int failed = 0;
  const char *check = "-";
  cudadent_status_t st = problem_run_fwd(&pr, NULL);
  if (st == CUDADENT_STATUS_SUCCESS && o->bwd) st = problem_run_bwd(&pr, NULL);
  if (st != CUDADENT_STATUS_SUCCESS) {
    printf("%-58s %s: %s\n", desc, cudadent_get_error_string(st), cudadent_get_last_error_message());
    problem_destroy(&pr);
    return 1;
  }
  check_result_t r;
  if (o->check) {
    if (problem_check(&pr, o->bwd, &r) != 0) {
      printf("%-58s CUDA failure during check: %s\n", desc, cudaGetErrorString(cudaGetLastError()));
      problem_destroy(&pr);
      return 1;
    }
    check = r.pass ? "pass" : "FAIL";
    failed |= !r.pass;
  }
  double ms = problem_time_ms(&pr, o->bwd, o->iters, err, sizeof err);
  double graph_us = o->graph_calls ? problem_graph_us(&pr, o->bwd, o->graph_calls, err, sizeof err) : 0.0;
  if (ms < 0 || graph_us < 0) {
    printf("%-58s timing failed: %s\n", desc, err);
    problem_destroy(&pr);
    return 1;
  }
  const double tflops = problem_flops(&pr.d, o->bwd) / (ms * 1e-3) / 1e12;
  char graph[32] = "-";
  if (o->graph_calls) snprintf(graph, sizeof graph, "%.2f", graph_us);
  printf("%-58s %-4s %-6s %10.4f %9.1f %12s\n", desc, o->bwd ? "bwd" : "fwd", check, ms, tflops, graph);
  if (o->check) problem_print_check(&r, o->bwd);
  fflush(stdout);
  problem_destroy(&pr);
  return failed;
}

/* --check-seeds N: the forward of one shape checked on seeds S, S+1, .. (S = --seed, default 1),
 * each with fresh inputs (problem_check_seeds). Returns 0 when all pass. */
static int run_check_seeds(const options_t *o) {
  char desc[160], err[256] = "";
  problem_describe(&o->d, desc, sizeof desc);
  seed_stats_t st;
  if (problem_check_seeds(&o->d, o->check_seeds, &st, err, sizeof err) != 0) {
    printf("%s: %s\n", desc, err);
    return 1;
  }
  printf("%s seeds %d: o err/lowp mean %.3f p50 %.3f p90 %.3f p99 %.3f max %.3f, >1.5: %d, "
         "fails %d; lse max err %.2e\n",
         desc, st.runs, st.mean, st.p50, st.p90, st.p99, st.max, st.over_1_5, st.fails,
         st.lse_max_err);
  return st.fails != 0;
}

static int run_default_suite(void) {
  /* small shapes of DESIGN.md (fp16, graph timing) and FA3-suite points (bf16, 16k tokens) */
  static const struct { int b, h, s, d, causal, small; } shapes[] = {
      {1, 1, 128, 64, 0, 1},   {1, 8, 512, 64, 0, 1},   {8, 8, 128, 64, 1, 1},
      {16, 8, 512, 64, 1, 1},  {8, 32, 2048, 64, 0, 0}, {8, 16, 2048, 128, 1, 0},
      {1, 16, 16384, 128, 0, 0},
  };
  int failed = 0, first = 1;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i)
    for (int bwd = 0; bwd < 2; ++bwd) {
      options_t o;
      memset(&o, 0, sizeof o);
      problem_desc_t *d = &o.d;
      d->batch = shapes[i].b; d->heads_q = d->heads_kv = shapes[i].h;
      d->seqlen_q = d->seqlen_k = shapes[i].s; d->head_dim = shapes[i].d;
      d->causal = shapes[i].causal; d->window_left = d->window_right = -1;
      d->dtype = shapes[i].small ? CUDADENT_DTYPE_FP16 : CUDADENT_DTYPE_BF16;
      o.bwd = bwd;
      o.check = shapes[i].s <= 2048; /* the CPU reference of 16k is minutes */
      o.iters = 30;
      o.graph_calls = shapes[i].small ? 100 : 0;
      failed |= run_shape(&o, first);
      first = 0;
    }
  printf("%s\n", failed ? "default suite: FAILED" : "default suite: all checks passed");
  return failed;
}

int main(int argc, char **argv) {
  options_t o;
  if (parse_args(argc, argv, &o) != 0) return 2;
  if (!o.suite && validate(&o) != 0) return 2;
  char reason[256];
  if (!problem_gpu_present(reason, sizeof reason)) {
    fprintf(stderr, "cudadent-bench: %s: nothing to run or time on this machine\n", reason);
    return 3;
  }
  struct cudaDeviceProp prop;
  int dev = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&prop, dev);
  printf("cudadent %d on %s (cc %d.%d, %d SMs)\n", cudadent_get_version(), prop.name, prop.major,
         prop.minor, prop.multiProcessorCount);
  if (o.suite) return run_default_suite() ? 1 : 0;
  if (o.check_seeds) return run_check_seeds(&o) ? 1 : 0;
  return run_shape(&o, 1) ? 1 : 0;
}
