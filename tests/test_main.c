#define _POSIX_C_SOURCE 200809L
/*
 * test_main.c - cudadent's C test runner (run by ctest). Runs every registered test, or those
 * whose name contains argv[1], prints a line per test, then each skip reason once with the number
 * of tests it skipped, and ends with 'N passed, M skipped, K failed'. Exit status 1 if any test
 * failed. With CUDADENT_TEST_COUNTS=file in the environment the counts and skip reasons are also
 * appended to that file (tests/run_tests.sh, which make test runs, sums every suite's up).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "problem.h"

void register_reference_tests(void);
void register_reference_props_tests(void);
void register_reference_v2_tests(void);
void register_api_tests(void);
void register_api_v2_tests(void);
void register_api_sizes_tests(void);
void register_struct_size_tests(void);
void register_gpu_attn_tests(void);
void register_gpu_dims_tests(void);
void register_gpu_varlen_tests(void);
void register_gpu_varlen_bwd_tests(void);
void register_gpu_softcap_tests(void);
void register_tile_order_tests(void);
void register_bwd_persist_tests(void);

const char *t_gpu_skip_reason = NULL;

enum { MAX_TESTS = 512 };
static struct { const char *name; t_fn fn; } tests[MAX_TESTS];
static int n_tests = 0;

/* The skip reasons seen, each once, with the number of tests that gave it. */
static struct { const char *reason; int count; } skips[MAX_TESTS];
static int n_skips = 0;

void t_register(const char *name, t_fn fn) {
  if (n_tests == MAX_TESTS) {
    fprintf(stderr, "too many tests: raise MAX_TESTS\n");
    exit(2);
  }
  tests[n_tests].name = name;
  tests[n_tests].fn = fn;
  ++n_tests;
}

int t_skip(const char *reason) {
  printf("    skipped: %s\n", reason);
  int i = 0;
  while (i < n_skips && strcmp(skips[i].reason, reason) != 0) ++i;
  if (i == n_skips) {
    skips[n_skips].reason = reason;
    skips[n_skips++].count = 0;
  }
  ++skips[i].count;
  return T_SKIP;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Appends this run's counts to $CUDADENT_TEST_COUNTS (format: tests/run_tests.sh). */
static void write_counts(int passed, int skipped, int failed) {
  const char *path = getenv("CUDADENT_TEST_COUNTS");
  if (path == NULL || path[0] == '\0') return;
  FILE *f = fopen(path, "a");
  if (f == NULL) {
    fprintf(stderr, "cannot append to CUDADENT_TEST_COUNTS=%s\n", path);
    return;
  }
  const char *suite = "C tests (tests/cudadent_tests)";
  fprintf(f, "suite\t%s\t%d\t%d\t%d\n", suite, passed, skipped, failed);
  for (int i = 0; i < n_skips; ++i) fprintf(f, "skip\t%s\t%d\t%s\n", suite, skips[i].count, skips[i].reason);
  fclose(f);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  static char reason[256];
  if (!problem_gpu_present(reason, sizeof reason)) t_gpu_skip_reason = reason;
  register_reference_tests();
  register_reference_props_tests();
  register_reference_v2_tests();
  register_api_tests();
  register_api_v2_tests();
  register_api_sizes_tests();
  register_struct_size_tests();
  register_gpu_attn_tests();
  register_gpu_dims_tests();
  register_gpu_varlen_tests();
  register_gpu_varlen_bwd_tests();
  register_gpu_softcap_tests();
  register_tile_order_tests();
  register_bwd_persist_tests();
  int passed = 0, failed = 0, skipped = 0;
  for (int i = 0; i < n_tests; ++i) {
    if (filter && !strstr(tests[i].name, filter)) continue;
    printf("[ RUN  ] %s\n", tests[i].name);
    fflush(stdout);
    double t0 = now_seconds();
    int r = tests[i].fn();
    double dt = now_seconds() - t0;
    const char *tag = r == T_PASS ? "[  OK  ]" : r == T_SKIP ? "[ SKIP ]" : "[ FAIL ]";
    printf("%s %s (%.2f s)\n", tag, tests[i].name, dt);
    fflush(stdout);
    if (r == T_PASS) ++passed;
    else if (r == T_SKIP) ++skipped;
    else ++failed;
  }
  for (int i = 0; i < n_skips; ++i) printf("skipped %d: %s\n", skips[i].count, skips[i].reason);
  printf("%d passed, %d skipped, %d failed\n", passed, skipped, failed);
  write_counts(passed, skipped, failed);
  return failed ? 1 : 0;
}
