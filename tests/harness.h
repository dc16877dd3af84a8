/*
 * harness.h - the tiny C test framework of cudadent's test runner (tests/test_main.c).
 *
 * A test is a function returning T_PASS, T_FAIL or T_SKIP; it prints its figures with printf and
 * the reason of a failure with T_FAILF. Each test file has one register function (listed in
 * test_main.c) that calls t_register for each of its tests. A test that cannot run here returns
 * t_skip(reason). The runner prints one line per test, then each skip reason once with its count,
 * and ends with 'N passed, M skipped, K failed'. `cudadent_tests [substring]` runs only the tests
 * whose name contains the substring. With CUDADENT_TEST_COUNTS=file in the environment it also
 * appends its counts and skip reasons to that file (make test sums them up: tests/run_tests.sh).
 */
#ifndef CUDADENT_TEST_HARNESS_H
#define CUDADENT_TEST_HARNESS_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { T_PASS = 0, T_FAIL = 1, T_SKIP = 2 };

typedef int (*t_fn)(void);
void t_register(const char *name, t_fn fn);

/* Print a failure reason with the source line; use as: return T_FAILF("x=%d", x); */
#define T_FAILF(...) \
  (printf("    FAIL %s:%d: ", __FILE__, __LINE__), printf(__VA_ARGS__), printf("\n"), T_FAIL)
/* Fail (return T_FAIL) when cond is false. */
#define T_CHECK(cond, ...) \
  do { if (!(cond)) return T_FAILF(__VA_ARGS__); } while (0)
/* Record why the running test skips (printed once per reason by the runner; reason must outlive
 * the run) and return T_SKIP: use as `return t_skip("...")`. */
int t_skip(const char *reason);
/* Set by test_main: why GPU tests skip ("no CUDA device: ..."), or NULL when a device is
 * present. */
extern const char *t_gpu_skip_reason;
#define T_REQUIRE_GPU()                                            \
  do {                                                             \
    if (t_gpu_skip_reason) return t_skip(t_gpu_skip_reason);       \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
