/*
 * problem_check.c - the check of a problem's outputs against the double-precision CPU reference
 * (problem.h's criterion): downloading the outputs (and the padding's poison), the comparison,
 * its printout, the accuracy over many seeds, and the deterministic backward's repeatability.
 */
#define _POSIX_C_SOURCE 200809L
#include "problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "problem_internal.h"
#include "reference.h"

static double from_bits(cudadent_dtype_t dtype, uint16_t b) {
  return dtype == CUDADENT_DTYPE_BF16 ? ref_bf16_bits_to_double(b) : ref_half_bits_to_double(b);
}

static double *dense_to_double(const uint16_t *bits, size_t n, cudadent_dtype_t dtype) {
  double *x = malloc((n ? n : 1) * sizeof *x);
  if (x)
    for (size_t i = 0; i < n; ++i) x[i] = from_bits(dtype, bits[i]);
  return x;
}

/* Downloads a 16-bit output; returns a dense double array (caller frees) and counts padding
 * (gap) elements that no longer hold what they held before the call (the poison, or
 * pt->expect_gaps) into *clobbered. */
static double *download_output(const problem_tensor_t *pt, cudadent_dtype_t dtype,
                               long *clobbered) {
  const int *dm = pt->dims;
  const size_t n = (size_t)dm[0] * dm[1] * dm[2] * dm[3];
  uint16_t *raw = malloc((pt->alloc_elems ? pt->alloc_elems : 1) * 2);
  unsigned char *inside = calloc(pt->alloc_elems ? pt->alloc_elems : 1, 1);
  double *x = malloc((n ? n : 1) * sizeof *x);
  if (!raw || !inside || !x ||
      cudaMemcpy(raw, pt->device, pt->alloc_elems * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
    free(raw);
    free(inside);
    free(x);
    return NULL;
  }
  size_t i = 0;
  for (int b = 0; b < dm[0]; ++b)
    for (int s = 0; s < dm[1]; ++s)
      for (int h = 0; h < dm[2]; ++h)
        for (int d = 0; d < dm[3]; ++d, ++i) {
          int64_t off = offset_of(&pt->t, b, s, h, d);
          inside[off] = 1;
          x[i] = from_bits(dtype, raw[off]);
        }
  long bad = 0;
  for (size_t j = 0; j < pt->alloc_elems; ++j)
    if (!inside[j] && raw[j] != (pt->expect_gaps ? pt->expect_gaps[j] : (uint16_t)POISON_BITS))
      ++bad;
  *clobbered = bad;
  free(raw);
  free(inside);
  return x;
}

/* lowp is the reference with P (and dS) rounded to the input dtype; like flash-attn's out_pt, a
 * tensor of that dtype, so its values are rounded to the dtype here before they are compared. */
static void compare(error_figure_t *f, const double *x, const double *ref, const double *lowp,
                    size_t n, cudadent_dtype_t dtype) {
  double e = 0.0, el = 0.0;
  long bad = f->bad_elements;
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(x[i])) {
      ++bad;
      continue;
    }
    double d = fabs(x[i] - ref[i]);
    double dl = fabs(ref_round_to(dtype, lowp[i]) - ref[i]);
    if (d > e) {
      e = d;
      f->worst = i;
      f->worst_x = x[i];
      f->worst_ref = ref[i];
      f->worst_lowp = ref_round_to(dtype, lowp[i]);
    }
    if (dl > el) el = dl;
  }
  f->max_err = e;
  f->max_err_lowp = el;
  f->tolerance = 2.0 * el + 1e-5;
  f->bad_elements = bad;
  f->pass = bad == 0 && e <= f->tolerance;
}

static void ref_problem_of(const problem_t *pr, ref_problem_t *rp, int round_dtype) {
  const problem_desc_t *d = &pr->d;
  memset(rp, 0, sizeof *rp);
  if (d->varlen > 0) { /* the arrays the call got (host copies) */
    rp->cu_seqlens_q = pr->host_cu_q;
    rp->cu_seqlens_k = pr->host_cu_k;
    rp->seqused_k = pr->host_used;
    rp->total_q = pr->total_q;
    rp->total_k = pr->total_k;
  }
  rp->batch = d->batch;
  rp->seqlen_q = d->seqlen_q;
  rp->seqlen_k = d->seqlen_k;
  rp->heads_q = d->heads_q;
  rp->heads_kv = d->heads_kv;
  rp->head_dim = d->head_dim;
  rp->head_dim_v = problem_head_dim_v(d);
  rp->softcap = d->softcap;
  rp->softmax_scale = d->softmax_scale;
  rp->causal = d->causal;
  rp->window_left = d->window_left;
  rp->window_right = d->window_right;
  rp->round_dtype = round_dtype;
  rp->threads = 0;
}

