/*
 * cudadent-bench - run one attention shape (or the default suite) through the public API: check it
 * against the double-precision CPU reference and time it.
 *
 *   cudadent-bench [--batch B] [--seqlen-q SQ] [--seqlen-k SK] [--heads H] [--heads-kv HKV]
 *                  [--head-dim D] [--head-dim-v DV] [--softcap C] [--dtype bf16|fp16] [--causal]
 *                  [--window L,R] [--layout contiguous|padded|heads-first|gapped] [--bwd]
 *                  [--deterministic] [--check] [--varlen Q:K,Q:K,...]
 *                  [--iters N] [--graph N] [--seed S] [--outliers] [--no-lse]
 *   cudadent-bench SHAPE --check-seeds N   the forward checked on seeds S.. S+N-1 (S = --seed,
 *                                        default 1): the distribution of O's error ratio to the
 *                                        low-precision reference's, and the failures
 *   cudadent-bench --suite default      the small shapes and a few FA3-suite shapes, each checked
 *                                        and timed, forward and backward
 *
 * Timing: CUDA events around each call after 3 warm-up calls, L2 flushed (256 MiB memset) before
 * each, median of --iters (default 30); --graph N also reports GPU time per call of a CUDA graph of
 * N calls. TFLOP/s by the FlashAttention convention (4 B Hq Sq Sk D forward, 2 B Hq Sq Sk (D + Dv)
 * with --head-dim-v; halved for causal, backward 2.5x). Exit status: 0 ok, 1 check failed or CUDA
 * failure, 2 bad arguments or input refused by the API, 3 no usable GPU (no driver, no device, or
 * a driver too old). --help says what each flag does and its default.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
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
"usage: cudadent-bench [shape] [run options]   one shape through the public API: checked\n"
"                                              (--check) and timed\n"
"       cudadent-bench --suite default         the small shapes and a few FA3-suite shapes,\n"
"                                              each checked and timed, forward and backward\n"
"       cudadent-bench [shape] --check-seeds N the forward checked on N seeds\n"
"shape (sizes past the library's limits are refused with its own message):\n"
"  --batch B           batch size (default 4; at most %d)\n"
"  --seqlen-q SQ       query length (default 1024; at most %d); --seqlen SQ is the same\n"
"  --seqlen-k SK       key length (default: SQ)\n"
"  --heads H           query heads (default 16; at most %d)\n"
"  --heads-kv HKV      key/value heads, a divisor of H: GQA, or MQA with 1 (default: H)\n"
"  --head-dim D        head dim of Q and K (default 128; which ones run: the library's\n"
"                      cudadent_attn_*_supported_head_dims)\n"
"  --head-dim-v DV     head dim of V and O (default: D)\n"
"  --softcap C         logit soft-capping, scores = C tanh(scores / C) (default 0: none)\n"
"  --dtype bf16|fp16   element type (default bf16)\n"
"  --causal            causal mask (aligned to the bottom-right corner when SQ != SK)\n"
"  --window L,R        sliding window: row i sees keys i+SK-SQ-L .. i+SK-SQ+R; -1: unbounded\n"
"                      side (default -1,-1: none)\n"
"  --layout L          memory layout of every tensor: contiguous (default), padded (padded\n"
"                      head and batch strides), heads-first (a transposed view) or gapped\n"
"                      (each head row followed by a gap of large values up to the kernel\n"
"                      width: a read past the head dim shows)\n"
"  --no-lse            forward without the log-sum-exp (inference); not with --bwd\n"
"  --deterministic     bit-identical backward (slower)\n"
"  --varlen Q:K,...    a ragged batch (cu_seqlens): one sequence of Q queries and K keys per\n"
"                      pair, packed; replaces --batch, --seqlen-q and --seqlen-k (the longest\n"
"                      sequence gives max_seqlen); the check is per sequence, TFLOP/s count\n"
"                      the pairs within sequences\n"
"run options:\n"
"  --bwd               the forward, then the backward (the backward is timed)\n"
"  --check             check against the double-precision CPU reference\n"
"  --iters N           timed calls, median reported (default 30)\n"
"  --graph N           also the GPU time per call of a CUDA graph of N calls (default: off)\n"
"  --seed S            seed of the random inputs, 1 to 2^64-1 (default: from the clock)\n"
"  --outliers          inputs with rare large elements (about 1 in 500 times 8..16)\n"
"  --check-seeds N     the forward checked on seeds S .. S+N-1 (S: --seed, default 1): O's\n"
"                      error ratio to the low-precision reference, and the failures\n"
"  -h, --help          this help\n"
"exit status: 0 ok, 1 check failed or CUDA failure, 2 bad arguments or input refused by the\n"
"library, 3 no usable GPU\n",
          CUDADENT_MAX_BATCH, CUDADENT_MAX_SEQLEN, CUDADENT_MAX_HEADS);
}

/* text as a whole decimal integer (optional sign, no spaces, nothing after), in long long. */
static int parse_ll(const char *text, long long *out) {
  char *end = NULL;
  if (text[0] == '\0' || isspace((unsigned char)text[0])) return -1;
  errno = 0;
  const long long v = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return -1;
  *out = v;
  return 0;
}

