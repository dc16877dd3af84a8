/*
 * test_reference_v2.c - CPU tests of the reference's layout-v2 features (src/reference):
 * head_dim_v != head_dim and softcap against a naive implementation written separately here
 * (exact and low-precision), softcap's backward against finite differences, softcap's limits
 * (large: no cap; small: uniform attention), and varlen: against the naive implementation run on
 * each sequence gathered into its own buffers (zero-length sequences, per-sequence bottom-right
 * masks, GQA, seqused_k), against the dense batch when every length is equal (bit for bit, LSE
 * layout included), and the clamping of invalid cu_seqlens (nothing outside the tensors touched:
 * make sanitize runs this under ASan; tokens in no sequence zero, LSE -inf).
 *
 * Inputs are fresh random draws each run; the seed is printed and can be fixed with
 * CUDADENT_TEST_SEED=<n>.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cudadent.h"
#include "harness.h"
#include "reference.h"

void register_reference_v2_tests(void);

/* ---- random inputs, buffers, errors ---------------------------------------------------------- */

static uint64_t rng_state;
static int rng_seeded;

static uint64_t rng_next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void seed_once(void) {
  if (rng_seeded) return;
  const char *env = getenv("CUDADENT_TEST_SEED");
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  rng_state = env ? strtoull(env, NULL, 0)
                  : (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^ 0x5eedull;
  printf("    reference v2 tests: seed %llu (CUDADENT_TEST_SEED to repeat)\n",
         (unsigned long long)rng_state);
  rng_seeded = 1;
}

static double uniform(void) { return ((double)(rng_next() >> 11) + 0.5) * 0x1p-53; }
static double normal(void) {
  return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform());
}

static double *alloc_nan(size_t n) {
  double *x = malloc((n ? n : 1) * sizeof(double));
  if (!x) {
    fprintf(stderr, "test_reference_v2: out of memory\n");
    exit(1);
  }
  for (size_t t = 0; t < n; ++t) x[t] = NAN;
  return x;
}

static double *alloc_random(size_t n, double scale) {
  double *x = alloc_nan(n);
  for (size_t t = 0; t < n; ++t) x[t] = scale * normal();
  return x;
}

/* max |a - b| / max |b|; infinities must match; NaN: +inf. */
static double rel_err(const double *a, const double *b, size_t n) {
  double e = 0.0, m = 0.0;
  for (size_t t = 0; t < n; ++t) {
    if (isnan(a[t]) || isnan(b[t])) return INFINITY;
    if (isinf(a[t]) || isinf(b[t])) {
      if (a[t] != b[t]) return INFINITY;
      continue;
    }
    if (fabs(a[t] - b[t]) > e) e = fabs(a[t] - b[t]);
    if (fabs(b[t]) > m) m = fabs(b[t]);
  }
  return m > 0.0 ? e / m : e;
}

static double worst(double a, double b) { return isnan(a) || isnan(b) ? INFINITY : a > b ? a : b; }

/* ---- the problems ---------------------------------------------------------------------------- */

typedef struct shape {
  const char *name;
  int b, sq, sk, hq, hkv, d, dv, causal, wl, wr;
  double softcap;
} shape_t;

static ref_problem_t problem(const shape_t *s, int round_dtype) {
  ref_problem_t p;
  memset(&p, 0, sizeof p);
  p.batch = s->b;
  p.seqlen_q = s->sq;
  p.seqlen_k = s->sk;
  p.heads_q = s->hq;
  p.heads_kv = s->hkv;
  p.head_dim = s->d;
  p.head_dim_v = s->dv;
  p.softcap = s->softcap;
  p.softmax_scale = 1.0 / sqrt((double)s->d);
  p.causal = s->causal;
  p.window_left = s->wl;
  p.window_right = s->wr;
  p.round_dtype = round_dtype;
  p.threads = 2;
  return p;
}

static int dv_of(const ref_problem_t *p) { return p->head_dim_v ? p->head_dim_v : p->head_dim; }

/* The dense tensors of one problem: inputs random (scores of a few units, so that a softcap
 * of 1-3 bends them), outputs NaN. */
