#define _POSIX_C_SOURCE 200809L
/*
 * test_main.c - cudadent's C test runner (run by ctest). Runs every registered test, or those
 * whose name contains argv[1], prints a line per test and ends with
 * 'N passed, N failed, N skipped'. Exit status 1 if any test failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "problem.h"

void register_reference_tests(void);
void register_api_tests(void);
void register_api_sizes_tests(void);
void register_struct_size_tests(void);
void register_gpu_attn_tests(void);
void register_tile_order_tests(void);

const char *t_gpu_skip_reason = NULL;

enum { MAX_TESTS = 512 };
static struct { const char *name; t_fn fn; } tests[MAX_TESTS];
static int n_tests = 0;

void t_register(const char *name, t_fn fn) {
  if (n_tests == MAX_TESTS) {
    fprintf(stderr, "too many tests: raise MAX_TESTS\n");
    exit(2);
  }
  tests[n_tests].name = name;
  tests[n_tests].fn = fn;
  ++n_tests;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  static char reason[256];
  if (!problem_gpu_present(reason, sizeof reason)) t_gpu_skip_reason = "no CUDA device";
  register_reference_tests();
  register_api_tests();
  register_api_sizes_tests();
  register_struct_size_tests();
  register_gpu_attn_tests();
  register_tile_order_tests();
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
  if (t_gpu_skip_reason) printf("GPU tests: skipped: %s (%s)\n", t_gpu_skip_reason, reason);
  printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed ? 1 : 0;
}