/* The ratio that ranks figures: max_err / tolerance. */
static double figure_ratio(const error_figure_t *f) {
  return f->tolerance > 0.0 ? f->max_err / f->tolerance : f->max_err > 0.0 ? INFINITY : 0.0;
}

/* compare() per sequence of a varlen problem: rows (tokens) of row_elems elements each, sequence
 * b's rows its clamped query range (or key range, keys != 0: the used keys; the rest counted as
 * whole). The figures of the sequence with the largest max_err / tolerance stand (its index + 1 in
 * f->seq, element indices global); bad_elements sum and pass ands over every sequence. Tokens in
 * no sequence are not compared here (the caller checks them). */
static void compare_varlen(error_figure_t *f, const double *x, const double *ref,
                           const double *lowp, const ref_problem_t *rp, size_t row_elems,
                           int keys, cudadent_dtype_t dtype) {
  error_figure_t best;
  memset(&best, 0, sizeof best);
  long bad = f->bad_elements;
  int pass = 1;
  for (int b = 0; b < rp->batch; ++b) {
    int q0, q1, k0, k1, used;
    ref_varlen_ranges(rp, b, &q0, &q1, &k0, &k1, &used);
    const int r0 = keys ? k0 : q0, r1 = keys ? k1 : q1;
    if (r1 <= r0) continue;
    error_figure_t t;
    memset(&t, 0, sizeof t);
    const size_t off = (size_t)r0 * row_elems;
    compare(&t, x + off, ref + off, lowp + off, (size_t)(r1 - r0) * row_elems, dtype);
    t.worst += off;
    t.seq = b + 1;
    bad += t.bad_elements;
    pass = pass && t.pass;
    if (best.seq == 0 || figure_ratio(&t) > figure_ratio(&best)) best = t;
  }
  *f = best;
  f->bad_elements = bad;
  f->pass = pass && bad == 0;
}

/* A varlen backward's gradients of tokens in no sequence (cudadent.h: dQ = 0 for the queries in
 * no clamped query range, dK = dV = 0 for the keys in no sequence's used keys, the unused keys of
 * a sequence included): every element exactly 0, else counted in bad. g: dq (keys 0) or dk / dv
 * (keys 1) as downloaded, rows of row_elems elements. Returns -1 out of memory. */
static int varlen_gap_grads(const ref_problem_t *rp, const double *g, size_t row_elems, int keys,
                            long *bad) {
  const int total = keys ? rp->total_k : rp->total_q;
  unsigned char *held = calloc(total > 0 ? (size_t)total : 1, 1);
  if (!held) return -1;
  for (int b = 0; b < rp->batch; ++b) {
    int q0, q1, k0, k1, used;
    ref_varlen_ranges(rp, b, &q0, &q1, &k0, &k1, &used);
    const int r0 = keys ? k0 : q0, r1 = keys ? k0 + used : q1;
    for (int t = r0; t < r1; ++t) held[t] = 1;
  }
  for (int t = 0; t < total; ++t)
    if (!held[t])
      for (size_t e = 0; e < row_elems; ++e) *bad += g[(size_t)t * row_elems + e] != 0.0;
  free(held);
  return 0;
}