typedef struct tensors {
  double *q, *k, *v, *dout, *o, *lse, *dq, *dk, *dv;
  size_t nq, nk, nv, no, nl;
} tensors_t;

static tensors_t tensors(const ref_problem_t *p, int rows_q, int rows_k) {
  tensors_t t;
  const int D = p->head_dim, Dv = dv_of(p);
  t.nq = (size_t)rows_q * p->heads_q * D;
  t.no = (size_t)rows_q * p->heads_q * Dv;
  t.nk = (size_t)rows_k * p->heads_kv * D;
  t.nv = (size_t)rows_k * p->heads_kv * Dv;
  t.nl = (size_t)rows_q * p->heads_q;
  t.q = alloc_random(t.nq, 1.5);
  t.k = alloc_random(t.nk, 1.5);
  t.v = alloc_random(t.nv, 1.0);
  t.dout = alloc_random(t.no, 1.0);
  t.o = alloc_nan(t.no);
  t.lse = alloc_nan(t.nl);
  t.dq = alloc_nan(t.nq);
  t.dk = alloc_nan(t.nk);
  t.dv = alloc_nan(t.nv);
  return t;
}

static void tensors_free(tensors_t *t) {
  double *all[9] = {t->q, t->k, t->v, t->dout, t->o, t->lse, t->dq, t->dk, t->dv};
  for (int i = 0; i < 9; ++i) free(all[i]);
}

/* ---- the naive implementation: full rows, the formulas of cudadent.h, nothing shared ---------- */

static int naive_visible(const ref_problem_t *p, int i, int j) {
  const long long off = (long long)p->seqlen_k - p->seqlen_q;
  const int wr = p->causal ? 0 : p->window_right;
  return (p->window_left < 0 || j >= i + off - p->window_left) && (wr < 0 || j <= i + off + wr);
}

static double rnd(const ref_problem_t *p, double x) {
  return p->round_dtype == REF_ROUND_NONE ? x : ref_round_to(p->round_dtype, x);
}

/* Dense forward (o, lse) and with dout the backward (dq, dk, dv) of p, at the documented rounding
 * points of the low-precision variant. */
static void naive(const ref_problem_t *p, const tensors_t *t, double *o, double *lse, double *dq,
                  double *dk, double *dv) {
  const int B = p->batch, Sq = p->seqlen_q, Sk = p->seqlen_k, Hq = p->heads_q, Hkv = p->heads_kv;
  const int D = p->head_dim, Dv = dv_of(p);
  double *s = alloc_nan((size_t)Sk), *pn = alloc_nan((size_t)Sk), *dt = alloc_nan((size_t)Sk);
  if (dq) {
    memset(dk, 0, t->nk * sizeof(double));
    memset(dv, 0, t->nv * sizeof(double));
  }
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < Hq; ++h)
      for (int i = 0; i < Sq; ++i) {
        const int g = h / (Hq / Hkv);
        const size_t qr = ((size_t)b * Sq + i) * Hq + h;
        double m = -INFINITY;
        for (int j = 0; j < Sk; ++j) {
          if (!naive_visible(p, i, j)) continue;
          const double *kj = t->k + (((size_t)b * Sk + j) * Hkv + g) * D;
          double x = 0.0;
          for (int d = 0; d < D; ++d) x += t->q[qr * D + d] * kj[d];
          x *= p->softmax_scale;
          dt[j] = 1.0;
          if (p->softcap > 0.0) {
            const double th = tanh(x / p->softcap);
            x = p->softcap * th;
            dt[j] = 1.0 - th * th;
          }
          s[j] = x;
          if (x > m) m = x;
        }
        double l = 0.0;
        for (int j = 0; j < Sk; ++j)
          if (naive_visible(p, i, j)) l += exp(s[j] - m);
        lse[((size_t)b * Hq + h) * Sq + i] = l > 0.0 ? m + log(l) : -INFINITY;
        for (int d = 0; d < Dv; ++d) o[qr * Dv + d] = 0.0;
        if (dq)
          for (int d = 0; d < D; ++d) dq[qr * D + d] = 0.0;
        if (l == 0.0) continue;
        for (int j = 0; j < Sk; ++j) {
          pn[j] = naive_visible(p, i, j) ? exp(s[j] - m) / l : 0.0;
          const double *vj = t->v + (((size_t)b * Sk + j) * Hkv + g) * Dv;
          for (int d = 0; d < Dv && pn[j] != 0.0; ++d) o[qr * Dv + d] += rnd(p, pn[j]) * vj[d];
        }
        if (!dq) continue;
        double delta = 0.0;
        for (int d = 0; d < Dv; ++d) delta += t->dout[qr * Dv + d] * rnd(p, o[qr * Dv + d]);
        for (int j = 0; j < Sk; ++j) {
          if (!naive_visible(p, i, j)) continue;
          const size_t kr = ((size_t)b * Sk + j) * Hkv + g;
          double dp = 0.0;
          for (int d = 0; d < Dv; ++d) dp += t->dout[qr * Dv + d] * t->v[kr * Dv + d];
          const double ds = rnd(p, pn[j] * (dp - delta) * dt[j]) * p->softmax_scale;
          for (int d = 0; d < D; ++d) {
            dq[qr * D + d] += ds * t->k[kr * D + d];
            dk[kr * D + d] += ds * t->q[qr * D + d];
          }
          for (int d = 0; d < Dv; ++d) dv[kr * Dv + d] += rnd(p, pn[j]) * t->dout[qr * Dv + d];
        }
      }
  free(s);
  free(pn);
  free(dt);
}

