/*
 * varlen.c - the reference's ragged batches (reference.h; cudadent.h, "features of layout v2").
 *
 * A varlen problem is batch sequences packed along the token dimension: q, dq [total_q][heads_q]
 * [head_dim], o, dout [total_q][heads_q][head_dim_v], k, dk [total_k][heads_kv][head_dim],
 * v, dv [total_k][heads_kv][head_dim_v], lse [heads_q][total_q]. Sequence b's tokens are
 * contiguous, so its slice of each tensor is exactly the dense layout of batch 1: each sequence
 * is computed by the dense reference on pointers into the packed tensors (its masks aligned to
 * its own lengths, its keys cut to seqused_k), and only its LSE, laid out [heads_q][len] there,
 * is scattered into the packed [heads_q][total_q].
 *
 * Invalid cu_seqlens / seqused_k are clamped as cudadent.h says, so nothing outside the tensors
 * is read or written; tokens in no sequence's range get O = 0, LSE = -inf, dQ = 0, dK = dV = 0
 * (everything is cleared first). Where invalid ranges overlap, the later sequence's result
 * stands (cudadent.h leaves it unspecified).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"

static int clamp_int(long long x, long long lo, long long hi) {
  return (int)(x < lo ? lo : x > hi ? hi : x);
}

static long long min_ll(long long a, long long b) { return a < b ? a : b; }

void ref_varlen_ranges(const ref_problem_t *p, int b, int *q0, int *q1, int *k0, int *k1,
                       int *used) {
  const long long tq = p->total_q, tk = p->total_k;
  *q0 = clamp_int(p->cu_seqlens_q[b], 0, tq);
  *q1 = clamp_int(p->cu_seqlens_q[b + 1], *q0, min_ll(tq, (long long)*q0 + p->seqlen_q));
  *k0 = clamp_int(p->cu_seqlens_k[b], 0, tk);
  *k1 = clamp_int(p->cu_seqlens_k[b + 1], *k0, min_ll(tk, (long long)*k0 + p->seqlen_k));
  *used = p->seqused_k ? clamp_int(p->seqused_k[b], 0, *k1 - *k0) : *k1 - *k0;
}

static int dv_of(const ref_problem_t *p) { return p->head_dim_v ? p->head_dim_v : p->head_dim; }

static int varlen_ok(const ref_problem_t *p) {
  return p->cu_seqlens_q && p->cu_seqlens_k && p->batch >= 0 && p->total_q >= 0 &&
         p->total_k >= 0 && p->seqlen_q >= 0 && p->seqlen_k >= 0 && p->heads_kv > 0 &&
         p->heads_q >= 0 && p->head_dim >= 0 && p->head_dim_v >= 0;
}

/* Sequence b as a dense problem of batch 1 (its lengths; no varlen fields). */
static ref_problem_t sequence(const ref_problem_t *p, int len_q, int len_k) {
  ref_problem_t s = *p;
  s.batch = 1;
  s.seqlen_q = len_q;
  s.seqlen_k = len_k;
  s.cu_seqlens_q = s.cu_seqlens_k = s.seqused_k = NULL;
  s.total_q = s.total_k = 0;
  return s;
}

static void fill(double *x, size_t n, double value) {
  if (!x) return;
  for (size_t t = 0; t < n; ++t) x[t] = value;
}

void ref_varlen_fwd(const ref_problem_t *p, const double *q, const double *k, const double *v,
                    double *o, double *lse) {
  if (!varlen_ok(p) || (!o && !lse)) return;
  const int D = p->head_dim, Dv = dv_of(p), Hq = p->heads_q, Hkv = p->heads_kv;
  const size_t tq = (size_t)p->total_q;
  fill(o, tq * Hq * Dv, 0.0);
  fill(lse, tq * Hq, -INFINITY);
  double *lse_seq = malloc(((size_t)Hq * (p->seqlen_q > 0 ? p->seqlen_q : 1)) * sizeof(double));
  if (!lse_seq) {
    fprintf(stderr, "ref_varlen_fwd: out of memory; outputs set to NaN\n");
    fill(o, tq * Hq * Dv, NAN);
    fill(lse, tq * Hq, NAN);
    return;
  }
  for (int b = 0; b < p->batch; ++b) {
    int q0, q1, k0, k1, used;
    ref_varlen_ranges(p, b, &q0, &q1, &k0, &k1, &used);
    const int len = q1 - q0;
    if (len == 0) continue;
    ref_problem_t s = sequence(p, len, used);
    if (p->given_o) s.given_o = p->given_o + (size_t)q0 * Hq * Dv;
    ref_attn_fwd(&s, q + (size_t)q0 * Hq * D, k + (size_t)k0 * Hkv * D, v + (size_t)k0 * Hkv * Dv,
                 o ? o + (size_t)q0 * Hq * Dv : NULL, lse ? lse_seq : NULL);
    if (lse)
      for (int h = 0; h < Hq; ++h)
        for (int i = 0; i < len; ++i) lse[(size_t)h * tq + q0 + i] = lse_seq[(size_t)h * len + i];
  }
  free(lse_seq);
}

void ref_varlen_bwd(const ref_problem_t *p, const double *q, const double *k, const double *v,
                    const double *dout, double *dq, double *dk, double *dv) {
  if (!varlen_ok(p)) return;
  const int D = p->head_dim, Dv = dv_of(p), Hq = p->heads_q, Hkv = p->heads_kv;
  fill(dq, (size_t)p->total_q * Hq * D, 0.0);
  fill(dk, (size_t)p->total_k * Hkv * D, 0.0);
  fill(dv, (size_t)p->total_k * Hkv * Dv, 0.0);
  for (int b = 0; b < p->batch; ++b) {
    int q0, q1, k0, k1, used;
    ref_varlen_ranges(p, b, &q0, &q1, &k0, &k1, &used);
    if (q1 == q0 || used == 0) continue; /* no query sees a key: the zeros stand */
    ref_problem_t s = sequence(p, q1 - q0, used);
    if (p->given_o) s.given_o = p->given_o + (size_t)q0 * Hq * Dv;
    ref_attn_bwd(&s, q + (size_t)q0 * Hq * D, k + (size_t)k0 * Hkv * D, v + (size_t)k0 * Hkv * Dv,
                 dout + (size_t)q0 * Hq * Dv, dq + (size_t)q0 * Hq * D, dk + (size_t)k0 * Hkv * D,
                 dv + (size_t)k0 * Hkv * Dv);
  }
}
