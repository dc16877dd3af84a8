/*
 * convert.c - round-to-nearest-even conversions between double and the 16-bit float formats
 * (fp16, bf16) of the reference's low-precision variant (reference.h).
 */
#include <math.h>
#include <stdint.h>

#include "reference.h"

/* ---- 16-bit float conversions ---------------------------------------------------------------- */

/* Round |x| (finite, non-zero, positive) to a binary format with mbits explicit mantissa bits and
 * exponent bias `bias` (IEEE-like: subnormals, max exponent reserved for inf/NaN); returns the bit
 * pattern without sign. Round to nearest, ties to even, directly from double (no double
 * rounding through float). */
static uint16_t round_to_bits(double ax, int mbits, int bias, int max_biased_exp) {
  const int emin = 1 - bias;
  const int emax = max_biased_exp - 1 - bias;
  int ex;
  (void)frexp(ax, &ex); /* ax = f * 2^ex, f in [0.5, 1) */
  int e = ex - 1;       /* ax in [2^e, 2^(e+1)) */
  if (e > emax) return (uint16_t)(max_biased_exp << mbits); /* >= 2^(emax+1): inf */
  if (e < emin) e = emin;                                    /* subnormal range: fixed quantum */
  const int qexp = e - mbits;                                /* value of one mantissa ulp */
  const double m = ldexp(ax, -qexp);                         /* exact: power-of-two scaling */
  double r = floor(m);
  const double frac = m - r;
  if (frac > 0.5 || (frac == 0.5 && fmod(r, 2.0) != 0.0)) r += 1.0;
  uint32_t ri = (uint32_t)r; /* r <= 2^(mbits+1) */
  const uint32_t hidden = 1u << mbits;
  if (ri == 2u * hidden) { /* rounded up into the next binade */
    ri = hidden;
    e += 1;
    if (e > emax) return (uint16_t)(max_biased_exp << mbits);
  }
  if (ri < hidden) return (uint16_t)ri; /* subnormal (or zero); e == emin here */
  return (uint16_t)(((uint32_t)(e + bias) << mbits) | (ri - hidden));
}

static uint16_t double_to_bits(double x, int mbits, int bias, int max_biased_exp,
                               uint16_t qnan) {
  const uint16_t sign = (uint16_t)(signbit(x) ? 1u << 15 : 0u);
  if (isnan(x)) return (uint16_t)(sign | qnan);
  if (isinf(x)) return (uint16_t)(sign | (max_biased_exp << mbits));
  if (x == 0.0) return sign;
  return (uint16_t)(sign | round_to_bits(fabs(x), mbits, bias, max_biased_exp));
}

static double bits_to_double(uint16_t b, int mbits, int bias, int max_biased_exp) {
  const double sign = (b & 0x8000u) ? -1.0 : 1.0;
  const int be = (int)((b >> mbits) & (unsigned)max_biased_exp);
  const uint32_t mant = b & ((1u << mbits) - 1u);
  if (be == max_biased_exp) return mant ? NAN : sign * INFINITY;
  if (be == 0) return sign * ldexp((double)mant, 1 - bias - mbits);
  return sign * ldexp((double)((1u << mbits) | mant), be - bias - mbits);
}

uint16_t ref_double_to_half_bits(double x) { return double_to_bits(x, 10, 15, 31, 0x7E00u); }
uint16_t ref_double_to_bf16_bits(double x) { return double_to_bits(x, 7, 127, 255, 0x7FC0u); }
double ref_half_bits_to_double(uint16_t h) { return bits_to_double(h, 10, 15, 31); }
double ref_bf16_bits_to_double(uint16_t b) { return bits_to_double(b, 7, 127, 255); }

double ref_round_to(int dtype, double x) {
  if (dtype == CUDADENT_DTYPE_FP16) return ref_half_bits_to_double(ref_double_to_half_bits(x));
  if (dtype == CUDADENT_DTYPE_BF16) return ref_bf16_bits_to_double(ref_double_to_bf16_bits(x));
  return x;
}