/* Runs the reference and the naive implementation on t; returns the worst relative error of O,
 * LSE and the gradients (printed). */
static double vs_naive(const char *name, const ref_problem_t *p, tensors_t *t) {
  double *o = alloc_nan(t->no), *lse = alloc_nan(t->nl), *dq = alloc_nan(t->nq),
         *dk = alloc_nan(t->nk), *dv = alloc_nan(t->nv);
  ref_attn_fwd(p, t->q, t->k, t->v, t->o, t->lse);
  ref_attn_bwd(p, t->q, t->k, t->v, t->dout, t->dq, t->dk, t->dv);
  naive(p, t, o, lse, dq, dk, dv);
  const double e[5] = {rel_err(t->o, o, t->no), rel_err(t->lse, lse, t->nl),
                       rel_err(t->dq, dq, t->nq), rel_err(t->dk, dk, t->nk),
                       rel_err(t->dv, dv, t->nv)};
  printf("    %-40s O %.1e LSE %.1e dQ %.1e dK %.1e dV %.1e\n", name, e[0], e[1], e[2], e[3], e[4]);
  free(o);
  free(lse);
  free(dq);
  free(dk);
  free(dv);
  double w = 0.0;
  for (int i = 0; i < 5; ++i) w = worst(w, e[i]);
  return w;
}

static const shape_t k_shapes[] = {
    /* name                           b  sq  sk hq hkv  d  dv causal wl  wr  softcap */
    {"dv 8 < d 16",                   2, 17, 23, 2, 1, 16, 8, 0, -1, -1, 0.0},
    {"dv 24 > d 8, causal GQA 4:2",   1, 29, 19, 4, 2, 8, 24, 1, -1, -1, 0.0},
    {"softcap 2, d = dv",             2, 21, 21, 2, 2, 16, 0, 0, -1, -1, 2.0},
    {"softcap 1.5, causal sq<sk",     1, 13, 40, 4, 1, 8, 0, 1, -1, -1, 1.5},
    {"softcap 3 + dv 40, window 5/2", 1, 70, 90, 2, 1, 16, 40, 0, 5, 2, 3.0},
    {"softcap 0.5, dv 4, blocks 130", 1, 130, 70, 2, 2, 12, 4, 1, 9, -1, 0.5},
};
enum { N_SHAPES = sizeof k_shapes / sizeof k_shapes[0] };

