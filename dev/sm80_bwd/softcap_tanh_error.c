/*
 * softcap_tanh_error.c - does tanh.approx.f32's error keep the softcap backward inside the test
 * criterion? A CPU model (no GPU): one head, no mask, double precision except where marked.
 *
 *   cc -O2 -o /tmp/softcap_tanh_error dev/sm80_bwd/softcap_tanh_error.c -lm && /tmp/softcap_tanh_error
 *
 * ref:  the exact backward (src/reference/reference.c's formulas), inputs unrounded.
 * lowp: the criterion's low-precision reference: inputs, P (in O and dV) and dS rounded to the
 *       dtype, O rounded, delta = dO . O~.
 * kern: lowp, but t = tanh(s / c) carries a relative error e u (u uniform in [-1, 1], or u = 1:
 *       every error one way): e = 2^-10.987 (the PTX ISA's bound for tanh.approx.f32) and
 *       e = 1.1e-5 (its measured maximum). LSE: recomputed from the perturbed t (a forward with
 *       the same tanh) or the exact one (a reference forward).
 * Criterion (flash-attn's): max|kern - ref| <= 2 max|lowp - ref| + 1e-5, per dQ, dK, dV. Printed:
 * the worst ratio max|kern - ref| / (2 max|lowp - ref| + 1e-5) over dQ, dK, dV (<= 1 passes).
 * Result (issue 27): with the measured error every case passes (ratio <= 0.66; 0.5 is no tanh
 * error at all); with the PTX bound bf16 passes (<= 0.94) but fp16 fails 21 of 48 cases (up to
 * 2.6 with the forward's LSE from the same tanh, 7.9 with an exact LSE and every error one way),
 * where scores are large (q x 4) or capped hard. So tanh.approx stands on its measured accuracy:
 * the GPU tests of fp16 softcap with large scores are the check (docs/kernels/sm80_bwd.md 9).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SQ = 128, SK = 192, D = 64 };

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {
  rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
  return (double)(rng >> 11) / 9007199254740992.0;
}
static double nrand(void) {
  const double u = urand() + 1e-300, v = urand();
  return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

/* round to bf16 or fp16 (nearest even), via float */
static double rnd(double x, int fp16) {
  float f = (float)x;
  if (fp16) {
    if (f == 0 || !isfinite(f)) return f;
    int e;
    frexpf(f, &e); /* f = m 2^e, 0.5 <= |m| < 1 */
    int q = e - 11; /* 11 significant bits */
    if (q < -24) q = -24; /* subnormals */
    return ldexp(nearbyint(ldexp(f, -q)), q);
  }
  uint32_t u;
  memcpy(&u, &f, 4);
  u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  memcpy(&f, &u, 4);
  return f;
}

static double q[SQ][D], k[SK][D], v[SK][D], dO[SQ][D];

/* mode 0: ref, 1: lowp, 2: kern. eps, sign1: tanh error model; lse_exact: LSE from the exact t */
static void bwd(int mode, int fp16, double scale, double c, double eps, int sign1, int lse_exact,
                double dq[SQ][D], double dk[SK][D], double dv[SK][D]) {
  static double qq[SQ][D], kk[SK][D], vv[SK][D], dd[SQ][D];
  const int r = mode > 0;
  for (int i = 0; i < SQ; ++i)
    for (int d = 0; d < D; ++d) { qq[i][d] = r ? rnd(q[i][d], fp16) : q[i][d]; dd[i][d] = r ? rnd(dO[i][d], fp16) : dO[i][d]; }
  for (int j = 0; j < SK; ++j)
    for (int d = 0; d < D; ++d) { kk[j][d] = r ? rnd(k[j][d], fp16) : k[j][d]; vv[j][d] = r ? rnd(v[j][d], fp16) : v[j][d]; }
  memset(dq, 0, sizeof(double) * SQ * D);
  memset(dk, 0, sizeof(double) * SK * D);
  memset(dv, 0, sizeof(double) * SK * D);
  uint64_t save = rng;
  rng = 12345; /* the same tanh errors for both LSE variants */
  for (int i = 0; i < SQ; ++i) {
    double t[SK], te[SK], z[SK], p[SK], m = -INFINITY, me = -INFINITY;
    for (int j = 0; j < SK; ++j) {
      double s = 0;
      for (int d = 0; d < D; ++d) s += qq[i][d] * kk[j][d];
      s *= scale;
      te[j] = tanh(s / c);
      t[j] = te[j];
      if (mode == 2) t[j] *= 1 + eps * (sign1 ? 1.0 : 2 * urand() - 1);
      z[j] = c * t[j];
      if (z[j] > m) m = z[j];
      if (c * te[j] > me) me = c * te[j];
    }
    double l = 0, le = 0;
    for (int j = 0; j < SK; ++j) { l += exp(z[j] - m); le += exp(c * te[j] - me); }
    const double lse = (mode == 2 && lse_exact) ? me + log(le) : m + log(l);
    /* O as the forward gives it: from rounded P, rounded (lowp / kern); exact for ref */
    double o[D] = {0};
    for (int j = 0; j < SK; ++j) {
      p[j] = exp(z[j] - lse);
      const double pr = r ? rnd(p[j], fp16) : p[j];
      for (int d = 0; d < D; ++d) o[d] += pr * vv[j][d];
    }
    double delta = 0;
    for (int d = 0; d < D; ++d) delta += dd[i][d] * (r ? rnd(o[d], fp16) : o[d]);
    for (int j = 0; j < SK; ++j) {
      double dp = 0;
      for (int d = 0; d < D; ++d) dp += dd[i][d] * vv[j][d];
      double ds = p[j] * (dp - delta) * (1 - t[j] * t[j]);
      const double pr = r ? rnd(p[j], fp16) : p[j];
      if (r) ds = rnd(ds, fp16);
      for (int d = 0; d < D; ++d) {
        dq[i][d] += scale * ds * kk[j][d];
        dk[j][d] += scale * ds * qq[i][d];
        dv[j][d] += pr * dd[i][d];
      }
    }
  }
  rng = save;
}