int problem_check(problem_t *pr, int bwd, check_result_t *r) {
  memset(r, 0, sizeof *r);
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  const problem_desc_t *d = &pr->d;
  const int Dv = problem_head_dim_v(d);
  /* q, dq: nq; k, dk: nk; v, dv: nv; o, dout: no */
  /* the tensors as allocated: varlen's are (1, total_q / total_k, heads, dim) */
  int B, Sq, Sk;
  problem_alloc_dims(pr, &B, &Sq, &Sk);
  const int varlen = d->varlen > 0;
  const size_t nq = (size_t)B * Sq * d->heads_q * d->head_dim;
  const size_t nk = (size_t)B * Sk * d->heads_kv * d->head_dim;
  const size_t no = (size_t)B * Sq * d->heads_q * Dv;
  const size_t nv = (size_t)B * Sk * d->heads_kv * Dv;
  const size_t nl = (size_t)B * d->heads_q * Sq;
  double *q = dense_to_double(pr->host_q, nq, d->dtype);
  double *k = dense_to_double(pr->host_k, nk, d->dtype);
  double *v = dense_to_double(pr->host_v, nv, d->dtype);
  double *dout = dense_to_double(pr->host_dout, no, d->dtype);
  double *o_ref = malloc((no + 1) * sizeof(double)), *o_low = malloc((no + 1) * sizeof(double));
  double *lse_ref = malloc((nl + 1) * sizeof(double));
  float *lse_f = malloc((nl + 1) * sizeof(float));
  double *lse = malloc((nl + 1) * sizeof(double));
  int rc = -1;
  double *o = NULL, *g[3] = {NULL, NULL, NULL}, *g_ref[3] = {NULL, NULL, NULL},
         *g_low[3] = {NULL, NULL, NULL};
  if (!q || !k || !v || !dout || !o_ref || !o_low || !lse_ref || !lse_f || !lse) goto done;

  ref_problem_t rp;
  ref_problem_of(pr, &rp, REF_ROUND_NONE);
  ref_attn_fwd(&rp, q, k, v, o_ref, lse_ref);
  ref_problem_of(pr, &rp, d->dtype);
  ref_attn_fwd(&rp, q, k, v, o_low, NULL);

  o = download_output(&pr->o, d->dtype, &r->o.bad_elements);
  if (!o) goto done;
  r->o.bad_elements += pr->o_gap_clobbered; /* by the forward, seen before the backward */
  if (d->no_lse) {
    for (size_t row = 0; row < nl; ++row) lse_f[row] = -INFINITY; /* not asked for */
  } else if (cudaMemcpy(lse_f, pr->lse, nl * sizeof(float), cudaMemcpyDeviceToHost) !=
             cudaSuccess) {
    goto done;
  }
  /* Rows that see no key: O exactly 0 and LSE exactly -inf. */
  for (size_t row = 0; row < nl; ++row) {
    if (!isinf(lse_ref[row])) continue;
    const int b = (int)(row / ((size_t)d->heads_q * Sq));
    const int h = (int)(row / Sq % d->heads_q), i = (int)(row % Sq);
    if (!(isinf(lse_f[row]) && lse_f[row] < 0)) ++r->lse.bad_elements;
    const double *orow = o + (((size_t)b * Sq + i) * d->heads_q + h) * Dv;
    for (int c = 0; c < Dv; ++c)
      if (orow[c] != 0.0) ++r->o.bad_elements;
  }
  if (varlen) {
    ref_problem_of(pr, &rp, REF_ROUND_NONE);
    compare_varlen(&r->o, o, o_ref, o_low, &rp, (size_t)d->heads_q * Dv, 0, d->dtype);
  } else {
    compare(&r->o, o, o_ref, o_low, no, d->dtype);
  }
  if (no > 0) {
    const size_t i = r->o.worst / Dv; /* (b, s, h) of the worst O element */
    const size_t h = i % d->heads_q, s = i / d->heads_q % Sq, b = i / ((size_t)d->heads_q * Sq);
    const size_t row = (b * d->heads_q + h) * Sq + s;
    r->o_worst_lse = lse_f[row];
    r->o_worst_lse_ref = lse_ref[row];
  }
  /* LSE: fp32, independent of P's rounding: absolute 1e-3 on finite rows. */
  r->lse_checked = !d->no_lse;
  if (d->no_lse) {
    r->lse.pass = 1;
  } else {
    double e = 0.0;
    for (size_t row = 0; row < nl; ++row) {
      if (isinf(lse_ref[row])) continue;
      if (!isfinite(lse_f[row])) {
        ++r->lse.bad_elements;
        continue;
      }
      double dd = fabs((double)lse_f[row] - lse_ref[row]);
      if (dd > e) e = dd;
    }
    r->lse.max_err = e;
    r->lse.tolerance = 1e-3;
    r->lse.pass = r->lse.bad_elements == 0 && e <= 1e-3;
  }
  r->pass = r->o.pass && r->lse.pass;

  if (bwd) {
    const size_t n_of[3] = {nq, nk, nv}; /* dq, dk, dv */
    for (int t = 0; t < 3; ++t) {
      const size_t n = n_of[t];
      g_ref[t] = malloc((n + 1) * sizeof(double));
      g_low[t] = malloc((n + 1) * sizeof(double));
      if (!g_ref[t] || !g_low[t]) goto done;
    }
    ref_problem_of(pr, &rp, REF_ROUND_NONE);
    ref_attn_bwd(&rp, q, k, v, dout, g_ref[0], g_ref[1], g_ref[2]);
    ref_problem_of(pr, &rp, d->dtype);
    rp.given_o = o; /* the O the backward was handed: an input of the backward */
    ref_attn_bwd(&rp, q, k, v, dout, g_low[0], g_low[1], g_low[2]);
    const problem_tensor_t *gt[3] = {&pr->dq, &pr->dk, &pr->dv};
    error_figure_t *gf[3] = {&r->dq, &r->dk, &r->dv};
    for (int t = 0; t < 3; ++t) {
      g[t] = download_output(gt[t], d->dtype, &gf[t]->bad_elements);
      if (!g[t]) goto done;
      if (varlen) { /* dq per query range, dk / dv per key range */
        const size_t row_elems = t == 0 ? (size_t)d->heads_q * d->head_dim
                                 : t == 1 ? (size_t)d->heads_kv * d->head_dim
                                          : (size_t)d->heads_kv * Dv;
        long gap_bad = 0;
        if (varlen_gap_grads(&rp, g[t], row_elems, t > 0, &gap_bad) != 0) goto done;
        gf[t]->bad_elements += gap_bad;
        compare_varlen(gf[t], g[t], g_ref[t], g_low[t], &rp, row_elems, t > 0, d->dtype);
      } else {
        compare(gf[t], g[t], g_ref[t], g_low[t], n_of[t], d->dtype);
      }
      r->pass = r->pass && gf[t]->pass;
    }
  }
  rc = 0;
done:
  free(q);
  free(k);
  free(v);
  free(dout);
  free(o_ref);
  free(o_low);
  free(lse_ref);
  free(lse_f);
  free(lse);
  free(o);
  for (int t = 0; t < 3; ++t) {
    free(g[t]);
    free(g_ref[t]);
    free(g_low[t]);
  }
  return rc;
}