static int test_vs_naive(void) {
  seed_once();
  double w = 0.0;
  for (int si = 0; si < N_SHAPES; ++si) {
    ref_problem_t p = problem(&k_shapes[si], REF_ROUND_NONE);
    tensors_t t = tensors(&p, p.batch * p.seqlen_q, p.batch * p.seqlen_k);
    const double e = vs_naive(k_shapes[si].name, &p, &t);
    tensors_free(&t);
    T_CHECK(e <= 1e-11, "%s: reference vs naive %.3g", k_shapes[si].name, e);
    w = worst(w, e);
  }
  /* the low-precision variant: P, dS (after the cap's derivative) and O rounded at the same points */
  for (int si = 2; si < N_SHAPES; si += 2) {
    ref_problem_t p = problem(&k_shapes[si], CUDADENT_DTYPE_BF16);
    tensors_t t = tensors(&p, p.batch * p.seqlen_q, p.batch * p.seqlen_k);
    char name[64];
    snprintf(name, sizeof name, "bf16 %s", k_shapes[si].name);
    const double e = vs_naive(name, &p, &t);
    tensors_free(&t);
    T_CHECK(e <= 1e-9, "%s: low-precision reference vs naive %.3g", name, e);
  }
  printf("    worst relative error (exact): %.2e\n", w);
  return T_PASS;
}

/* L = sum(O * dout) */
static double loss(const ref_problem_t *p, const tensors_t *t) {
  ref_attn_fwd(p, t->q, t->k, t->v, t->o, t->lse);
  double l = 0.0;
  for (size_t e = 0; e < t->no; ++e) l += t->o[e] * t->dout[e];
  return l;
}

/* softcap (with head_dim_v != head_dim) backward against central differences of L. */
static int test_softcap_finite_differences(void) {
  seed_once();
  const shape_t shapes[] = {
      {"softcap 1, dv 5, causal GQA 2:1", 1, 6, 8, 2, 1, 4, 5, 1, -1, -1, 1.0},
      {"softcap 0.7, window 3/1 sq>sk", 2, 9, 6, 2, 2, 6, 3, 0, 3, 1, 0.7},
  };
  const double h = 1e-5;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
    ref_problem_t p = problem(&shapes[si], REF_ROUND_NONE);
    tensors_t t = tensors(&p, p.batch * p.seqlen_q, p.batch * p.seqlen_k);
    ref_attn_bwd(&p, t.q, t.k, t.v, t.dout, t.dq, t.dk, t.dv);
    double *x[3] = {t.q, t.k, t.v};
    const double *g[3] = {t.dq, t.dk, t.dv};
    const size_t n[3] = {t.nq, t.nk, t.nv};
    double err[3];
    for (int w = 0; w < 3; ++w) {
      double e = 0.0, m = 0.0;
      for (size_t idx = 0; idx < n[w]; ++idx) { /* every element */
        const double x0 = x[w][idx];
        x[w][idx] = x0 + h;
        const double lp = loss(&p, &t);
        x[w][idx] = x0 - h;
        const double lm = loss(&p, &t);
        x[w][idx] = x0;
        e = worst(e, fabs((lp - lm) / (2.0 * h) - g[w][idx]));
        if (fabs(g[w][idx]) > m) m = fabs(g[w][idx]);
      }
      err[w] = m > 0.0 ? e / m : e;
    }
    /* the same gradients without the cap's derivative must be visibly wrong: the test sees it */
    ref_problem_t nocap = p;
    nocap.softcap = 0.0;
    double *dq0 = alloc_nan(t.nq), *dk0 = alloc_nan(t.nk), *dv0 = alloc_nan(t.nv);
    ref_attn_bwd(&nocap, t.q, t.k, t.v, t.dout, dq0, dk0, dv0);
    const double differs = rel_err(dq0, t.dq, t.nq);
    free(dq0);
    free(dk0);
    free(dv0);
    printf("    %-34s vs finite differences: dQ %.1e dK %.1e dV %.1e (all elements); "
           "without the cap dQ differs by %.2f\n",
           shapes[si].name, err[0], err[1], err[2], differs);
    tensors_free(&t);
    for (int w = 0; w < 3; ++w)
      T_CHECK(err[w] < 1e-6, "%s: gradient %d vs finite differences %.3g", shapes[si].name, w,
              err[w]);
    T_CHECK(differs > 0.05, "%s: the cap changes dQ by only %.3g: inputs too small to test it",
            shapes[si].name, differs);
  }
  return T_PASS;
}

