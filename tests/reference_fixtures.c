/*
 * reference_fixtures.c - the fixtures of the dense reference tests (tests/reference_fixtures.h):
 * the seeded random stream, the shapes' problems and tensors, the error figures, and the naive
 * implementation, straightforward loops written separately from src/reference.
 *
 * The seed is printed once and can be fixed with CUDADENT_TEST_SEED=<n>.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudadent.h"
#include "reference.h"
#include "reference_fixtures.h"

/* ---- random inputs --------------------------------------------------------------------------- */

static uint64_t rng_state;
static int rng_seeded;

uint64_t rng_next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void rng_seed_once(void) {
  if (rng_seeded) return;
  const char *env = getenv("CUDADENT_TEST_SEED");
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  rng_state = env ? strtoull(env, NULL, 0)
                  : (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
  printf("    reference tests: seed %llu (CUDADENT_TEST_SEED to repeat)\n",
         (unsigned long long)rng_state);
  rng_seeded = 1;
}

double rng_uniform(void) { /* (0, 1) */
  return ((double)(rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double rng_normal(void) {
  return sqrt(-2.0 * log(rng_uniform())) * cos(6.283185307179586 * rng_uniform());
}

/* Normal draws; with outliers != 0, about 1 in 100 is multiplied by 10. */
void fill_random(double *x, size_t n, int outliers) {
  for (size_t t = 0; t < n; ++t) {
    x[t] = rng_normal();
    if (outliers && rng_uniform() < 0.01) x[t] *= 10.0;
  }
}

double *alloc_d(size_t n) {
  double *x = malloc((n ? n : 1) * sizeof(double));
  if (!x) {
    fprintf(stderr, "test_reference: out of memory\n");
    exit(1);
  }
  return x;
}

/* ---- shapes ---------------------------------------------------------------------------------- */

ref_problem_t make_problem(const shape_t *s, int round_dtype, int threads) {
  ref_problem_t p;
  memset(&p, 0, sizeof p);
  p.batch = s->b;
  p.seqlen_q = s->sq;
  p.seqlen_k = s->sk;
  p.heads_q = s->hq;
  p.heads_kv = s->hkv;
  p.head_dim = s->d;
  p.softmax_scale = 1.0 / sqrt((double)s->d);
  p.causal = s->causal;
  p.window_left = s->wl;
  p.window_right = s->wr;
  p.round_dtype = round_dtype;
  p.threads = threads;
  return p;
}

size_t n_q(const ref_problem_t *p) {
  return (size_t)p->batch * p->seqlen_q * p->heads_q * p->head_dim;
}
size_t n_kv(const ref_problem_t *p) {
  return (size_t)p->batch * p->seqlen_k * p->heads_kv * p->head_dim;
}
size_t n_lse(const ref_problem_t *p) {
  return (size_t)p->batch * p->heads_q * p->seqlen_q;
}

void tensors_alloc(tensors_t *t, const ref_problem_t *p) {
  t->q = alloc_d(n_q(p));
  t->k = alloc_d(n_kv(p));
  t->v = alloc_d(n_kv(p));
  t->dout = alloc_d(n_q(p));
  t->o = alloc_d(n_q(p));
  t->lse = alloc_d(n_lse(p));
  t->dq = alloc_d(n_q(p));
  t->dk = alloc_d(n_kv(p));
  t->dv = alloc_d(n_kv(p));
  /* Outputs start as NaN, so an element the reference does not write shows. */
  const size_t nq = n_q(p), nkv = n_kv(p), nl = n_lse(p);
  for (size_t e = 0; e < nq; ++e) t->o[e] = t->dq[e] = NAN;
  for (size_t e = 0; e < nkv; ++e) t->dk[e] = t->dv[e] = NAN;
  for (size_t e = 0; e < nl; ++e) t->lse[e] = NAN;
}

void tensors_random(tensors_t *t, const ref_problem_t *p, int outliers) {
  fill_random(t->q, n_q(p), outliers);
  fill_random(t->k, n_kv(p), outliers);
  fill_random(t->v, n_kv(p), outliers);
  fill_random(t->dout, n_q(p), outliers);
}

void tensors_free(tensors_t *t) {
  free(t->q);
  free(t->k);
  free(t->v);
  free(t->dout);
  free(t->o);
  free(t->lse);
  free(t->dq);
  free(t->dk);
  free(t->dv);
}

void poison(double *x, size_t n) {
  for (size_t t = 0; t < n; ++t) x[t] = NAN;
}

int any_nan(const double *x, size_t n) {
  for (size_t t = 0; t < n; ++t)
    if (isnan(x[t])) return 1;
  return 0;
}

double max_abs(const double *x, size_t n) {
  double m = 0.0;
  for (size_t t = 0; t < n; ++t)
    if (isfinite(x[t]) && fabs(x[t]) > m) m = fabs(x[t]);
  return m;
}

/* The larger of two error figures; NaN in either gives +inf (fmax would drop a NaN). */
double worse(double a, double b) {
  if (isnan(a) || isnan(b)) return INFINITY;
  return a > b ? a : b;
}

/* max |a - b| / max |b|; infinities must match exactly; NaN anywhere or unmatched inf: +inf. */
double rel_err(const double *a, const double *b, size_t n) {
  double e = 0.0;
  for (size_t t = 0; t < n; ++t) {
    if (isnan(a[t]) || isnan(b[t])) return INFINITY;
    if (isinf(a[t]) || isinf(b[t])) {
      if (a[t] != b[t]) return INFINITY;
      continue;
    }
    const double d = fabs(a[t] - b[t]);
    if (d > e) e = d;
  }
  const double m = max_abs(b, n);
  return m > 0.0 ? e / m : e;
}

/* ---- the naive implementation ---------------------------------------------------------------- */

/* The mask exactly as cudadent.h words it. */
int naive_visible(const ref_problem_t *p, int i, int j) {
  const long long off = (long long)p->seqlen_k - p->seqlen_q;
  const int wr = p->causal ? 0 : p->window_right;
  return (p->window_left < 0 || j >= i + off - p->window_left) &&
         (wr < 0 || j <= i + off + wr);
}

/* Straightforward loops over full rows: forward (o, lse), and with dout != NULL the backward
 * (dq, dk, dv), honouring p->round_dtype at the documented points. */
void naive_attn(const ref_problem_t *p, const double *q, const double *k, const double *v,
                       const double *dout, double *o, double *lse, double *dq, double *dk,
                       double *dv) {
  const int B = p->batch, Sq = p->seqlen_q, Sk = p->seqlen_k, Hq = p->heads_q, Hkv = p->heads_kv,
            D = p->head_dim;
  const int lowp = p->round_dtype == CUDADENT_DTYPE_FP16 || p->round_dtype == CUDADENT_DTYPE_BF16;
  double *s = alloc_d((size_t)Sk), *pr = alloc_d((size_t)Sk), *pt = alloc_d((size_t)Sk);
  int *vis = malloc((size_t)(Sk ? Sk : 1) * sizeof(int));
  if (dout) {
    memset(dk, 0, n_kv(p) * sizeof(double));
    memset(dv, 0, n_kv(p) * sizeof(double));
  }
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h) {
      const int g = h / (Hq / Hkv);
      for (int i = 0; i < Sq; ++i) {
        const double *qi = q + (((size_t)b * Sq + i) * Hq + h) * D;
        double *oi = o + (((size_t)b * Sq + i) * Hq + h) * D;
        int nvis = 0;
        double m = -INFINITY;
        for (int j = 0; j < Sk; ++j) {
          vis[j] = naive_visible(p, i, j);
          if (!vis[j]) continue;
          ++nvis;
          const double *kj = k + (((size_t)b * Sk + j) * Hkv + g) * D;
          double dot = 0.0;
          for (int d = 0; d < D; ++d) dot += qi[d] * kj[d];
          s[j] = p->softmax_scale * dot;
          if (s[j] > m) m = s[j];
        }
        for (int d = 0; d < D; ++d) oi[d] = 0.0;
        if (dout) {
          double *dqi = dq + (((size_t)b * Sq + i) * Hq + h) * D;
          for (int d = 0; d < D; ++d) dqi[d] = 0.0;
        }
        if (nvis == 0) {
          lse[((size_t)b * Hq + h) * Sq + i] = -INFINITY;
          continue;
        }
        double l = 0.0;
        for (int j = 0; j < Sk; ++j)
          if (vis[j]) l += exp(s[j] - m);
        lse[((size_t)b * Hq + h) * Sq + i] = m + log(l);
        for (int j = 0; j < Sk; ++j) {
          pt[j] = vis[j] ? exp(s[j] - m) / l : 0.0;
          pr[j] = lowp ? ref_round_to(p->round_dtype, pt[j]) : pt[j];
        }
        for (int j = 0; j < Sk; ++j) {
          if (!vis[j]) continue;
          const double *vj = v + (((size_t)b * Sk + j) * Hkv + g) * D;
          for (int d = 0; d < D; ++d) oi[d] += pr[j] * vj[d];
        }
        if (!dout) continue;
        const double *doi = dout + (((size_t)b * Sq + i) * Hq + h) * D;
        double *dqi = dq + (((size_t)b * Sq + i) * Hq + h) * D;
        double delta = 0.0;
        for (int d = 0; d < D; ++d) delta += doi[d] * (lowp ? ref_round_to(p->round_dtype, oi[d]) : oi[d]);
        for (int j = 0; j < Sk; ++j) {
          if (!vis[j]) continue;
          const size_t kvrow = (((size_t)b * Sk + j) * Hkv + g) * D;
          double dp = 0.0;
          for (int d = 0; d < D; ++d) dp += doi[d] * v[kvrow + d];
          double ds = pt[j] * (dp - delta);
          if (lowp) ds = ref_round_to(p->round_dtype, ds);
          for (int d = 0; d < D; ++d) {
            dqi[d] += p->softmax_scale * ds * k[kvrow + d];
            dk[kvrow + d] += p->softmax_scale * ds * qi[d];
            dv[kvrow + d] += pr[j] * doi[d];
          }
        }
      }
    }
  free(s);
  free(pr);
  free(pt);
  free(vis);
}