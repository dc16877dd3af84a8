/*
 * test_reference.c - CPU tests of the double-precision reference's values (src/reference): against
 * the naive implementation written separately (tests/reference_fixtures.c; exact and with the
 * low-precision rounding points), hand-computed values, fully masked rows, and the backward
 * against finite differences. Its rounding, determinism and speed: tests/test_reference_props.c.
 *
 * Inputs are fresh random draws each run (normal, and a variant with rare large outliers); the
 * seed is printed and can be fixed with CUDADENT_TEST_SEED=<n>.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cudadent.h"
#include "harness.h"
#include "reference.h"
#include "reference_fixtures.h"

void register_reference_tests(void);

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

void register_reference_tests(void) {
  t_register("reference_fwd_bwd_vs_naive", test_vs_naive);
  t_register("reference_lowp_vs_naive", test_lowp_vs_naive);
  t_register("reference_hand_computed", test_hand_computed);
  t_register("reference_fully_masked_rows", test_fully_masked);
  t_register("reference_bwd_vs_finite_differences", test_finite_differences);
}