/* softcap -> infinity approaches no cap, quadratically (c tanh(s/c) = s - s^3 / (3c^2) + ...);
 * softcap -> 0 flattens every score to 0: O = the mean of the visible V rows, LSE = ln(count). */
static int test_softcap_limits(void) {
  seed_once();
  const shape_t s = {"", 1, 20, 30, 2, 1, 8, 6, 1, -1, -1, 0.0};
  ref_problem_t p = problem(&s, REF_ROUND_NONE);
  tensors_t t = tensors(&p, s.sq, s.sk);
  double *o0 = alloc_nan(t.no), *l0 = alloc_nan(t.nl), *dq0 = alloc_nan(t.nq),
         *dk0 = alloc_nan(t.nk), *dv0 = alloc_nan(t.nv);
  ref_attn_fwd(&p, t.q, t.k, t.v, o0, l0);
  ref_attn_bwd(&p, t.q, t.k, t.v, t.dout, dq0, dk0, dv0);
  double prev = INFINITY;
  const double caps[3] = {10.0, 100.0, 1000.0};
  for (int c = 0; c < 3; ++c) {
    p.softcap = caps[c];
    ref_attn_fwd(&p, t.q, t.k, t.v, t.o, t.lse);
    ref_attn_bwd(&p, t.q, t.k, t.v, t.dout, t.dq, t.dk, t.dv);
    const double e = worst(rel_err(t.o, o0, t.no), worst(rel_err(t.lse, l0, t.nl),
                                                        rel_err(t.dq, dq0, t.nq)));
    printf("    softcap %6.0f: O, LSE, dQ vs no cap %.2e%s\n", caps[c], e,
           c ? "" : " (x100 smaller per x10 cap expected)");
    T_CHECK(e > 0.0, "softcap %g changed nothing", caps[c]);
    T_CHECK(e < 0.05 * prev, "softcap %g: %.3g not well below %.3g (quadratic approach)", caps[c],
            e, prev);
    prev = e;
  }
  T_CHECK(prev < 1e-4, "softcap 1000 still differs by %.3g", prev);
  p.softcap = 1e-9;
  ref_attn_fwd(&p, t.q, t.k, t.v, t.o, t.lse);
  double e = 0.0;
  const int Dv = dv_of(&p), off = s.sk - s.sq;
  for (int h = 0; h < s.hq; ++h)
    for (int i = 0; i < s.sq; ++i) {
      const int cnt = i + off + 1; /* causal: keys 0 .. i + off */
      e = worst(e, fabs(t.lse[(size_t)h * s.sq + i] - log((double)cnt)));
      for (int d = 0; d < Dv; ++d) {
        double mean = 0.0;
        for (int j = 0; j < cnt; ++j) mean += t.v[(size_t)j * Dv + d]; /* heads_kv = 1 */
        e = worst(e, fabs(t.o[((size_t)i * s.hq + h) * Dv + d] - mean / cnt));
      }
    }
  printf("    softcap 1e-9: max |O - mean(V)|, |LSE - ln(count)| %.1e\n", e);
  T_CHECK(e < 1e-7, "softcap -> 0 is not uniform attention (%.3g)", e);
  tensors_free(&t);
  free(o0);
  free(l0);
  free(dq0);
  free(dk0);
  free(dv0);
  return T_PASS;
}

/* ---- varlen ---------------------------------------------------------------------------------- */

/* A varlen problem over packed tensors of total_q / total_k tokens. */
static ref_problem_t varlen_problem(const shape_t *s, int batch, const int32_t *cu_q,
                                    const int32_t *cu_k, const int32_t *used) {
  ref_problem_t p = problem(s, REF_ROUND_NONE);
  p.batch = batch;
  p.cu_seqlens_q = cu_q;
  p.cu_seqlens_k = cu_k;
  p.seqused_k = used;
  p.total_q = cu_q[batch];
  p.total_k = cu_k[batch];
  return p;
}

static int any_nan(const double *x, size_t n) {
  for (size_t t = 0; t < n; ++t)
    if (isnan(x[t])) return 1;
  return 0;
}

