/*
 * reference_fixtures.h - what the dense reference tests (tests/test_reference.c,
 * tests/test_reference_props.c) share: the seeded random inputs, the test shapes and their
 * tensors, the error figures, and the naive implementation written separately from src/reference
 * (tests/reference_fixtures.c).
 */
#ifndef CUDADENT_TEST_REFERENCE_FIXTURES_H
#define CUDADENT_TEST_REFERENCE_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "reference.h"

/* ---- random inputs (one stream for all the dense reference tests) ---------------------------- */

uint64_t rng_next(void);
/* Seeds the stream once (CUDADENT_TEST_SEED, or the clock) and prints the seed. */
void rng_seed_once(void);
double rng_uniform(void); /* (0, 1) */
double rng_normal(void);
/* Normal draws; with outliers != 0, about 1 in 100 is multiplied by 10. */
void fill_random(double *x, size_t n, int outliers);
double *alloc_d(size_t n);

/* ---- shapes ---------------------------------------------------------------------------------- */

typedef struct shape {
  const char *name;
  int b, sq, sk, hq, hkv, d, causal, wl, wr;
} shape_t;

ref_problem_t make_problem(const shape_t *s, int round_dtype, int threads);
size_t n_q(const ref_problem_t *p);
size_t n_kv(const ref_problem_t *p);
size_t n_lse(const ref_problem_t *p);

/* All tensors of one problem. */
typedef struct tensors {
  double *q, *k, *v, *dout, *o, *lse, *dq, *dk, *dv;
} tensors_t;

/* Outputs start as NaN, so an element the reference does not write shows. */
void tensors_alloc(tensors_t *t, const ref_problem_t *p);
void tensors_random(tensors_t *t, const ref_problem_t *p, int outliers);
void tensors_free(tensors_t *t);

/* ---- error figures --------------------------------------------------------------------------- */

void poison(double *x, size_t n);
int any_nan(const double *x, size_t n);
double max_abs(const double *x, size_t n);
/* The larger of two error figures; NaN in either gives +inf. */
double worse(double a, double b);
/* max |a - b| / max |b|; infinities must match exactly; NaN anywhere or unmatched inf: +inf. */
double rel_err(const double *a, const double *b, size_t n);

/* ---- the naive implementation ---------------------------------------------------------------- */

/* The mask exactly as cudadent.h words it. */
int naive_visible(const ref_problem_t *p, int i, int j);
/* Forward (o, lse), and with dout != NULL the backward (dq, dk, dv), honouring p->round_dtype. */
void naive_attn(const ref_problem_t *p, const double *q, const double *k, const double *v,
                const double *dout, double *o, double *lse, double *dq, double *dk, double *dv);

#endif
