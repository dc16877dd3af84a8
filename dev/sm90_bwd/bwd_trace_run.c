/*
 * bwd_trace_run.c - experiment 1 of docs/kernels/sm90_bwd_next.md (docs/kernels/sm90_bwd_trace.md):
 * the sm90 backward's block-phase trace (src/kernels/sm90/bwd_trace.cuh) of one dense shape,
 * written to a file for dev/sm90_bwd/trace_phases.py. A dev program: it links a library built with
 * -DCUDADENT_DEV -DSM90_BWD_TRACE=1 and calls that library's dev entry point
 * cudadent_dev_sm90_bwd_trace_set (src/kernels/dev.h) directly; the production CLI knows nothing
 * of the trace.
 *
 * The run is the CLI's backward run (tools/problem.h, the harness of cudadent-bench): random
 * inputs (--seed), the forward through the public API, then the backward with the trace on from
 * its first call (so --check checks a traced call) to the last of the --iters timed calls
 * (problem_time_ms: 3 warm-up calls, then each timed call after an L2 flush); the buffer then holds
 * the last call's records and goes to FILE as it is (the file header that the entry point wrote,
 * the CTA headers, the block records). Prints how many CTAs were stamped (none: the calls did not
 * run the sm90 backward's main kernel, narrow or wide row (bwd_wide_kernel.cuh: head dims over
 * 128, e.g. --head-dim 192 --head-dim-v 128); run with CUDADENT_KERNEL_BWD=sm90), then the CLI's row
 * (shape, bwd, check, median ms of the traced calls, TFLOP/s; the last line without --check) and
 * with --check the check's figures after it, as cudadent-bench prints them.
 *
 * Build (dev/sm90_bwd/gpu_run.sh bwdtrace does it, DIR: a dev library's folder, libcudadent.so):
 *   nvcc -O2 -cudart shared -Iinclude -Isrc -Itools -Isrc/reference dev/sm90_bwd/bwd_trace_run.c \
 *     tools/problem.c tools/problem_check.c tools/problem_timing.c src/reference/reference.c \
 *     src/reference/convert.c src/reference/varlen.c -LDIR -lcudadent -Xlinker -rpath=DIR \
 *     -lpthread -lm -o DIR/bwd_trace_run
 * Run:
 *   CUDADENT_KERNEL_BWD=sm90 DIR/bwd_trace_run --trace FILE [--batch B] [--heads H]
 *     [--heads-kv HKV] [--seqlen-q SQ] [--seqlen-k SK] [--head-dim D] [--head-dim-v DV] [--dtype bf16|fp16]
 *     [--causal] [--window L,R] [--deterministic] [--check] [--iters N] [--seed S]
 *   python3 dev/sm90_bwd/trace_phases.py FILE
 * Defaults as cudadent-bench's: batch 4, seqlen 1024 (seqlen-k: seqlen-q), heads 16 (heads-kv:
 * heads), head-dim 128 (head-dim-v: head-dim), bf16, no mask, iters 30, seed from the clock. Exit
 * status: 0 ok, 1 check failed, CUDA failure, nothing stamped or FILE not written, 2 bad arguments,
 * a build without the trace or a shape it does not cover (varlen), 3 no usable GPU.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "cudadent.h"
#include "kernels/dev.h"
#include "problem.h"

/* The dump's layout (bwd_trace.cuh, CD_SM90_BWD_TRACE_*): u64 words, a file header of TRACE_HDR
 * words (word TRACE_H_CTAS: the CTAs), then a header of TRACE_HDR words a CTA (word
 * TRACE_C_START: clock64 at the CTA's start, 0 where the CTA never ran traced). */
enum { TRACE_HDR = 16, TRACE_H_CTAS = 2, TRACE_C_START = 1 };

static const char *prog = "bwd_trace_run";

static void usage(FILE *f) {
  fprintf(f,
"usage: %s --trace FILE [--batch B] [--heads H] [--heads-kv HKV] [--seqlen-q SQ]\n"
"         [--seqlen-k SK] [--head-dim D] [--head-dim-v DV] [--dtype bf16|fp16] [--causal]\n"
"         [--window L,R]\n"
"         [--deterministic] [--check] [--iters N] [--seed S]\n"
"The sm90 backward of one dense shape with its block-phase trace on (a library built with\n"
"-DCUDADENT_DEV -DSM90_BWD_TRACE=1; run with CUDADENT_KERNEL_BWD=sm90): the last of the N timed\n"
"calls' records go to FILE, for dev/sm90_bwd/trace_phases.py. Defaults: batch 4, seqlen 1024,\n"
"heads 16, head-dim 128 (head-dim-v: head-dim), bf16, iters 30, seed from the clock.\n",
          prog);
}

/* An integer from lo to hi, the whole text. 0 ok, else -1 with a message naming the flag. */
static int parse_int(const char *flag, const char *text, long long lo, long long hi, int *out) {
  char *end = NULL;
  errno = 0;
  const long long v = strtoll(text, &end, 10);
  if (text[0] == '\0' || errno != 0 || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "%s: %s expects an integer from %lld to %lld, got '%s'\n", prog, flag, lo, hi,
            text);
    return -1;
  }
  *out = (int)v;
  return 0;
}