/* Sequence b of the packed t against the naive implementation on its own slices (a dense
 * problem of batch 1); its keys past seqused_k must have dK = dV = 0. Returns the worst error. */
static double sequence_vs_naive(const ref_problem_t *p, const tensors_t *t, int b, int *zero_bad) {
  int q0, q1, k0, k1, used;
  ref_varlen_ranges(p, b, &q0, &q1, &k0, &k1, &used);
  const int D = p->head_dim, Dv = dv_of(p), Hq = p->heads_q, Hkv = p->heads_kv;
  ref_problem_t d = *p;
  d.cu_seqlens_q = d.cu_seqlens_k = d.seqused_k = NULL;
  d.total_q = d.total_k = 0;
  d.batch = 1;
  d.seqlen_q = q1 - q0;
  d.seqlen_k = used;
  tensors_t s; /* the sequence's slices of the packed inputs */
  s.q = t->q + (size_t)q0 * Hq * D;
  s.k = t->k + (size_t)k0 * Hkv * D;
  s.v = t->v + (size_t)k0 * Hkv * Dv;
  s.dout = t->dout + (size_t)q0 * Hq * Dv;
  s.nq = (size_t)d.seqlen_q * Hq * D;
  s.no = (size_t)d.seqlen_q * Hq * Dv;
  s.nk = (size_t)used * Hkv * D;
  s.nv = (size_t)used * Hkv * Dv;
  s.nl = (size_t)d.seqlen_q * Hq;
  double *o = alloc_nan(s.no), *lse = alloc_nan(s.nl), *dq = alloc_nan(s.nq),
         *dk = alloc_nan(s.nk), *dv = alloc_nan(s.nv), *lse_packed = alloc_nan(s.nl);
  naive(&d, &s, o, lse, dq, dk, dv);
  for (int h = 0; h < Hq; ++h) /* the packed LSE is [heads_q][total_q] */
    for (int i = 0; i < d.seqlen_q; ++i)
      lse_packed[(size_t)h * d.seqlen_q + i] = t->lse[(size_t)h * p->total_q + q0 + i];
  double e = rel_err(t->o + (size_t)q0 * Hq * Dv, o, s.no);
  e = worst(e, rel_err(lse_packed, lse, s.nl));
  e = worst(e, rel_err(t->dq + (size_t)q0 * Hq * D, dq, s.nq));
  e = worst(e, rel_err(t->dk + (size_t)k0 * Hkv * D, dk, s.nk));
  e = worst(e, rel_err(t->dv + (size_t)k0 * Hkv * Dv, dv, s.nv));
  for (int j = k0 + used; j < k1; ++j)
    for (int c = 0; c < Hkv * D; ++c) *zero_bad |= t->dk[(size_t)j * Hkv * D + c] != 0.0;
  for (int j = k0 + used; j < k1; ++j)
    for (int c = 0; c < Hkv * Dv; ++c) *zero_bad |= t->dv[(size_t)j * Hkv * Dv + c] != 0.0;
  free(o);
  free(lse);
  free(dq);
  free(dk);
  free(dv);
  free(lse_packed);
  return e;
}

/* Valid ragged batches: zero-length sequences (queries, keys or both), sq != sk per sequence,
 * causal / windows bottom-right aligned per sequence, GQA, head_dim_v, softcap, seqused_k. */
