/*
 * test_reference_props.c - CPU tests of the double-precision reference's (src/reference)
 * rounding, determinism and speed: the low-precision variant's error magnitude against the exact
 * reference, the 16-bit conversions (bit patterns, ties to even, round trips), thread-count
 * independence (bit for bit) and the time of one forward + backward. Registered right after
 * tests/test_reference.c's tests, sharing their fixtures and random stream
 * (tests/reference_fixtures.h).
 *
 * Inputs are fresh random draws each run; the seed is printed and can be fixed with
 * CUDADENT_TEST_SEED=<n>.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cudadent.h"
#include "harness.h"
#include "reference.h"
#include "reference_fixtures.h"

void register_reference_props_tests(void);

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

void register_reference_props_tests(void) {
  t_register("reference_lowp_error_magnitude", test_lowp_error);
  t_register("reference_conversions", test_conversions);
  t_register("reference_thread_count_independence", test_threads);
  t_register("reference_timing", test_timing);
}