typedef struct options {
  problem_desc_t d;
  int check, iters;
  const char *trace;
} options_t;

static int parse_args(int argc, char **argv, options_t *o) {
  memset(o, 0, sizeof *o);
  problem_desc_t *d = &o->d;
  d->batch = 4; d->seqlen_q = 1024; d->seqlen_k = -1; d->heads_q = 16; d->heads_kv = -1;
  d->head_dim = 128; d->dtype = CUDADENT_DTYPE_BF16; d->window_left = d->window_right = -1;
  o->iters = 30;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); exit(0); }
    if (!strcmp(a, "--causal")) { d->causal = 1; continue; }
    if (!strcmp(a, "--deterministic")) { d->deterministic = 1; continue; }
    if (!strcmp(a, "--check")) { o->check = 1; continue; }
    const char *val = i + 1 < argc ? argv[++i] : NULL;
    if (val == NULL) {
      fprintf(stderr, "%s: unknown argument or missing value: '%s' (--help lists them)\n", prog, a);
      return -1;
    }
    int rc = 0;
    if (!strcmp(a, "--trace")) o->trace = val;
    else if (!strcmp(a, "--batch")) rc = parse_int(a, val, 1, CUDADENT_MAX_BATCH, &d->batch);
    else if (!strcmp(a, "--heads")) rc = parse_int(a, val, 1, CUDADENT_MAX_HEADS, &d->heads_q);
    else if (!strcmp(a, "--heads-kv")) rc = parse_int(a, val, 1, CUDADENT_MAX_HEADS, &d->heads_kv);
    else if (!strcmp(a, "--seqlen-q") || !strcmp(a, "--seqlen"))
      rc = parse_int(a, val, 1, CUDADENT_MAX_SEQLEN, &d->seqlen_q);
    else if (!strcmp(a, "--seqlen-k")) rc = parse_int(a, val, 1, CUDADENT_MAX_SEQLEN, &d->seqlen_k);
    else if (!strcmp(a, "--head-dim")) rc = parse_int(a, val, 8, 256, &d->head_dim);
    else if (!strcmp(a, "--head-dim-v")) rc = parse_int(a, val, 8, 256, &d->head_dim_v);
    else if (!strcmp(a, "--iters")) rc = parse_int(a, val, 1, INT_MAX, &o->iters);
    else if (!strcmp(a, "--dtype")) {
      if (!strcmp(val, "bf16")) d->dtype = CUDADENT_DTYPE_BF16;
      else if (!strcmp(val, "fp16")) d->dtype = CUDADENT_DTYPE_FP16;
      else { fprintf(stderr, "%s: --dtype expects bf16 or fp16, got '%s'\n", prog, val); return -1; }
    } else if (!strcmp(a, "--window")) {
      char *end = NULL;
      errno = 0;
      const long l = strtol(val, &end, 10);
      const int ok_l = end != val && *end == ',' && errno == 0 && l >= -1 && l <= INT_MAX;
      const char *rtext = ok_l ? end + 1 : val;
      const long r = ok_l ? strtol(rtext, &end, 10) : 0;
      if (!ok_l || end == rtext || *end != '\0' || errno != 0 || r < -1 || r > INT_MAX) {
        fprintf(stderr, "%s: --window expects L,R (integers from -1, unbounded), got '%s'\n", prog, val);
        return -1;
      }
      d->window_left = (int)l;
      d->window_right = (int)r;
    } else if (!strcmp(a, "--seed")) {
      char *end = NULL;
      errno = 0;
      const unsigned long long s = strtoull(val, &end, 10);
      if (val[0] < '0' || val[0] > '9' || errno != 0 || *end != '\0' || s == 0) {
        fprintf(stderr, "%s: --seed expects an integer from 1, got '%s'\n", prog, val);
        return -1;
      }
      d->seed = (uint64_t)s;
    } else {
      fprintf(stderr, "%s: unknown argument '%s' (--help lists them)\n", prog, a);
      return -1;
    }
    if (rc != 0) return -1;
  }
  if (d->seqlen_k < 0) d->seqlen_k = d->seqlen_q;
  if (d->heads_kv < 0) d->heads_kv = d->heads_q;
  if (o->trace == NULL) {
    fprintf(stderr, "%s: --trace FILE is required (where the records go)\n", prog);
    return -1;
  }
  return 0;
}