static int test_varlen_vs_naive(void) {
  seed_once();
  enum { B = 6 };
  const int32_t cu_q[B + 1] = {0, 5, 5, 18, 25, 28, 28};  /* lengths 5 0 13 7 3 0 */
  const int32_t cu_k[B + 1] = {0, 9, 13, 19, 26, 26, 30}; /* lengths 9 4 6 7 0 4 */
  const int32_t used[B] = {7, 4, 2, 7, 0, 1};
  const shape_t shapes[] = {
      {"varlen causal GQA 4:2, dv 12", 0, 13, 9, 4, 2, 8, 12, 1, -1, -1, 0.0},
      {"varlen window 3/1, softcap 1.5", 0, 13, 9, 2, 1, 8, 0, 0, 3, 1, 1.5},
      {"varlen full, MQA", 0, 13, 9, 4, 1, 16, 8, 0, -1, -1, 0.0},
  };
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si)
    for (int with_used = 0; with_used < 2; ++with_used) {
      ref_problem_t p = varlen_problem(&shapes[si], B, cu_q, cu_k, with_used ? used : NULL);
      tensors_t t = tensors(&p, p.total_q, p.total_k);
      ref_attn_fwd(&p, t.q, t.k, t.v, t.o, t.lse);
      ref_attn_bwd(&p, t.q, t.k, t.v, t.dout, t.dq, t.dk, t.dv);
      const int nan = any_nan(t.o, t.no) || any_nan(t.lse, t.nl) || any_nan(t.dq, t.nq) ||
                      any_nan(t.dk, t.nk) || any_nan(t.dv, t.nv);
      double e = 0.0;
      int zero_bad = 0;
      for (int b = 0; b < B; ++b) e = worst(e, sequence_vs_naive(&p, &t, b, &zero_bad));
      printf("    %-32s%s per sequence vs naive %.1e, unused keys dK = dV = 0 %s\n",
             shapes[si].name, with_used ? " +seqused_k" : "           ", e,
             zero_bad ? "NO" : "yes");
      tensors_free(&t);
      T_CHECK(!nan, "%s: an output element was not written", shapes[si].name);
      T_CHECK(e <= 1e-11 && !zero_bad, "%s: varlen disagrees with naive per sequence (%.3g)",
              shapes[si].name, e);
    }
  return T_PASS;
}

/* Equal lengths: the varlen problem is the dense batch, bit for bit, with the LSE moved from
 * [batch][heads_q][seqlen_q] to [heads_q][total_q]. */
static int test_varlen_equal_lengths_is_dense(void) {
  seed_once();
  const shape_t s = {"", 3, 20, 26, 4, 2, 8, 16, 1, 7, -1, 2.0};
  const int32_t cu_q[4] = {0, 20, 40, 60}, cu_k[4] = {0, 26, 52, 78};
  ref_problem_t dense = problem(&s, REF_ROUND_NONE);
  ref_problem_t var = varlen_problem(&s, 3, cu_q, cu_k, NULL);
  tensors_t a = tensors(&dense, 60, 78), b = tensors(&dense, 60, 78);
  ref_attn_fwd(&dense, a.q, a.k, a.v, a.o, a.lse);
  ref_attn_bwd(&dense, a.q, a.k, a.v, a.dout, a.dq, a.dk, a.dv);
  ref_attn_fwd(&var, a.q, a.k, a.v, b.o, b.lse);
  ref_attn_bwd(&var, a.q, a.k, a.v, a.dout, b.dq, b.dk, b.dv);
  int lse_same = 1;
  for (int bb = 0; bb < 3; ++bb)
    for (int h = 0; h < 4; ++h)
      for (int i = 0; i < 20; ++i)
        lse_same &= a.lse[((size_t)bb * 4 + h) * 20 + i] == b.lse[(size_t)h * 60 + bb * 20 + i];
  const int same = !memcmp(a.o, b.o, a.no * sizeof(double)) &&
                   !memcmp(a.dq, b.dq, a.nq * sizeof(double)) &&
                   !memcmp(a.dk, b.dk, a.nk * sizeof(double)) &&
                   !memcmp(a.dv, b.dv, a.nv * sizeof(double));
  printf("    3 x (20 q, 26 k), causal + window 7, softcap 2, dv 16: O, dQ, dK, dV %s, LSE %s\n",
         same ? "bit-identical" : "DIFFER", lse_same ? "bit-identical (transposed)" : "DIFFERS");
  tensors_free(&a);
  tensors_free(&b);
  T_CHECK(same && lse_same, "varlen with equal lengths differs from the dense batch");
  return T_PASS;
}

/* Invalid cu_seqlens and seqused_k, clamped as cudadent.h says: nothing outside the tensors is
 * touched (ASan in make sanitize), tokens in no sequence get O = 0, LSE = -inf, dQ = 0, keys in
 * none dK = dV = 0, and a sequence cut to max_seqlen is the dense problem of what is left. */