static double maxdiff(const double *a, const double *b, int n) {
  double m = 0;
  for (int i = 0; i < n; ++i) m = fmax(m, fabs(a[i] - b[i]));
  return m;
}

int main(void) {
  static double rq[SQ][D], rk[SK][D], rv[SK][D], lq[SQ][D], lk[SK][D], lv[SK][D], kq[SQ][D], kk_[SK][D], kv[SK][D];
  const double eps_ptx = pow(2, -10.987), eps_meas = 1.1e-5;
  const double caps[] = {1, 5, 30, 50};
  const double temps[] = {1, 4}; /* q scaled by this: scores ~ N(0, temp^2) */
  printf("worst max|kern-ref| / (2 max|lowp-ref| + 1e-5) over dQ dK dV (<= 1 passes); SQ %d SK %d D %d\n", SQ, SK, D);
  printf("%-5s %4s %4s | %-23s | %-23s | %-23s\n", "dtype", "temp", "cap", "eps 2^-11 random u", "eps 2^-11 u = 1", "eps 1.1e-5 u = 1");
  printf("%-15s | %-11s %-11s | %-11s %-11s | %-11s %-11s\n", "", "LSE same t", "LSE exact", "same t", "exact", "same t", "exact");
  int fails = 0;
  for (int fp16 = 0; fp16 < 2; ++fp16)
    for (int ti = 0; ti < 2; ++ti)
      for (int ci = 0; ci < 4; ++ci) {
        rng = 0x9E3779B97F4A7C15ull + 17 * ti + ci;
        for (int i = 0; i < SQ; ++i) for (int d = 0; d < D; ++d) { q[i][d] = temps[ti] * nrand(); dO[i][d] = nrand(); }
        for (int j = 0; j < SK; ++j) for (int d = 0; d < D; ++d) { k[j][d] = nrand(); v[j][d] = nrand(); }
        const double scale = 1 / sqrt((double)D), c = caps[ci];
        bwd(0, fp16, scale, c, 0, 0, 0, rq, rk, rv);
        bwd(1, fp16, scale, c, 0, 0, 0, lq, lk, lv);
        const double bq = 2 * maxdiff(&lq[0][0], &rq[0][0], SQ * D) + 1e-5;
        const double bk = 2 * maxdiff(&lk[0][0], &rk[0][0], SK * D) + 1e-5;
        const double bv = 2 * maxdiff(&lv[0][0], &rv[0][0], SK * D) + 1e-5;
        printf("%-5s %4g %4g |", fp16 ? "fp16" : "bf16", temps[ti], c);
        const double eps[3] = {eps_ptx, eps_ptx, eps_meas};
        const int sign1[3] = {0, 1, 1};
        for (int m = 0; m < 3; ++m)
          for (int le = 0; le < 2; ++le) {
            bwd(2, fp16, scale, c, eps[m], sign1[m], le, kq, kk_, kv);
            double w = maxdiff(&kq[0][0], &rq[0][0], SQ * D) / bq;
            w = fmax(w, maxdiff(&kk_[0][0], &rk[0][0], SK * D) / bk);
            w = fmax(w, maxdiff(&kv[0][0], &rv[0][0], SK * D) / bv);
            fails += w > 1;
            printf(" %-11.3f", w);
          }
        printf("\n");
      }
  printf("%d of %d cases over the bound\n", fails, 2 * 2 * 4 * 6);
  return 0;
}