/* Writes bytes of the device buffer buf to path. 0 ok, else -1 with a message on stderr. */
static int dump(const void *buf, size_t bytes, const char *path, unsigned long long *stamped,
                unsigned long long *ctas) {
  unsigned long long *host = malloc(bytes);
  if (host == NULL) {
    fprintf(stderr, "%s: out of host memory (%zu bytes)\n", prog, bytes);
    return -1;
  }
  const cudaError_t e = cudaMemcpy(host, buf, bytes, cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: copying the trace back: %s\n", prog, cudaGetErrorString(e));
    free(host);
    return -1;
  }
  *ctas = host[TRACE_H_CTAS];
  *stamped = 0;
  for (unsigned long long c = 0; c < *ctas && (c + 2) * TRACE_HDR * sizeof *host <= bytes; ++c)
    *stamped += host[TRACE_HDR + c * TRACE_HDR + TRACE_C_START] != 0;
  FILE *f = fopen(path, "wb");
  const int written = f != NULL && fwrite(host, 1, bytes, f) == bytes;
  const int closed = f != NULL && fclose(f) == 0;
  free(host);
  if (!written || !closed) {
    fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  options_t o;
  if (parse_args(argc, argv, &o) != 0) return 2;
  char reason[256], desc[160], err[256] = "";
  if (!problem_gpu_present(reason, sizeof reason)) {
    fprintf(stderr, "%s: %s: nothing to run on this machine\n", prog, reason);
    return 3;
  }
  problem_describe(&o.d, desc, sizeof desc);
  problem_t pr;
  if (problem_create(&pr, &o.d, err, sizeof err) != 0) {
    fprintf(stderr, "%s: %s: setup failed: %s\n", prog, desc, err);
    problem_destroy(&pr);
    return 1;
  }
  int rc = 1;
  void *buf = NULL;
  size_t bytes = 0;
  cudadent_attn_bwd_params_t p;
  problem_bwd_params(&pr, &p);
  /* the trace's size for this call, then on: the buffer zeroed, its file header written */
  cudaError_t e = cudadent_dev_sm90_bwd_trace_set(&p, NULL, 0, &bytes);
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: %s: cudadent_dev_sm90_bwd_trace_set: %s (a library built without "
            "-DCUDADENT_DEV -DSM90_BWD_TRACE=1, or a shape the trace does not cover: varlen)\n",
            prog, desc, cudaGetErrorString(e));
    problem_destroy(&pr);
    return 2;
  }
  e = cudaMalloc(&buf, bytes);
  if (e == cudaSuccess) e = cudadent_dev_sm90_bwd_trace_set(&p, buf, bytes, &bytes);
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: %s: the trace's buffer (%zu bytes): %s\n", prog, desc, bytes,
            cudaGetErrorString(e));
    goto done;
  }
  cudadent_status_t st = problem_run_fwd(&pr, NULL);
  if (st == CUDADENT_STATUS_SUCCESS && problem_gap_o_for_bwd(&pr) != 0) {
    fprintf(stderr, "%s: %s: CUDA failure after the forward: %s\n", prog, desc,
            cudaGetErrorString(cudaGetLastError()));
    goto done;
  }
  if (st == CUDADENT_STATUS_SUCCESS) st = problem_run_bwd(&pr, NULL); /* traced */
  if (st != CUDADENT_STATUS_SUCCESS) {
    fprintf(stderr, "%s: %s: %s: %s\n", prog, desc, cudadent_get_error_string(st),
            cudadent_get_last_error_message());
    goto done;
  }
  check_result_t r;
  const char *check = "-";
  int failed = 0;
  if (o.check) {
    if (problem_check(&pr, 1, &r) != 0) {
      fprintf(stderr, "%s: %s: CUDA failure during check: %s\n", prog, desc,
              cudaGetErrorString(cudaGetLastError()));
      goto done;
    }
    check = r.pass ? "pass" : "FAIL";
    failed = !r.pass;
  }
  const double ms = problem_time_ms(&pr, 1, o.iters, err, sizeof err); /* all traced */
  if (ms < 0) {
    fprintf(stderr, "%s: %s: timing failed: %s\n", prog, desc, err);
    goto done;
  }
  /* the trace off; the buffer holds the last timed call's records */
  size_t unused = 0;
  e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudadent_dev_sm90_bwd_trace_set(&p, NULL, 0, &unused);
  if (e != cudaSuccess) {
    fprintf(stderr, "%s: %s: %s\n", prog, desc, cudaGetErrorString(e));
    goto done;
  }
  unsigned long long stamped = 0, ctas = 0;
  if (dump(buf, bytes, o.trace, &stamped, &ctas) != 0) goto done;
  const double tflops = problem_flops(&pr.d, 1) / (ms * 1e-3) / 1e12;
  printf("trace: %s, %zu bytes, %llu of %llu CTAs stamped\n", o.trace, bytes, stamped, ctas);
  printf("%-58s %-4s %-6s %10s %9s\n", "shape", "dir", "check", "ms", "TFLOP/s");
  printf("%-58s %-4s %-6s %10.4f %9.1f\n", desc, "bwd", check, ms, tflops);
  if (o.check) problem_print_check(&r, 1);
  fflush(stdout);
  if (stamped == 0)
    fprintf(stderr, "%s: no CTA stamped: the calls did not run the sm90 backward's main kernel "
            "(CUDADENT_KERNEL_BWD=sm90 forces it)\n", prog);
  rc = failed || stamped == 0;
done:
  cudaFree(buf);
  problem_destroy(&pr);
  return rc;
}