static int test_varlen_clamping(void) {
  seed_once();
  enum { B = 4 };
  /* total_q 30, max 8: ranges [0,6) (-3 clamped), [6,6) (decreasing), [4,12) (cut to 8; overlaps
   * the first), [20,28) (cut to 8); rows 12-19 and 28-29 in none */
  const int32_t cu_q[B + 1] = {-3, 6, 4, 20, 30};
  /* total_k 25, max 10: [0,10), [10,20), [25,25) (30 clamped), [5,15); seqused 100, -5, 3, 4
   * -> 10, 0, 0, 4: keys 10-24 take no part */
  const int32_t cu_k[B + 1] = {0, 10, 30, 5, 25};
  const int32_t used[B] = {100, -5, 3, 4};
  const shape_t s = {"", 0, 8, 10, 2, 1, 8, 4, 1, -1, -1, 0.0};
  ref_problem_t p = varlen_problem(&s, B, cu_q, cu_k, used);
  p.total_q = 30; /* cu_q[B] = 30 already; total_k as cu_k[B] = 25 */
  tensors_t t = tensors(&p, p.total_q, p.total_k);
  ref_attn_fwd(&p, t.q, t.k, t.v, t.o, t.lse);
  ref_attn_bwd(&p, t.q, t.k, t.v, t.dout, t.dq, t.dk, t.dv);
  const int nan = any_nan(t.o, t.no) || any_nan(t.lse, t.nl) || any_nan(t.dq, t.nq) ||
                  any_nan(t.dk, t.nk) || any_nan(t.dv, t.nv);
  int bad = 0, rows = 0;
  for (int i = 0; i < 30; ++i) {
    if (i < 12 || (i >= 20 && i < 28)) continue;
    ++rows;
    for (int h = 0; h < 2; ++h) {
      bad |= !(isinf(t.lse[(size_t)h * 30 + i]) && t.lse[(size_t)h * 30 + i] < 0);
      for (int d = 0; d < 4; ++d) bad |= t.o[((size_t)i * 2 + h) * 4 + d] != 0.0;
      for (int d = 0; d < 8; ++d) bad |= t.dq[((size_t)i * 2 + h) * 8 + d] != 0.0;
    }
  }
  for (int j = 10; j < 25; ++j) {
    for (int d = 0; d < 8; ++d) bad |= t.dk[(size_t)j * 8 + d] != 0.0;
    for (int d = 0; d < 4; ++d) bad |= t.dv[(size_t)j * 4 + d] != 0.0;
  }
  int q0, q1, k0, k1, u, overlapped = 0; /* its unused keys 9-14: key 9 is sequence 0's */
  ref_varlen_ranges(&p, 3, &q0, &q1, &k0, &k1, &u);
  const int ranges_ok = q0 == 20 && q1 == 28 && k0 == 5 && k1 == 15 && u == 4;
  const double e = sequence_vs_naive(&p, &t, 3, &overlapped);
  printf("    invalid cu_seqlens: %d rows in no sequence O = 0, LSE = -inf, dQ = 0 %s; keys "
         "10-24 dK = dV = 0 %s; sequence 3 cut to [20,28) x [5,9) vs naive %.1e\n",
         rows, bad ? "NO" : "yes", bad ? "NO" : "yes", e);
  tensors_free(&t);
  T_CHECK(!nan, "an output element was not written");
  T_CHECK(ranges_ok, "sequence 3 clamped to [%d,%d) x [%d,%d) used %d", q0, q1, k0, k1, u);
  T_CHECK(!bad, "tokens in no sequence are not zero / -inf");
  T_CHECK(e <= 1e-11, "clamped sequence vs naive %.3g", e);
  return T_PASS;
}

void register_reference_v2_tests(void) {
  t_register("reference_v2_dv_softcap_vs_naive", test_vs_naive);
  t_register("reference_v2_softcap_finite_differences", test_softcap_finite_differences);
  t_register("reference_v2_softcap_limits", test_softcap_limits);
  t_register("reference_v2_varlen_vs_naive", test_varlen_vs_naive);
  t_register("reference_v2_varlen_equal_lengths_is_dense", test_varlen_equal_lengths_is_dense);
  t_register("reference_v2_varlen_clamping", test_varlen_clamping);
}
