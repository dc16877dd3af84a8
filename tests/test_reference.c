/*
 * test_reference.c - CPU tests of the double-precision reference (src/reference): against a naive
 * implementation written separately here, hand-computed values, finite differences, the
 * low-precision variant's error, the 16-bit conversions, thread-count independence and speed.
 *
 * Inputs are fresh random draws each run (normal, and a variant with rare large outliers); the
 * seed is printed and can be fixed with CUDADENT_TEST_SEED=<n>.
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

void register_reference_tests(void);

/* ---- random inputs --------------------------------------------------------------------------- */

static uint64_t rng_state;
static int rng_seeded;

static uint64_t rng_next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void rng_seed_once(void) {
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

static double rng_uniform(void) { /* (0, 1) */
  return ((double)(rng_next() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double rng_normal(void) {
  return sqrt(-2.0 * log(rng_uniform())) * cos(6.283185307179586 * rng_uniform());
}

/* Normal draws; with outliers != 0, about 1 in 100 is multiplied by 10. */
static void fill_random(double *x, size_t n, int outliers) {
  for (size_t t = 0; t < n; ++t) {
    x[t] = rng_normal();
    if (outliers && rng_uniform() < 0.01) x[t] *= 10.0;
  }
}

static double *alloc_d(size_t n) {
  double *x = malloc((n ? n : 1) * sizeof(double));
  if (!x) {
    fprintf(stderr, "test_reference: out of memory\n");
    exit(1);
  }
  return x;
}

/* ---- shapes ---------------------------------------------------------------------------------- */

typedef struct shape {
  const char *name;
  int b, sq, sk, hq, hkv, d, causal, wl, wr;
} shape_t;

static ref_problem_t make_problem(const shape_t *s, int round_dtype, int threads) {
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

static size_t n_q(const ref_problem_t *p) {
  return (size_t)p->batch * p->seqlen_q * p->heads_q * p->head_dim;
}
static size_t n_kv(const ref_problem_t *p) {
  return (size_t)p->batch * p->seqlen_k * p->heads_kv * p->head_dim;
}
static size_t n_lse(const ref_problem_t *p) {
  return (size_t)p->batch * p->heads_q * p->seqlen_q;
}

/* All tensors of one problem. */
typedef struct tensors {
  double *q, *k, *v, *dout, *o, *lse, *dq, *dk, *dv;
} tensors_t;

static void tensors_alloc(tensors_t *t, const ref_problem_t *p) {
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

static void tensors_random(tensors_t *t, const ref_problem_t *p, int outliers) {
  fill_random(t->q, n_q(p), outliers);
  fill_random(t->k, n_kv(p), outliers);
  fill_random(t->v, n_kv(p), outliers);
  fill_random(t->dout, n_q(p), outliers);
}

static void tensors_free(tensors_t *t) {
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

static void poison(double *x, size_t n) {
  for (size_t t = 0; t < n; ++t) x[t] = NAN;
}

static int any_nan(const double *x, size_t n) {
  for (size_t t = 0; t < n; ++t)
    if (isnan(x[t])) return 1;
  return 0;
}

static double max_abs(const double *x, size_t n) {
  double m = 0.0;
  for (size_t t = 0; t < n; ++t)
    if (isfinite(x[t]) && fabs(x[t]) > m) m = fabs(x[t]);
  return m;
}

/* The larger of two error figures; NaN in either gives +inf (fmax would drop a NaN). */
static double worse(double a, double b) {
  if (isnan(a) || isnan(b)) return INFINITY;
  return a > b ? a : b;
}

/* max |a - b| / max |b|; infinities must match exactly; NaN anywhere or unmatched inf: +inf. */
static double rel_err(const double *a, const double *b, size_t n) {
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
static int naive_visible(const ref_problem_t *p, int i, int j) {
  const long long off = (long long)p->seqlen_k - p->seqlen_q;
  const int wr = p->causal ? 0 : p->window_right;
  return (p->window_left < 0 || j >= i + off - p->window_left) &&
         (wr < 0 || j <= i + off + wr);
}

/* Straightforward loops over full rows: forward (o, lse), and with dout != NULL the backward
 * (dq, dk, dv), honouring p->round_dtype at the documented points. */
static void naive_attn(const ref_problem_t *p, const double *q, const double *k, const double *v,
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

/* ---- tests ----------------------------------------------------------------------------------- */

static const shape_t k_shapes[] = {
    /* name                       b  sq  sk hq hkv  d causal wl  wr */
    {"full 17x17",                2, 17, 17, 2, 2, 16, 0, -1, -1},
    {"causal 17x17",              1, 17, 17, 2, 2, 16, 1, -1, -1},
    {"window left 5",             1, 33, 33, 2, 1, 8, 0, 5, -1},
    {"window right 3",            1, 33, 33, 2, 2, 8, 0, -1, 3},
    {"window 4/2 MQA",            1, 40, 40, 4, 1, 8, 0, 4, 2},
    {"causal sq<sk 13x29",        1, 13, 29, 4, 1, 8, 1, -1, -1},
    {"causal sq>sk 29x13",        1, 29, 13, 2, 2, 8, 1, -1, -1},
    {"GQA 4:1 sq>sk 23x11",       2, 23, 11, 8, 2, 16, 0, -1, -1},
    {"GQA 4:1 window sq<sk",      1, 19, 37, 8, 2, 8, 0, 6, 3},
    {"causal+window_left 7, wr ignored", 1, 50, 50, 2, 1, 8, 1, 7, 5},
    {"length 1x1",                1, 1, 1, 2, 1, 8, 0, -1, -1},
    {"causal 1x17",               1, 1, 17, 2, 2, 8, 1, -1, -1},
    {"causal 17x1",               1, 17, 1, 2, 2, 8, 1, -1, -1},
    {"odd head_dim 3, window 0/0", 1, 9, 12, 3, 3, 3, 0, 0, 0},
    {"window right only sq>sk",   1, 21, 9, 2, 1, 5, 0, -1, 0},
    /* more than one 64-row / 64-key block of the reference's work split */
    {"blocks GQA 2:1 causal 150x200", 1, 150, 200, 4, 2, 16, 1, -1, -1},
    {"blocks window 70/9 sq>sk 200x130", 1, 200, 130, 2, 1, 12, 0, 70, 9},
    {"blocks full 65x129",        2, 65, 129, 2, 2, 8, 0, -1, -1},
};
enum { N_SHAPES = sizeof k_shapes / sizeof k_shapes[0] };

/* Forward and backward vs the naive implementation, over every shape, plain and with outliers. */
static int test_vs_naive(void) {
  rng_seed_once();
  double worst_o = 0, worst_lse = 0, worst_g = 0;
  for (int si = 0; si < N_SHAPES; ++si)
    for (int outliers = 0; outliers < 2; ++outliers) {
      const shape_t *s = &k_shapes[si];
      ref_problem_t p = make_problem(s, REF_ROUND_NONE, 2);
      tensors_t r, n;
      tensors_alloc(&r, &p);
      tensors_alloc(&n, &p);
      tensors_random(&r, &p, outliers);
      memcpy(n.q, r.q, n_q(&p) * sizeof(double));
      memcpy(n.k, r.k, n_kv(&p) * sizeof(double));
      memcpy(n.v, r.v, n_kv(&p) * sizeof(double));
      memcpy(n.dout, r.dout, n_q(&p) * sizeof(double));
      poison(r.o, n_q(&p));
      poison(r.lse, n_lse(&p));
      poison(r.dq, n_q(&p));
      poison(r.dk, n_kv(&p));
      poison(r.dv, n_kv(&p));
      ref_attn_fwd(&p, r.q, r.k, r.v, r.o, r.lse);
      ref_attn_bwd(&p, r.q, r.k, r.v, r.dout, r.dq, r.dk, r.dv);
      naive_attn(&p, n.q, n.k, n.v, n.dout, n.o, n.lse, n.dq, n.dk, n.dv);
      int vis_bad = 0;
      for (int i = 0; i < s->sq; ++i)
        for (int j = -1; j <= s->sk; ++j)
          if (ref_visible(&p, i, j) != (j >= 0 && j < s->sk && naive_visible(&p, i, j)))
            vis_bad = 1;
      const double eo = rel_err(r.o, n.o, n_q(&p));
      const double el = rel_err(r.lse, n.lse, n_lse(&p));
      const double eq = rel_err(r.dq, n.dq, n_q(&p));
      const double ek = rel_err(r.dk, n.dk, n_kv(&p));
      const double ev = rel_err(r.dv, n.dv, n_kv(&p));
      const double eg = worse(eq, worse(ek, ev));
      printf("    %-34s%s O %.1e  LSE %.1e  dQ %.1e  dK %.1e  dV %.1e\n", s->name,
             outliers ? " +outl" : "      ", eo, el, eq, ek, ev);
      tensors_free(&r);
      tensors_free(&n);
      T_CHECK(!vis_bad, "%s: ref_visible disagrees with the cudadent.h mask formula", s->name);
      T_CHECK(eo <= 1e-12 && el <= 1e-12 && eg <= 1e-11,
              "%s: mismatch vs naive (O %.3g LSE %.3g grad %.3g)", s->name, eo, el, eg);
      worst_o = worse(worst_o, eo);
      worst_lse = worse(worst_lse, el);
      worst_g = worse(worst_g, eg);
    }
  printf("    worst relative error: O %.2e  LSE %.2e  gradients %.2e\n", worst_o, worst_lse,
         worst_g);
  return T_PASS;
}

/* The low-precision variant vs the naive implementation with the same rounding points. */
static int test_lowp_vs_naive(void) {
  rng_seed_once();
  const int dtypes[2] = {CUDADENT_DTYPE_BF16, CUDADENT_DTYPE_FP16};
  const int picks[3] = {1, 8, 9};
  for (int di = 0; di < 2; ++di)
    for (int pi = 0; pi < 3; ++pi) {
      const shape_t *s = &k_shapes[picks[pi]];
      ref_problem_t p = make_problem(s, dtypes[di], 2);
      tensors_t r, n;
      tensors_alloc(&r, &p);
      tensors_alloc(&n, &p);
      tensors_random(&r, &p, 0);
      ref_attn_fwd(&p, r.q, r.k, r.v, r.o, r.lse);
      ref_attn_bwd(&p, r.q, r.k, r.v, r.dout, r.dq, r.dk, r.dv);
      naive_attn(&p, r.q, r.k, r.v, r.dout, n.o, n.lse, n.dq, n.dk, n.dv);
      const double eo = rel_err(r.o, n.o, n_q(&p));
      const double eg = worse(rel_err(r.dq, n.dq, n_q(&p)),
                             worse(rel_err(r.dk, n.dk, n_kv(&p)), rel_err(r.dv, n.dv, n_kv(&p))));
      printf("    %s %-34s O %.1e  grads %.1e\n", di ? "fp16" : "bf16", s->name, eo, eg);
      tensors_free(&r);
      tensors_free(&n);
      /* A rounding boundary crossed by a last-bit difference would show as ~1e-3: allow 1e-9. */
      T_CHECK(eo <= 1e-9 && eg <= 1e-9, "%s: low-precision variant disagrees with naive",
              s->name);
    }
  return T_PASS;
}

static int close_to(double a, double b, double tol) {
  return fabs(a - b) <= tol * fmax(1.0, fabs(b));
}

/* Values worked out by hand. */
static int test_hand_computed(void) {
  /* 1 query, 2 keys, D = 1, scale 1: scores 0 and ln 3 -> P = (1/4, 3/4). */
  {
    const shape_t s = {"", 1, 1, 2, 1, 1, 1, 0, -1, -1};
    ref_problem_t p = make_problem(&s, REF_ROUND_NONE, 1);
    p.softmax_scale = 1.0;
    const double q[1] = {1.0}, k[2] = {0.0, log(3.0)}, v[2] = {2.0, 6.0}, dout[1] = {1.0};
    double o[1], lse[1], dq[1], dk[2], dv[2];
    ref_attn_fwd(&p, q, k, v, o, lse);
    ref_attn_bwd(&p, q, k, v, dout, dq, dk, dv);
    printf("    1q2k: O %.17g (5)  LSE %.17g (ln 4 = %.17g)\n", o[0], lse[0], log(4.0));
    printf("          dQ %.17g (0.75 ln 3)  dK %g %g (-0.75 0.75)  dV %g %g (0.25 0.75)\n", dq[0],
           dk[0], dk[1], dv[0], dv[1]);
    T_CHECK(close_to(o[0], 5.0, 1e-15), "O = %.17g, expected 5", o[0]);
    T_CHECK(close_to(lse[0], log(4.0), 1e-15), "LSE = %.17g, expected ln 4", lse[0]);
    /* dS_j = P_j (v_j - O) = (-0.75, 0.75); dQ = sum dS_j k_j; dK_j = dS_j q; dV_j = P_j. */
    T_CHECK(close_to(dq[0], 0.75 * log(3.0), 1e-15), "dQ = %.17g", dq[0]);
    T_CHECK(close_to(dk[0], -0.75, 1e-15) && close_to(dk[1], 0.75, 1e-15), "dK = %g %g", dk[0],
            dk[1]);
    T_CHECK(close_to(dv[0], 0.25, 1e-15) && close_to(dv[1], 0.75, 1e-15), "dV = %g %g", dv[0],
            dv[1]);
  }
  /* D = 2, scale 0.5: q = (1, 2), k = (2, 0), (0, 1): equal scaled scores 1 -> uniform P,
   * LSE = 1 + ln 2. */
  {
    const shape_t s = {"", 1, 1, 2, 1, 1, 2, 0, -1, -1};
    ref_problem_t p = make_problem(&s, REF_ROUND_NONE, 1);
    p.softmax_scale = 0.5;
    const double q[2] = {1, 2}, k[4] = {2, 0, 0, 1}, v[4] = {1, -3, 5, 7};
    double o[2], lse[1];
    ref_attn_fwd(&p, q, k, v, o, lse);
    printf("    D=2 equal scores: O %g %g (3 2)  LSE %.17g (1 + ln 2)\n", o[0], o[1], lse[0]);
    T_CHECK(close_to(o[0], 3.0, 1e-15) && close_to(o[1], 2.0, 1e-15), "O = %g %g", o[0], o[1]);
    T_CHECK(close_to(lse[0], 1.0 + log(2.0), 1e-15), "LSE = %.17g", lse[0]);
  }
  /* q = 0: every score 0, so O_i = mean of the visible V rows and LSE_i = ln(#visible).
   * Causal: row i sees 0..i. Window (left 1, right 0): row i sees i-1, i. */
  {
    rng_seed_once();
    const int S = 12, D = 4;
    for (int variant = 0; variant < 2; ++variant) {
      const shape_t s = {"", 1, S, S, 1, 1, D, variant == 0, variant ? 1 : -1, variant ? 0 : -1};
      ref_problem_t p = make_problem(&s, REF_ROUND_NONE, 1);
      double q[12 * 4], k[12 * 4], v[12 * 4], o[12 * 4], lse[12];
      memset(q, 0, sizeof q);
      fill_random(k, (size_t)S * D, 0);
      fill_random(v, (size_t)S * D, 0);
      ref_attn_fwd(&p, q, k, v, o, lse);
      double worst = 0.0;
      for (int i = 0; i < S; ++i) {
        const int lo = variant ? (i > 0 ? i - 1 : 0) : 0;
        const int cnt = i - lo + 1;
        T_CHECK(close_to(lse[i], log((double)cnt), 1e-15), "uniform row %d: LSE %.17g vs ln %d",
                i, lse[i], cnt);
        for (int d = 0; d < D; ++d) {
          double mean = 0.0;
          for (int j = lo; j <= i; ++j) mean += v[j * D + d];
          mean /= cnt;
          worst = worse(worst, fabs(o[i * D + d] - mean));
        }
      }
      printf("    uniform (q = 0) %s: max |O - mean(V)| %.1e\n",
             variant ? "window 1/0" : "causal", worst);
      T_CHECK(worst <= 1e-14, "uniform case: O is not the mean of the visible V (%.3g)", worst);
    }
  }
  return T_PASS;
}

/* Rows that see no key: O == 0 exactly, LSE == -inf, no NaN, and no gradient from them. */
static int test_fully_masked(void) {
  rng_seed_once();
  const shape_t shapes[] = {
      {"causal sq 7 > sk 3 (rows 0-3 empty)", 1, 7, 3, 2, 1, 8, 1, -1, -1},
      {"window 0/0 sq 9 > sk 4 (rows 0-4)", 2, 9, 4, 4, 2, 8, 0, 0, 0},
      {"window right 0, left 1, sq 6 > sk 2", 1, 6, 2, 2, 2, 5, 0, 1, 0},
  };
  for (int lowp = 0; lowp < 2; ++lowp)
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
      const shape_t *s = &shapes[si];
      ref_problem_t p = make_problem(s, lowp ? CUDADENT_DTYPE_BF16 : REF_ROUND_NONE, 2);
      tensors_t a, b;
      tensors_alloc(&a, &p);
      tensors_alloc(&b, &p);
      tensors_random(&a, &p, 0);
      memcpy(b.q, a.q, n_q(&p) * sizeof(double));
      memcpy(b.k, a.k, n_kv(&p) * sizeof(double));
      memcpy(b.v, a.v, n_kv(&p) * sizeof(double));
      memcpy(b.dout, a.dout, n_q(&p) * sizeof(double));
      int empty_rows = 0;
      /* b: the masked rows' q and dout changed (huge), which must change nothing. */
      for (int i = 0; i < s->sq; ++i) {
        int lo = 0;
        for (int j = 0; j < s->sk; ++j) lo |= ref_visible(&p, i, j);
        if (lo) continue;
        ++empty_rows;
        for (int bb = 0; bb < s->b; ++bb)
          for (int h = 0; h < s->hq; ++h)
            for (int d = 0; d < s->d; ++d) {
              const size_t e = (((size_t)bb * s->sq + i) * s->hq + h) * s->d + d;
              b.q[e] = 1e3 * rng_normal();
              b.dout[e] = 1e3 * rng_normal();
            }
      }
      tensors_t *ts[2] = {&a, &b};
      for (int t = 0; t < 2; ++t) {
        poison(ts[t]->o, n_q(&p));
        poison(ts[t]->lse, n_lse(&p));
        poison(ts[t]->dq, n_q(&p));
        poison(ts[t]->dk, n_kv(&p));
        poison(ts[t]->dv, n_kv(&p));
        ref_attn_fwd(&p, ts[t]->q, ts[t]->k, ts[t]->v, ts[t]->o, ts[t]->lse);
        ref_attn_bwd(&p, ts[t]->q, ts[t]->k, ts[t]->v, ts[t]->dout, ts[t]->dq, ts[t]->dk,
                     ts[t]->dv);
      }
      int nan = any_nan(a.o, n_q(&p)) || any_nan(a.lse, n_lse(&p)) || any_nan(a.dq, n_q(&p)) ||
                any_nan(a.dk, n_kv(&p)) || any_nan(a.dv, n_kv(&p)) || any_nan(b.o, n_q(&p)) ||
                any_nan(b.dq, n_q(&p)) || any_nan(b.dk, n_kv(&p)) || any_nan(b.dv, n_kv(&p));
      int bad_o = 0, bad_lse = 0, bad_dq = 0, checked = 0;
      for (int bb = 0; bb < s->b; ++bb)
        for (int h = 0; h < s->hq; ++h)
          for (int i = 0; i < s->sq; ++i) {
            int vis = 0;
            for (int j = 0; j < s->sk; ++j) vis |= ref_visible(&p, i, j);
            const double l = a.lse[((size_t)bb * s->hq + h) * s->sq + i];
            if (!vis) {
              ++checked;
              if (!(isinf(l) && l < 0)) bad_lse = 1;
            } else if (!isfinite(l)) {
              bad_lse = 1;
            }
            for (int d = 0; d < s->d; ++d) {
              const size_t e = (((size_t)bb * s->sq + i) * s->hq + h) * s->d + d;
              if (!vis && (a.o[e] != 0.0 || b.o[e] != 0.0)) bad_o = 1;
              if (!vis && (a.dq[e] != 0.0 || b.dq[e] != 0.0)) bad_dq = 1;
            }
          }
      const int same_kv = !memcmp(a.dk, b.dk, n_kv(&p) * sizeof(double)) &&
                          !memcmp(a.dv, b.dv, n_kv(&p) * sizeof(double));
      printf("    %-40s%s %d empty rows x heads: O==0 %s, LSE==-inf %s, dQ==0 %s, "
             "dK/dV unchanged %s, NaN %s\n",
             s->name, lowp ? " bf16" : "     ", checked, bad_o ? "NO" : "yes",
             bad_lse ? "NO" : "yes", bad_dq ? "NO" : "yes", same_kv ? "yes" : "NO",
             nan ? "YES" : "none");
      tensors_free(&a);
      tensors_free(&b);
      T_CHECK(empty_rows > 0, "%s: expected fully masked rows", s->name);
      T_CHECK(!nan, "%s: NaN in outputs", s->name);
      T_CHECK(!bad_o && !bad_lse && !bad_dq && same_kv, "%s: masked rows wrong", s->name);
    }
  return T_PASS;
}

/* L = sum(O * dout) through the forward. */
static double loss(const ref_problem_t *p, const double *q, const double *k, const double *v,
                   const double *dout, double *o, double *lse) {
  ref_attn_fwd(p, q, k, v, o, lse);
  double l = 0.0;
  for (size_t t = 0; t < n_q(p); ++t) l += o[t] * dout[t];
  return l;
}

/* Backward vs central finite differences of L, in double. */
static int test_finite_differences(void) {
  rng_seed_once();
  const shape_t shapes[] = {
      {"tiny causal GQA 2:1, all elements", 1, 3, 4, 2, 1, 3, 1, -1, -1},
      {"GQA 2:1 causal + window_left 3", 2, 9, 12, 4, 2, 8, 1, 3, -1},
      {"MQA window 2/1 sq>sk (empty rows)", 1, 10, 6, 4, 1, 5, 0, 2, 1},
      {"GQA 4:1 non-causal sq<sk", 1, 7, 11, 4, 1, 6, 0, -1, -1},
  };
  const double h = 1e-5;
  double worst = 0.0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
    const shape_t *s = &shapes[si];
    ref_problem_t p = make_problem(s, REF_ROUND_NONE, 1);
    tensors_t t;
    tensors_alloc(&t, &p);
    tensors_random(&t, &p, 0);
    ref_attn_bwd(&p, t.q, t.k, t.v, t.dout, t.dq, t.dk, t.dv);
    double *x[3] = {t.q, t.k, t.v};
    const double *g[3] = {t.dq, t.dk, t.dv};
    const size_t n[3] = {n_q(&p), n_kv(&p), n_kv(&p)};
    double err[3];
    int samples[3];
    for (int w = 0; w < 3; ++w) {
      const int all = si == 0 || n[w] <= 48;
      const int count = all ? (int)n[w] : 48;
      double e = 0.0;
      for (int c = 0; c < count; ++c) {
        const size_t idx = all ? (size_t)c : (size_t)(rng_next() % n[w]);
        const double x0 = x[w][idx];
        x[w][idx] = x0 + h;
        const double lp = loss(&p, t.q, t.k, t.v, t.dout, t.o, t.lse);
        x[w][idx] = x0 - h;
        const double lm = loss(&p, t.q, t.k, t.v, t.dout, t.o, t.lse);
        x[w][idx] = x0;
        const double fd = (lp - lm) / (2.0 * h);
        e = worse(e, fabs(fd - g[w][idx]));
      }
      const double m = max_abs(g[w], n[w]);
      err[w] = m > 0 ? e / m : e;
      samples[w] = count;
    }
    printf("    %-36s rel err dQ %.1e (%d)  dK %.1e (%d)  dV %.1e (%d)\n", s->name, err[0],
           samples[0], err[1], samples[1], err[2], samples[2]);
    tensors_free(&t);
    for (int w = 0; w < 3; ++w) {
      T_CHECK(err[w] < 1e-6, "%s: gradient %d vs finite differences: %.3g", s->name, w, err[w]);
      worst = worse(worst, err[w]);
    }
  }
  printf("    worst relative error vs finite differences: %.2e\n", worst);
  return T_PASS;
}

/* ||a - b|| / ||b|| (Frobenius); a steadier figure than the max for comparing dtypes. */
static double rms_rel_err(const double *a, const double *b, size_t n) {
  double num = 0.0, den = 0.0;
  for (size_t t = 0; t < n; ++t) {
    num += (a[t] - b[t]) * (a[t] - b[t]);
    den += b[t] * b[t];
  }
  return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* The low-precision variant's error vs the exact reference: nonzero, and of the size the dtype's
 * unit roundoff implies (bf16 2^-9, fp16 2^-12: fp16's error about 8x smaller). One draw per
 * shape, rounded to each dtype first, as the callers' inputs are. */
static int test_lowp_error(void) {
  rng_seed_once();
  const shape_t shapes[2] = {{"128x128 D64 H2", 1, 128, 128, 2, 2, 64, 0, -1, -1},
                             {"128x128 D64 H2 causal", 1, 128, 128, 2, 2, 64, 1, -1, -1}};
  const int dtypes[2] = {CUDADENT_DTYPE_BF16, CUDADENT_DTYPE_FP16};
  for (int si = 0; si < 2; ++si) {
    ref_problem_t p = make_problem(&shapes[si], REF_ROUND_NONE, 2);
    tensors_t draw;
    tensors_alloc(&draw, &p);
    tensors_random(&draw, &p, 0);
    double rms[2]; /* [dtype]: geometric mean of the four normwise errors */
    for (int di = 0; di < 2; ++di) {
      tensors_t ex, lp;
      tensors_alloc(&ex, &p);
      tensors_alloc(&lp, &p);
      const double *src[4] = {draw.q, draw.k, draw.v, draw.dout};
      double *in[4] = {ex.q, ex.k, ex.v, ex.dout};
      const size_t nin[4] = {n_q(&p), n_kv(&p), n_kv(&p), n_q(&p)};
      for (int w = 0; w < 4; ++w)
        for (size_t e = 0; e < nin[w]; ++e) in[w][e] = ref_round_to(dtypes[di], src[w][e]);
      p.round_dtype = REF_ROUND_NONE;
      ref_attn_fwd(&p, ex.q, ex.k, ex.v, ex.o, ex.lse);
      ref_attn_bwd(&p, ex.q, ex.k, ex.v, ex.dout, ex.dq, ex.dk, ex.dv);
      p.round_dtype = dtypes[di];
      ref_attn_fwd(&p, ex.q, ex.k, ex.v, lp.o, lp.lse);
      ref_attn_bwd(&p, ex.q, ex.k, ex.v, ex.dout, lp.dq, lp.dk, lp.dv);
      const double el = rel_err(lp.lse, ex.lse, n_lse(&p));
      const double mx[4] = {rel_err(lp.o, ex.o, n_q(&p)), rel_err(lp.dq, ex.dq, n_q(&p)),
                            rel_err(lp.dk, ex.dk, n_kv(&p)), rel_err(lp.dv, ex.dv, n_kv(&p))};
      const double rm[4] = {rms_rel_err(lp.o, ex.o, n_q(&p)), rms_rel_err(lp.dq, ex.dq, n_q(&p)),
                            rms_rel_err(lp.dk, ex.dk, n_kv(&p)),
                            rms_rel_err(lp.dv, ex.dv, n_kv(&p))};
      tensors_free(&ex);
      tensors_free(&lp);
      const char *dn = di ? "fp16" : "bf16";
      printf("    %s %-22s max|d|/max|ref|: O %.2e dQ %.2e dK %.2e dV %.2e\n", dn,
             shapes[si].name, mx[0], mx[1], mx[2], mx[3]);
      printf("    %s %-22s ||d||/||ref||:   O %.2e dQ %.2e dK %.2e dV %.2e  (LSE %.0e)\n", dn,
             "", rm[0], rm[1], rm[2], rm[3], el);
      T_CHECK(el == 0.0, "LSE must not depend on the rounding");
      /* bf16: ~1e-3, fp16: ~1e-4 (a decade of margin each way on the max). */
      const double lo = di ? 1e-5 : 1e-4, hi = di ? 2e-3 : 1.5e-2;
      double logsum = 0.0;
      for (int w = 0; w < 4; ++w) {
        T_CHECK(mx[w] > lo && mx[w] < hi, "%s error %d = %.3g outside (%.0e, %.0e)", dn, w,
                mx[w], lo, hi);
        T_CHECK(rm[w] > 0.0, "%s: no error at all: rounding not applied", dn);
        logsum += log(rm[w]);
      }
      rms[di] = exp(logsum / 4.0);
    }
    tensors_free(&draw);
    /* 3 more mantissa bits: fp16's error should be about 8x smaller. */
    const double ratio = rms[0] / rms[1];
    printf("    %-27s bf16/fp16 normwise error ratio %.1f (expected ~8)\n", shapes[si].name,
           ratio);
    T_CHECK(ratio > 4.0 && ratio < 16.0, "bf16/fp16 error ratio %.3g", ratio);
  }
  return T_PASS;
}

/* 16-bit conversions: known bit patterns, ties to even, subnormals, overflow, inf, NaN, and a
 * round trip of every pattern. */
static int test_conversions(void) {
  struct {
    double x;
    uint16_t h, b; /* expected fp16 and bf16 bits */
  } cases[] = {
      {1.0, 0x3C00, 0x3F80},
      {-2.0, 0xC000, 0xC000},
      {0.0, 0x0000, 0x0000},
      {-0.0, 0x8000, 0x8000},
      {0.1, 0x2E66, 0x3DCD},
      {3.141592653589793, 0x4248, 0x4049},
      {65504.0, 0x7BFF, 0x4780},                 /* fp16 max; bf16 rounds it up to 65536 */
      {65519.99, 0x7BFF, 0x4780},                /* below the fp16 overflow midpoint */
      {65520.0, 0x7C00, 0x4780},                 /* fp16 midpoint 65504|65536: ties to even -> inf */
      {-1e6, 0xFC00, 0xC974},                    /* fp16 overflow to -inf */
      {0x1p-24, 0x0001, 0x3380},                 /* fp16 smallest subnormal */
      {0x1p-25, 0x0000, 0x3300},                 /* half of it: tie -> even (0) */
      {0x1.000001p-25, 0x0001, 0x3300},          /* just above the tie */
      {0x3p-25, 0x0002, 0x33C0},                 /* 1.5 ulp: tie -> even (2) */
      {0x1p-14, 0x0400, 0x3880},                 /* fp16 smallest normal */
      {0x1p-14 - 0x1p-25, 0x0400, 0x3880},       /* 1023.5 subnormal ulps: tie -> 1024 */
      {0x1p-14 - 0x3p-25, 0x03FE, 0x3880},       /* 1022.5: tie -> 1022 */
      {1.0 + 0x1p-11, 0x3C00, 0x3F80},           /* fp16 tie -> even */
      {1.0 + 0x3p-11, 0x3C02, 0x3F80},           /* fp16 tie -> even (up) */
      {1.0 + 0x1p-8, 0x3C04, 0x3F80},            /* bf16 tie -> even */
      {1.0 + 0x3p-8, 0x3C0C, 0x3F82},            /* bf16 tie -> even (up) */
      {1.0 + 0x1p-8 + 0x1p-30, 0x3C04, 0x3F81},  /* above the bf16 tie by less than float's ulp:
                                                    a double->float->bf16 path gets 0x3F80 */
      {0x1p-133, 0x0000, 0x0001},                /* bf16 smallest subnormal */
      {0x1p-134, 0x0000, 0x0000},                /* its half: tie -> 0 */
      {0x3p-134, 0x0000, 0x0002},                /* 1.5 ulp: tie -> 2 */
      {0x1p-126, 0x0000, 0x0080},                /* bf16 smallest normal */
      {0x1.fep127, 0x7C00, 0x7F7F},              /* bf16 max */
      {0x1.fefffffffffffp127, 0x7C00, 0x7F7F},    /* just below the bf16 overflow midpoint */
      {0x1.ffp127, 0x7C00, 0x7F80},              /* the midpoint: ties to even -> inf */
      {1e300, 0x7C00, 0x7F80},
      {1e-300, 0x0000, 0x0000},
      {-1e-300, 0x8000, 0x8000},
      {INFINITY, 0x7C00, 0x7F80},
      {-INFINITY, 0xFC00, 0xFF80},
  };
  int bad = 0;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    const uint16_t h = ref_double_to_half_bits(cases[c].x);
    const uint16_t b = ref_double_to_bf16_bits(cases[c].x);
    if (h != cases[c].h || b != cases[c].b) {
      printf("    %a: fp16 %04X (want %04X)  bf16 %04X (want %04X)\n", cases[c].x, h, cases[c].h,
             b, cases[c].b);
      bad = 1;
    }
  }
  T_CHECK(!bad, "conversion bit patterns wrong");
  const uint16_t hn = ref_double_to_half_bits(NAN), bn = ref_double_to_bf16_bits(NAN);
  T_CHECK((hn & 0x7C00) == 0x7C00 && (hn & 0x03FF) != 0, "fp16 NaN -> %04X", hn);
  T_CHECK((bn & 0x7F80) == 0x7F80 && (bn & 0x007F) != 0, "bf16 NaN -> %04X", bn);
  /* Decoding. */
  T_CHECK(ref_half_bits_to_double(0x0001) == 0x1p-24, "fp16 0001");
  T_CHECK(ref_half_bits_to_double(0x03FF) == 1023 * 0x1p-24, "fp16 03FF");
  T_CHECK(ref_half_bits_to_double(0x7BFF) == 65504.0, "fp16 7BFF");
  T_CHECK(ref_half_bits_to_double(0x3555) == 0.333251953125, "fp16 3555");
  T_CHECK(ref_half_bits_to_double(0xFC00) == -INFINITY, "fp16 FC00");
  T_CHECK(isnan(ref_half_bits_to_double(0x7E00)) && isnan(ref_half_bits_to_double(0xFC01)),
          "fp16 NaN decode");
  T_CHECK(signbit(ref_half_bits_to_double(0x8000)) && ref_half_bits_to_double(0x8000) == 0.0,
          "fp16 -0");
  T_CHECK(ref_bf16_bits_to_double(0x0001) == 0x1p-133, "bf16 0001");
  T_CHECK(ref_bf16_bits_to_double(0x7F7F) == 0x1.fep127, "bf16 7F7F");
  T_CHECK(ref_bf16_bits_to_double(0xC049) == -3.140625, "bf16 C049");
  T_CHECK(ref_bf16_bits_to_double(0x7F80) == INFINITY, "bf16 7F80");
  T_CHECK(isnan(ref_bf16_bits_to_double(0x7FC0)) && isnan(ref_bf16_bits_to_double(0xFF81)),
          "bf16 NaN decode");
  /* Every non-NaN pattern round-trips; every NaN decodes to NaN and re-encodes to a NaN. */
  int trips = 0;
  for (uint32_t u = 0; u < 65536; ++u) {
    const uint16_t x = (uint16_t)u;
    const double hd = ref_half_bits_to_double(x), bd = ref_bf16_bits_to_double(x);
    const uint16_t h2 = ref_double_to_half_bits(hd), b2 = ref_double_to_bf16_bits(bd);
    if (isnan(hd)) {
      T_CHECK((h2 & 0x7C00) == 0x7C00 && (h2 & 0x3FF), "fp16 NaN %04X -> %04X", x, h2);
    } else {
      T_CHECK(h2 == x, "fp16 %04X -> %a -> %04X", x, hd, h2);
      ++trips;
    }
    if (isnan(bd)) {
      T_CHECK((b2 & 0x7F80) == 0x7F80 && (b2 & 0x7F), "bf16 NaN %04X -> %04X", x, b2);
    } else {
      T_CHECK(b2 == x, "bf16 %04X -> %a -> %04X", x, bd, b2);
      ++trips;
    }
  }
  /* Midpoints between neighbouring finite fp16 values round to the even one. */
  int mids = 0;
  for (uint32_t u = 0; u < 0x7BFF; ++u) {
    const double a = ref_half_bits_to_double((uint16_t)u);
    const double b = ref_half_bits_to_double((uint16_t)(u + 1));
    const uint16_t r = ref_double_to_half_bits(0.5 * (a + b));
    const uint16_t want = (uint16_t)((u & 1) ? u + 1 : u);
    T_CHECK(r == want, "fp16 midpoint of %04X,%04X -> %04X", u, u + 1, r);
    T_CHECK(ref_double_to_half_bits(-0.5 * (a + b)) == (uint16_t)(want | 0x8000),
            "fp16 negative midpoint");
    ++mids;
  }
  for (uint32_t u = 0; u < 0x7F7F; ++u) {
    const double a = ref_bf16_bits_to_double((uint16_t)u);
    const double b = ref_bf16_bits_to_double((uint16_t)(u + 1));
    const uint16_t r = ref_double_to_bf16_bits(0.5 * (a + b));
    T_CHECK(r == ((u & 1) ? u + 1 : u), "bf16 midpoint of %04X,%04X -> %04X", u, u + 1, r);
    ++mids;
  }
  /* ref_round_to: rounds for fp16/bf16, identity otherwise. */
  T_CHECK(ref_round_to(CUDADENT_DTYPE_FP16, 0.1) == ref_half_bits_to_double(0x2E66), "round fp16");
  T_CHECK(ref_round_to(CUDADENT_DTYPE_BF16, 0.1) == ref_bf16_bits_to_double(0x3DCD), "round bf16");
  T_CHECK(ref_round_to(REF_ROUND_NONE, 0.1) == 0.1, "round none");
  T_CHECK(ref_round_to(CUDADENT_DTYPE_FP8_E4M3, 0.1) == 0.1, "round fp8 (unchanged)");
  printf("    %zu known patterns, %d round trips, %d ties-to-even midpoints: all exact\n",
         sizeof cases / sizeof cases[0], trips, mids);
  return T_PASS;
}

/* threads = 1, 3 and 0 (all CPUs) give bit-identical results. */
static int test_threads(void) {
  rng_seed_once();
  const shape_t s = {"", 2, 70, 90, 6, 2, 32, 1, 20, -1};
  for (int lowp = 0; lowp < 2; ++lowp) {
    ref_problem_t p = make_problem(&s, lowp ? CUDADENT_DTYPE_FP16 : REF_ROUND_NONE, 1);
    tensors_t r[3];
    const int threads[3] = {1, 3, 0};
    for (int t = 0; t < 3; ++t) {
      tensors_alloc(&r[t], &p);
      if (t == 0) {
        tensors_random(&r[0], &p, 1);
      } else {
        memcpy(r[t].q, r[0].q, n_q(&p) * sizeof(double));
        memcpy(r[t].k, r[0].k, n_kv(&p) * sizeof(double));
        memcpy(r[t].v, r[0].v, n_kv(&p) * sizeof(double));
        memcpy(r[t].dout, r[0].dout, n_q(&p) * sizeof(double));
      }
      p.threads = threads[t];
      ref_attn_fwd(&p, r[t].q, r[t].k, r[t].v, r[t].o, r[t].lse);
      ref_attn_bwd(&p, r[t].q, r[t].k, r[t].v, r[t].dout, r[t].dq, r[t].dk, r[t].dv);
    }
    int same = 1;
    for (int t = 1; t < 3; ++t)
      same &= !memcmp(r[t].o, r[0].o, n_q(&p) * sizeof(double)) &&
              !memcmp(r[t].lse, r[0].lse, n_lse(&p) * sizeof(double)) &&
              !memcmp(r[t].dq, r[0].dq, n_q(&p) * sizeof(double)) &&
              !memcmp(r[t].dk, r[0].dk, n_kv(&p) * sizeof(double)) &&
              !memcmp(r[t].dv, r[0].dv, n_kv(&p) * sizeof(double));
    const int finite = !any_nan(r[0].o, n_q(&p)) && !any_nan(r[0].lse, n_lse(&p)) &&
                       !any_nan(r[0].dq, n_q(&p)) && !any_nan(r[0].dk, n_kv(&p)) &&
                       !any_nan(r[0].dv, n_kv(&p));
    for (int t = 0; t < 3; ++t) tensors_free(&r[t]);
    printf("    %s: threads 1 / 3 / all: O, LSE, dQ, dK, dV %s\n", lowp ? "fp16 variant" : "exact",
           same ? "bit-identical" : "DIFFER");
    T_CHECK(same && finite, "results depend on the thread count");
  }
  return T_PASS;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* B=1, H=2, S=1024, D=128 forward + backward on all CPUs. */
static int test_timing(void) {
  rng_seed_once();
  const shape_t s = {"", 1, 1024, 1024, 2, 2, 128, 0, -1, -1};
  ref_problem_t p = make_problem(&s, REF_ROUND_NONE, 0);
  tensors_t t;
  tensors_alloc(&t, &p);
  tensors_random(&t, &p, 0);
  const double t0 = now_s();
  ref_attn_fwd(&p, t.q, t.k, t.v, t.o, t.lse);
  const double t1 = now_s();
  ref_attn_bwd(&p, t.q, t.k, t.v, t.dout, t.dq, t.dk, t.dv);
  const double t2 = now_s();
  const int nan = any_nan(t.o, n_q(&p)) || any_nan(t.lse, n_lse(&p)) || any_nan(t.dq, n_q(&p)) ||
                  any_nan(t.dk, n_kv(&p)) || any_nan(t.dv, n_kv(&p));
  tensors_free(&t);
  printf("    B=1 H=2 S=1024 D=128: forward %.2f s, backward %.2f s, total %.2f s\n", t1 - t0,
         t2 - t1, t2 - t0);
  T_CHECK(!nan, "NaN in outputs");
  T_CHECK(t2 - t0 <= 60.0, "too slow: %.1f s", t2 - t0);
  return T_PASS;
}

void register_reference_tests(void) {
  t_register("reference_fwd_bwd_vs_naive", test_vs_naive);
  t_register("reference_lowp_vs_naive", test_lowp_vs_naive);
  t_register("reference_hand_computed", test_hand_computed);
  t_register("reference_fully_masked_rows", test_fully_masked);
  t_register("reference_bwd_vs_finite_differences", test_finite_differences);
  t_register("reference_lowp_error_magnitude", test_lowp_error);
  t_register("reference_conversions", test_conversions);
  t_register("reference_thread_count_independence", test_threads);
  t_register("reference_timing", test_timing);
}