static void print_figure(const char *name, const error_figure_t *f) {
  printf("    %-4s max_err %.3e  lowp_err %.3e  tol %.3e  bad %ld  %s", name, f->max_err,
         f->max_err_lowp, f->tolerance, f->bad_elements, f->pass ? "ok" : "FAIL");
  if (f->seq > 0) printf("  (sequence %d: the worst ratio)", f->seq - 1);
  printf("\n");
  if (f->max_err > 0.0)
    printf("         worst: element %zu (dense b,s,h,d order) = %.6e, ref %.6e, lowp %.6e\n",
           f->worst, f->worst_x, f->worst_ref, f->worst_lowp);
}

void problem_print_check(const check_result_t *r, int bwd) {
  print_figure("o", &r->o);
  if (r->o.max_err > 0.0 && r->lse_checked)
    printf("         its row's lse %.7e, ref %.7e\n", r->o_worst_lse, r->o_worst_lse_ref);
  if (r->lse_checked) print_figure("lse", &r->lse);
  else printf("    lse  not requested (lse = NULL)\n");
  if (bwd) {
    print_figure("dq", &r->dq);
    print_figure("dk", &r->dk);
    print_figure("dv", &r->dv);
  }
}
int problem_check_seeds(const problem_desc_t *desc, int n, seed_stats_t *st, char *err,
                        size_t err_len) {
  memset(st, 0, sizeof *st);
  double *ratio = malloc((n > 0 ? n : 1) * sizeof *ratio);
  if (!ratio) {
    snprintf(err, err_len, "out of host memory");
    return -1;
  }
  for (int i = 0; i < n; ++i) {
    problem_desc_t d = *desc;
    d.seed = (desc->seed ? desc->seed : 1) + (uint64_t)i;
    problem_t pr;
    check_result_t r;
    int rc = problem_create(&pr, &d, err, err_len);
    if (rc == 0 && problem_run_fwd(&pr, NULL) != CUDADENT_STATUS_SUCCESS) {
      snprintf(err, err_len, "seed %llu: %s", (unsigned long long)d.seed,
               cudadent_get_last_error_message());
      rc = -1;
    }
    if (rc == 0 && problem_check(&pr, 0, &r) != 0) {
      snprintf(err, err_len, "seed %llu: CUDA failure in the check", (unsigned long long)d.seed);
      rc = -1;
    }
    problem_destroy(&pr);
    if (rc != 0) {
      free(ratio);
      return -1;
    }
    /* a shape whose low-precision reference is exact (one key a row): any error is infinitely
     * worse, none is a ratio of 0 */
    ratio[st->runs++] = r.o.max_err_lowp > 0.0 ? r.o.max_err / r.o.max_err_lowp
                        : r.o.max_err > 0.0   ? INFINITY
                                              : 0.0;
    st->fails += !r.pass;
    if (r.lse_checked && r.lse.max_err > st->lse_max_err) st->lse_max_err = r.lse.max_err;
  }
  double sum = 0.0;
  for (int i = 0; i < st->runs; ++i) {
    sum += ratio[i];
    st->over_1_5 += ratio[i] > 1.5;
  }
  qsort(ratio, st->runs, sizeof *ratio, cmp_double);
  const int last = st->runs - 1;
  if (st->runs > 0) {
    st->mean = sum / st->runs;
    st->p50 = ratio[last / 2];
    st->p90 = ratio[(int)(0.9 * last)];
    st->p99 = ratio[(int)(0.99 * last)];
    st->max = ratio[last];
  }
  free(ratio);
  return 0;
}