/* A size of the shape: any int goes to the library, which refuses negative sizes and sizes past
 * its limits with its own message; what is not an int at all is refused here, naming what the
 * library takes (range). */
static int parse_size(const char *flag, const char *text, const char *range, int *out) {
  long long v;
  if (parse_ll(text, &v) != 0 || v < INT_MIN || v > INT_MAX) {
    fprintf(stderr, "cudadent-bench: %s expects %s, got '%s'\n", flag, range, text);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* A count of the CLI itself (--iters, --graph, --check-seeds): 1 to INT_MAX. */
static int parse_count(const char *flag, const char *text, int *out) {
  long long v;
  if (parse_ll(text, &v) != 0 || v < 1 || v > INT_MAX) {
    fprintf(stderr, "cudadent-bench: %s expects an integer from 1 to %d, got '%s'\n", flag,
            INT_MAX, text);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* --window L,R: two ints; values below -1 go to the library (its BAD_WINDOW message). */
static int parse_window(const char *text, int *left, int *right) {
  char buf[64];
  const char *comma = strchr(text, ',');
  long long l = 0, r = 0;
  int ok = comma != NULL && (size_t)(comma - text) < sizeof buf;
  if (ok) {
    memcpy(buf, text, (size_t)(comma - text));
    buf[comma - text] = '\0';
    ok = parse_ll(buf, &l) == 0 && parse_ll(comma + 1, &r) == 0 && l >= INT_MIN &&
         l <= INT_MAX && r >= INT_MIN && r <= INT_MAX;
  }
  if (!ok) {
    fprintf(stderr,
            "cudadent-bench: --window expects L,R: two integers from -1 (unbounded) to %d, e.g. "
            "256,0; got '%s'\n",
            INT_MAX, text);
    return -1;
  }
  *left = (int)l;
  *right = (int)r;
  return 0;
}

/* --varlen Q:K,Q:K,...: at most MAX_VARLEN_SEQS pairs of lengths from 0 to 2^30 (the library
 * refuses totals past its limits). The arrays live as long as the program. */
enum { MAX_VARLEN_SEQS = 65535 };
static int parse_varlen(const char *text, problem_desc_t *d) {
  static int lens_q[MAX_VARLEN_SEQS], lens_k[MAX_VARLEN_SEQS];
  int n = 0;
  const char *p = text;
  while (*p != '\0' && n < MAX_VARLEN_SEQS) {
    char *end = NULL;
    errno = 0;
    const long q = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
    if (q < 0 || errno != 0 || *end != ':' || q > CUDADENT_MAX_SEQLEN) break;
    p = end + 1;
    const long k = isdigit((unsigned char)*p) ? strtol(p, &end, 10) : -1;
    if (k < 0 || errno != 0 || (*end != ',' && *end != '\0') || k > CUDADENT_MAX_SEQLEN) break;
    lens_q[n] = (int)q;
    lens_k[n] = (int)k;
    ++n;
    p = *end == ',' ? end + 1 : end;
    if (*end == '\0') {
      d->varlen = n;
      d->varlen_q = lens_q;
      d->varlen_k = lens_k;
      return 0;
    }
  }
  fprintf(stderr,
          "cudadent-bench: --varlen expects Q:K pairs separated by commas (lengths from 0 to %d, "
          "at most %d sequences), e.g. 0:5,17:17,300:400; got '%s'\n",
          CUDADENT_MAX_SEQLEN, MAX_VARLEN_SEQS, text);
  return -1;
}

/* --seed S: 1 to 2^64 - 1, digits only. */
static int parse_seed(const char *text, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  const unsigned long long v = isdigit((unsigned char)text[0]) ? strtoull(text, &end, 10) : 0;
  if (end == NULL || errno != 0 || *end != '\0' || v == 0) {
    fprintf(stderr,
            "cudadent-bench: --seed expects an integer from 1 to %llu (leave it out for a seed "
            "from the clock), got '%s'\n",
            (unsigned long long)UINT64_MAX, text);
    return -1;
  }
  *out = (uint64_t)v;
  return 0;
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define SEQLEN_RANGE "an integer from 0 to 1073741824 (2^30)"
_Static_assert(CUDADENT_MAX_SEQLEN == 1073741824, "SEQLEN_RANGE names the limit");

static int parse_args(int argc, char **argv, options_t *o) {
  memset(o, 0, sizeof *o);
  problem_desc_t *d = &o->d;
  d->batch = 4; d->seqlen_q = d->seqlen_k = 1024; d->heads_q = 16; d->heads_kv = 0;
  d->head_dim = 128; d->dtype = CUDADENT_DTYPE_BF16; d->window_left = d->window_right = -1;
  o->iters = 30;
  int seqlen_k_given = 0, heads_kv_given = 0;
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
#define SIZE_FLAG(flag, field, range)                                             \
  else if (!strcmp(a, flag)) {                                                   \
    TAKES_VALUE;                                                                 \
    if (parse_size(a, val, range, &(field)) != 0) return -1;                     \
  }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(0); }
    SIZE_FLAG("--batch", d->batch, "an integer from 0 to " STR(CUDADENT_MAX_BATCH))
    SIZE_FLAG("--seqlen-q", d->seqlen_q, SEQLEN_RANGE)
    SIZE_FLAG("--seqlen", d->seqlen_q, SEQLEN_RANGE)
    SIZE_FLAG("--heads", d->heads_q, "an integer from 1 to " STR(CUDADENT_MAX_HEADS))
    SIZE_FLAG("--head-dim", d->head_dim, "an integer (a multiple of 8 up to 256)")
    SIZE_FLAG("--head-dim-v", d->head_dim_v, "an integer (a multiple of 8 up to 256)")
    else if (!strcmp(a, "--softcap")) {
      TAKES_VALUE;
      char *end = NULL;
      errno = 0;
      const double c = strtod(val, &end);
      if (val[0] == '\0' || isspace((unsigned char)val[0]) || errno != 0 || *end != '\0') {
        fprintf(stderr, "cudadent-bench: --softcap expects a number (0: none), got '%s'\n", val);
        return -1;
      }
      d->softcap = (float)c; /* negative, inf, nan: the library's BAD_SCALE message */
    }
    else if (!strcmp(a, "--seqlen-k")) {
      TAKES_VALUE;
      seqlen_k_given = 1;
      if (parse_size(a, val, SEQLEN_RANGE, &d->seqlen_k) != 0) return -1;
    } else if (!strcmp(a, "--heads-kv")) {
      TAKES_VALUE;
      heads_kv_given = 1;
      if (parse_size(a, val, "an integer from 1 to " STR(CUDADENT_MAX_HEADS) ", a divisor of --heads",
                     &d->heads_kv) != 0)
        return -1;
    }
    else if (!strcmp(a, "--iters")) { TAKES_VALUE; if (parse_count(a, val, &o->iters)) return -1; }
    else if (!strcmp(a, "--graph")) { TAKES_VALUE; if (parse_count(a, val, &o->graph_calls)) return -1; }
    else if (!strcmp(a, "--check-seeds")) { TAKES_VALUE; if (parse_count(a, val, &o->check_seeds)) return -1; }
    else if (!strcmp(a, "--seed")) { TAKES_VALUE; if (parse_seed(val, &d->seed)) return -1; }
    else if (!strcmp(a, "--dtype")) {
      TAKES_VALUE;
      if (!strcmp(val, "bf16")) d->dtype = CUDADENT_DTYPE_BF16;
      else if (!strcmp(val, "fp16")) d->dtype = CUDADENT_DTYPE_FP16;
      else if (!strcmp(val, "fp8")) d->dtype = CUDADENT_DTYPE_FP8_E4M3;
      else { fprintf(stderr, "cudadent-bench: --dtype expects bf16 or fp16, got '%s'\n", val); return -1; }
    } else if (!strcmp(a, "--window")) {
      TAKES_VALUE;
      if (parse_window(val, &d->window_left, &d->window_right) != 0) return -1;
    } else if (!strcmp(a, "--layout")) {
      TAKES_VALUE;
      if (!strcmp(val, "contiguous")) d->layout = LAYOUT_CONTIGUOUS;
      else if (!strcmp(val, "padded")) d->layout = LAYOUT_PADDED;
      else if (!strcmp(val, "heads-first")) d->layout = LAYOUT_HEADS_FIRST;
      else if (!strcmp(val, "gapped")) d->layout = LAYOUT_GAPPED;
      else { fprintf(stderr, "cudadent-bench: unknown --layout '%s' (contiguous, padded, heads-first, gapped)\n", val); return -1; }
    } else if (!strcmp(a, "--varlen")) {
      TAKES_VALUE;
      if (parse_varlen(val, d) != 0) return -1;
    } else if (!strcmp(a, "--suite")) {
      TAKES_VALUE;
      if (strcmp(val, "default") != 0) { fprintf(stderr, "cudadent-bench: unknown suite '%s' (default)\n", val); return -1; }
      o->suite = 1;
    }
    else if (!strcmp(a, "--causal")) d->causal = 1;
    else if (!strcmp(a, "--bwd")) o->bwd = 1;
    else if (!strcmp(a, "--deterministic")) d->deterministic = 1;
    else if (!strcmp(a, "--no-lse")) d->no_lse = 1; /* forward with lse = NULL */
    else if (!strcmp(a, "--outliers")) d->outliers = 1; /* inputs: rare large elements */
    else if (!strcmp(a, "--check")) o->check = 1;
    else { fprintf(stderr, "cudadent-bench: unknown argument '%s' (--help lists them)\n", a); return -1; }
#undef SIZE_FLAG
#undef TAKES_VALUE
  }
  if (!seqlen_k_given) d->seqlen_k = d->seqlen_q;
  if (!heads_kv_given) d->heads_kv = d->heads_q;
  if (o->check_seeds && (o->bwd || o->suite)) {
    fprintf(stderr, "cudadent-bench: --check-seeds checks the forward of one shape (no --bwd, --suite)\n");
    return -1;
  }
  if (d->varlen > 0) { /* the call's batch and max_seqlen from the sequences (problem_create too) */
    d->batch = d->varlen;
    d->seqlen_q = d->seqlen_k = 0;
    for (int b = 0; b < d->varlen; ++b) {
      if (d->varlen_q[b] > d->seqlen_q) d->seqlen_q = d->varlen_q[b];
      if (d->varlen_k[b] > d->seqlen_k) d->seqlen_k = d->varlen_k[b];
    }
  }
  if (d->varlen > 0 && (o->check_seeds || o->suite)) {
    fprintf(stderr, "cudadent-bench: --varlen runs one ragged batch (no --check-seeds, --suite)\n");
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
  if (d->varlen > 0) { /* packed (1, total, heads, dim) tensors, stand-in arrays */
    int64_t tq = 0, tk = 0;
    for (int b = 0; b < d->varlen; ++b) {
      tq += d->varlen_q[b];
      tk += d->varlen_k[b];
    }
    fake.total_q = (int)(tq < INT_MAX ? tq : INT_MAX); /* past 2^30: the library's message */
    fake.total_k = (int)(tk < INT_MAX ? tk : INT_MAX);
    fake.dev_cu_q = (int32_t *)(uintptr_t)0x2000000000ull;
    fake.dev_cu_k = (int32_t *)(uintptr_t)0x3000000000ull;
  }
  problem_tensor_t *ts[] = {&fake.q, &fake.k, &fake.v, &fake.o, &fake.dout, &fake.dq, &fake.dk, &fake.dv};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) {
    const int is_q = i == 0 || i == 3 || i == 4 || i == 5;
    const int is_v = i == 2 || i == 3 || i == 4 || i == 7; /* v, o, dout, dv: head_dim_v */
    const int64_t h = is_q ? d->heads_q : d->heads_kv;
    const int64_t s = d->varlen > 0 ? (is_q ? fake.total_q : fake.total_k)
                                    : (is_q ? d->seqlen_q : d->seqlen_k);
    const int64_t dim = is_v && d->head_dim_v > 0 ? d->head_dim_v : d->head_dim;
    ts[i]->t.data = (void *)(uintptr_t)(0x100000000ull * (i + 1));
    ts[i]->t.stride_dim = 1;
    ts[i]->t.stride_head = dim;
    ts[i]->t.stride_seq = h * dim;
    ts[i]->t.stride_batch = s * h * dim;
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
  if (st == CUDADENT_STATUS_SUCCESS && o->bwd && problem_gap_o_for_bwd(&pr) != 0) {
    printf("%-58s CUDA failure filling O's gaps: %s\n", desc, cudaGetErrorString(cudaGetLastError()));
    problem_destroy(&pr);
    return 1;
  }
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
  /* small shapes of docs/DESIGN.md (fp16, graph timing) and FA3-suite points (bf16, 16k tokens) */
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