/* The 16-bit gradient outputs (dq, dk, dv allocations) copied to host buffers the caller frees. */
static int download_grads(const problem_t *pr, uint16_t *g[3]) {
  const problem_tensor_t *ts[3] = {&pr->dq, &pr->dk, &pr->dv};
  for (int t = 0; t < 3; ++t) {
    g[t] = malloc((ts[t]->alloc_elems ? ts[t]->alloc_elems : 1) * 2);
    if (!g[t] || cudaMemcpy(g[t], ts[t]->device, ts[t]->alloc_elems * 2,
                            cudaMemcpyDeviceToHost) != cudaSuccess)
      return -1;
  }
  return 0;
}

int problem_bwd_repeatable(problem_t *pr, int runs, char *why, size_t why_len) {
  static const char *const names[3] = {"dq", "dk", "dv"};
  const problem_tensor_t *ts[3] = {&pr->dq, &pr->dk, &pr->dv};
  uint16_t *first[3] = {NULL, NULL, NULL};
  int rc = 1;
  if (problem_run_fwd(pr, NULL) != CUDADENT_STATUS_SUCCESS) {
    snprintf(why, why_len, "fwd: %s", cudadent_get_last_error_message());
    goto done;
  }
  if (problem_gap_o_for_bwd(pr) != 0) {
    snprintf(why, why_len, "refilling O's gaps failed");
    goto done;
  }
  for (int run = 0; run < runs; ++run) {
    if (problem_poison(pr, 1) != 0 || problem_run_bwd(pr, NULL) != CUDADENT_STATUS_SUCCESS) {
      snprintf(why, why_len, "bwd run %d: %s", run, cudadent_get_last_error_message());
      goto done;
    }
    uint16_t *g[3] = {NULL, NULL, NULL};
    const int got = download_grads(pr, g);
    int differs = -1;
    for (int t = 0; got == 0 && run > 0 && differs < 0 && t < 3; ++t)
      if (memcmp(g[t], first[t], ts[t]->alloc_elems * 2) != 0) differs = t;
    if (got == 0 && run == 0) {
      for (int t = 0; t < 3; ++t) first[t] = g[t];
      continue;
    }
    for (int t = 0; t < 3; ++t) free(g[t]);
    if (got != 0) {
      snprintf(why, why_len, "run %d: downloading the gradients failed", run);
      goto done;
    }
    if (differs >= 0) {
      snprintf(why, why_len, "run %d: %s differs from run 0", run, names[differs]);
      goto done;
    }
  }
  check_result_t r;
  if (problem_check(pr, 1, &r) != 0) {
    snprintf(why, why_len, "check: CUDA failure");
    goto done;
  }
  problem_print_check(&r, 1);
  if (!r.pass) {
    snprintf(why, why_len, "deterministic gradients outside the criterion");
    goto done;
  }
  printf("    %d runs bit-identical\n", runs);
  rc = 0;
done:
  for (int t = 0; t < 3; ++t) free(first[t]);
  return rc;
}
