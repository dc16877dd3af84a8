/*
 * reference.c - double-precision CPU attention forward and backward (see reference.h).
 *
 * Per query row i (one head) everything is computed from the row's scores over its visible key
 * range [lo, hi] (masks are contiguous ranges per row):
 *
 *   s_j   = scale * (q_i . k_j);  with softcap c > 0: t_j = tanh(s_j / c), s_j = c t_j
 *   m     = max_j s_j,  l = sum_j exp(s_j - m)
 *   LSE_i = m + log(l)
 *   P_ij  = exp(s_j - LSE_i)
 *   P~_ij = round(P_ij) in the low-precision variant, else P_ij
 *   O_i   = sum_j P~_ij v_j
 *
 * Backward (gradients of L = sum(O * dO)), in double except the marked roundings:
 *
 *   dP_ij   = dO_i . v_j
 *   delta_i = dO_i . O~_i              (O~_i: O_i as above, computed with P~, and in the
 *                                        low-precision variant rounded to the dtype, as the O a
 *                                        kernel is handed is: the forward's stored output)
 *   dS_ij   = P_ij (dP_ij - delta_i)  (softcap: times 1 - t_j^2, d(c tanh(x / c))/dx);
 *             dS~ = round(dS) in the low-precision variant
 *   dQ_i    = scale * sum_j dS~_ij k_j
 *   dK_j    = scale * sum_i dS~_ij q_i      (over the query heads of j's KV head, then rows i)
 *   dV_j    = sum_i P~_ij dO_i
 *
 * Loop order: scores and dP are axpy's over d on packed transposed K^T / V^T ([d][j], contiguous
 * in j), the other products axpy's over d on rows of V, K, dO, Q: every inner loop is unit-stride
 * and vectorizes without reassociation, and each element's summation order is fixed.
 *
 * head_dim_v (Dv) may differ from head_dim (D): V, O, dO, dV rows have Dv elements. Varlen
 * problems are split into dense problems of one sequence each (varlen.c).
 *
 * Threads (pthreads, a shared counter handing out units):
 *   forward            units (batch, query head, block of 64 query rows);
 *   backward phase 1   the same units: per row LSE, delta and the dQ row;
 *   backward phase 2   units (batch, KV head, block of 64 keys): the unit alone owns those dK/dV
 *                      rows and loops over its KV head's query heads and all query rows, with
 *                      P_ij = exp(s_j - LSE_i) recomputed from phase 1's LSE (bit-identical to
 *                      phase 1's P: same scores, same formula).
 * A unit is computed the same whatever thread runs it, so no element depends on the thread
 * count, and there are no atomics and no races.
 */
#define _POSIX_C_SOURCE 200809L
#include "reference.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rounds(const ref_problem_t *p) {
  return p->round_dtype == CUDADENT_DTYPE_FP16 || p->round_dtype == CUDADENT_DTYPE_BF16;
}

/* ---- masking --------------------------------------------------------------------------------- */

/* Visible key range of query row i: [*lo, *hi] clipped to [0, seqlen_k); empty when *lo > *hi. */
static void row_range(const ref_problem_t *p, int i, int *lo, int *hi) {
  const long long diag = (long long)i + p->seqlen_k - p->seqlen_q;
  const int wr = p->causal ? 0 : p->window_right;
  long long a = p->window_left < 0 ? 0 : diag - p->window_left;
  long long b = wr < 0 ? (long long)p->seqlen_k - 1 : diag + wr;
  if (a < 0) a = 0;
  if (b > (long long)p->seqlen_k - 1) b = (long long)p->seqlen_k - 1;
  if (a > b) { /* empty */
    *lo = 1;
    *hi = 0;
    return;
  }
  *lo = (int)a;
  *hi = (int)b;
}

int ref_visible(const ref_problem_t *p, int i, int j) {
  if (i < 0 || i >= p->seqlen_q || j < 0 || j >= p->seqlen_k) return 0;
  int lo, hi;
  row_range(p, i, &lo, &hi);
  return j >= lo && j <= hi;
}

/* ---- shared pieces --------------------------------------------------------------------------- */

static int problem_ok(const ref_problem_t *p) {
  return p && p->batch >= 0 && p->seqlen_q >= 0 && p->seqlen_k >= 0 && p->heads_q >= 0 &&
         p->heads_kv > 0 && p->head_dim >= 0 && p->head_dim_v >= 0 && p->softcap >= 0.0 &&
         p->heads_q % p->heads_kv == 0;
}

/* The head dim of v, o, dout, dv. */
static int dv_of(const ref_problem_t *p) { return p->head_dim_v ? p->head_dim_v : p->head_dim; }

static int is_varlen(const ref_problem_t *p) {
  return p->cu_seqlens_q != NULL || p->cu_seqlens_k != NULL;
}

static int thread_count(const ref_problem_t *p, long units) {
  long n = p->threads;
  if (n == 0) {
    n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) n = 1;
  }
  if (n < 1) n = 1;
  if (n > units) n = units;
  if (n > 256) n = 256;
  return (int)(n < 1 ? 1 : n);
}

/* Per-thread scratch: rows of length seqlen_k and one of max(head_dim, head_dim_v). dt: the
 * softcap's 1 - tanh^2 per key. */
typedef struct scratch {
  double *s, *pr, *pn, *dp, *ds, *dt, *o;
} scratch_t;

static int scratch_alloc(scratch_t *w, int sk, int d) {
  const size_t n = (size_t)(sk > 0 ? sk : 1), nd = (size_t)(d > 0 ? d : 1);
  w->s = malloc(n * sizeof(double));
  w->pr = malloc(n * sizeof(double));
  w->pn = malloc(n * sizeof(double));
  w->dp = malloc(n * sizeof(double));
  w->ds = malloc(n * sizeof(double));
  w->dt = malloc(n * sizeof(double));
  w->o = malloc(nd * sizeof(double));
  return w->s && w->pr && w->pn && w->dp && w->ds && w->dt && w->o;
}

static void scratch_free(scratch_t *w) {
  free(w->s);
  free(w->pr);
  free(w->pn);
  free(w->dp);
  free(w->ds);
  free(w->dt);
  free(w->o);
}

/* X [batch][seqlen][heads][d] -> XT [batch][heads][d][seqlen]. */
static double *pack_transposed(const double *x, int batch, int seqlen, int heads, int d) {
  const size_t n = (size_t)batch * seqlen * heads * d;
  double *t = malloc((n ? n : 1) * sizeof(double));
  if (!t) return NULL;
  for (int b = 0; b < batch; ++b)
    for (int j = 0; j < seqlen; ++j)
      for (int h = 0; h < heads; ++h) {
        const double *src = x + (((size_t)b * seqlen + j) * heads + h) * d;
        double *dst = t + ((size_t)b * heads + h) * (size_t)d * seqlen + j;
        for (int c = 0; c < d; ++c) dst[(size_t)c * seqlen] = src[c];
      }
  return t;
}

/* s[a..c] = scale * (q_i . k_j) from K^T [D][Sk] of this (batch, KV head), soft-capped where
 * softcap > 0 (dt[a..c]: 1 - tanh^2, the cap's derivative). */
static void row_scores(const ref_problem_t *p, const double *qi, const double *kt, int a, int c,
                       double *s, double *dt) {
  const int D = p->head_dim, Sk = p->seqlen_k;
  for (int j = a; j <= c; ++j) s[j] = 0.0;
  for (int d = 0; d < D; ++d) {
    const double qd = qi[d];
    const double *kd = kt + (size_t)d * Sk;
    for (int j = a; j <= c; ++j) s[j] += qd * kd[j];
  }
  const double scale = p->softmax_scale;
  for (int j = a; j <= c; ++j) s[j] *= scale;
  if (p->softcap > 0.0) {
    const double cap = p->softcap;
    for (int j = a; j <= c; ++j) {
      const double t = tanh(s[j] / cap);
      s[j] = cap * t;
      dt[j] = 1.0 - t * t;
    }
  }
}

/* P (w->pn) and P~ (w->pr) over [a, c] from the scores in w->s and the row's LSE. */
static void row_probs(const ref_problem_t *p, double lse, int a, int c, scratch_t *w) {
  const int rnd = rounds(p);
  for (int j = a; j <= c; ++j) {
    w->pn[j] = exp(w->s[j] - lse);
    w->pr[j] = rnd ? ref_round_to(p->round_dtype, w->pn[j]) : w->pn[j];
  }
}

/* One query row's forward for (b, h): fills w->pn[lo..hi] with P, w->pr[lo..hi] with P~ and
 * w->o[0..D) with O. Returns the LSE, or -inf (and O = 0) when the row sees no key. kt: K^T of
 * this (batch, KV head); v: V of this (batch, KV head), row stride vstride. */
static double row_forward(const ref_problem_t *p, int i, const double *qi, const double *kt,
                          const double *v, size_t vstride, scratch_t *w, int *plo, int *phi) {
  const int D = dv_of(p); /* O's head dim */
  int lo, hi;
  row_range(p, i, &lo, &hi);
  *plo = lo;
  *phi = hi;
  for (int d = 0; d < D; ++d) w->o[d] = 0.0;
  if (lo > hi) return -INFINITY;
  double *s = w->s;
  row_scores(p, qi, kt, lo, hi, s, w->dt);
  double m = -INFINITY;
  for (int j = lo; j <= hi; ++j)
    if (s[j] > m) m = s[j];
  double l = 0.0;
  for (int j = lo; j <= hi; ++j) l += exp(s[j] - m);
  const double lse = m + log(l);
  row_probs(p, lse, lo, hi, w);
  for (int j = lo; j <= hi; ++j) { /* O = sum_j P~_j v_j */
    const double pj = w->pr[j];
    const double *vj = v + (size_t)j * vstride;
    for (int d = 0; d < D; ++d) w->o[d] += pj * vj[d];
  }
  return lse;
}

/* dS~ over [a, c] (into w->ds, unscaled) from P (w->pn), the row's dO and delta, and with
 * softcap the cap's derivative (w->dt, from row_scores). vt: V^T [Dv][Sk]. */
static void row_ds(const ref_problem_t *p, const double *doi, const double *vt, double delta,
                   int a, int c, scratch_t *w) {
  const int D = dv_of(p), Sk = p->seqlen_k;
  double *dp = w->dp;
  for (int j = a; j <= c; ++j) dp[j] = 0.0;
  for (int d = 0; d < D; ++d) { /* dP_j = dO_i . v_j */
    const double gd = doi[d];
    const double *vd = vt + (size_t)d * Sk;
    for (int j = a; j <= c; ++j) dp[j] += gd * vd[j];
  }
  const int rnd = rounds(p);
  const int capped = p->softcap > 0.0;
  for (int j = a; j <= c; ++j) {
    double x = w->pn[j] * (dp[j] - delta);
    if (capped) x *= w->dt[j];
    w->ds[j] = rnd ? ref_round_to(p->round_dtype, x) : x;
  }
}

/* A tiny work queue: units 0..n-1 handed out to threads in order. */
typedef struct pool {
  pthread_mutex_t lock;
  long next, n;
  int failed; /* a worker could not allocate its scratch */
  void (*fn)(void *ctx, long unit, scratch_t *w);
  void *ctx;
  const ref_problem_t *p;
} pool_t;

static void *pool_worker(void *arg) {
  pool_t *pl = arg;
  scratch_t w;
  const int d = pl->p->head_dim > dv_of(pl->p) ? pl->p->head_dim : dv_of(pl->p);
  if (!scratch_alloc(&w, pl->p->seqlen_k, d)) {
    scratch_free(&w);
    pthread_mutex_lock(&pl->lock);
    pl->failed = 1;
    pthread_mutex_unlock(&pl->lock);
    return NULL;
  }
  for (;;) {
    pthread_mutex_lock(&pl->lock);
    const long u = pl->next < pl->n ? pl->next++ : -1;
    pthread_mutex_unlock(&pl->lock);
    if (u < 0) break;
    pl->fn(pl->ctx, u, &w);
  }
  scratch_free(&w);
  return NULL;
}

/* Runs fn over all units; returns 0, or -1 if no thread could get scratch memory. */
static int pool_run(const ref_problem_t *p, long units, void (*fn)(void *, long, scratch_t *),
                    void *ctx) {
  if (units <= 0) return 0;
  pool_t pl;
  pthread_mutex_init(&pl.lock, NULL);
  pl.next = 0;
  pl.n = units;
  pl.failed = 0;
  pl.fn = fn;
  pl.ctx = ctx;
  pl.p = p;
  const int nt = thread_count(p, units);
  pthread_t tid[256];
  int started = 0;
  for (int t = 1; t < nt; ++t) { /* the calling thread is worker 0 */
    if (pthread_create(&tid[started], NULL, pool_worker, &pl) != 0) break;
    ++started;
  }
  pool_worker(&pl);
  for (int t = 0; t < started; ++t) pthread_join(tid[t], NULL);
  pthread_mutex_destroy(&pl.lock);
  /* Units left over only if every worker failed to allocate. */
  return pl.next < pl.n ? -1 : 0;
}

static void fill_nan(double *x, size_t n) {
  if (!x) return;
  for (size_t t = 0; t < n; ++t) x[t] = NAN;
}

/* ---- forward --------------------------------------------------------------------------------- */

enum { FWD_ROWS_PER_UNIT = 64 };

typedef struct fwd_ctx {
  const ref_problem_t *p;
  const double *q, *kt, *v;
  double *o, *lse;
  long row_blocks;
} fwd_ctx_t;

static void fwd_unit(void *arg, long unit, scratch_t *w) {
  const fwd_ctx_t *c = arg;
  const ref_problem_t *p = c->p;
  const int D = p->head_dim, Dv = dv_of(p), Sq = p->seqlen_q, Sk = p->seqlen_k;
  const int Hq = p->heads_q, Hkv = p->heads_kv, group = Hq / Hkv;
  const long blk = unit % c->row_blocks;
  const int h = (int)((unit / c->row_blocks) % Hq);
  const int b = (int)(unit / c->row_blocks / Hq);
  const int g = h / group;
  const double *kt = c->kt + ((size_t)b * Hkv + g) * (size_t)D * Sk;
  const size_t vstride = (size_t)Hkv * Dv;
  const double *v = c->v + (size_t)b * Sk * vstride + (size_t)g * Dv;
  const int i0 = (int)(blk * FWD_ROWS_PER_UNIT);
  const int i1 = i0 + FWD_ROWS_PER_UNIT < Sq ? i0 + FWD_ROWS_PER_UNIT : Sq;
  for (int i = i0; i < i1; ++i) {
    const size_t qrow = ((size_t)b * Sq + i) * Hq + h; /* row index of q and o */
    int lo, hi;
    const double lse = row_forward(p, i, c->q + qrow * D, kt, v, vstride, w, &lo, &hi);
    if (c->o) memcpy(c->o + qrow * Dv, w->o, (size_t)Dv * sizeof(double));
    if (c->lse) c->lse[((size_t)b * Hq + h) * Sq + i] = lse;
  }
}

void ref_attn_fwd(const ref_problem_t *p, const double *q, const double *k, const double *v,
                  double *o, double *lse) {
  if (!problem_ok(p) || (!o && !lse)) return;
  if (is_varlen(p)) {
    ref_varlen_fwd(p, q, k, v, o, lse);
    return;
  }
  const size_t n_o = (size_t)p->batch * p->seqlen_q * p->heads_q * dv_of(p);
  const size_t n_lse = (size_t)p->batch * p->heads_q * p->seqlen_q;
  fwd_ctx_t c;
  c.p = p;
  c.q = q;
  c.v = v;
  c.o = o;
  c.lse = lse;
  c.row_blocks = (p->seqlen_q + FWD_ROWS_PER_UNIT - 1) / FWD_ROWS_PER_UNIT;
  c.kt = pack_transposed(k, p->batch, p->seqlen_k, p->heads_kv, p->head_dim);
  const long units = (long)p->batch * p->heads_q * c.row_blocks;
  if (!c.kt || pool_run(p, units, fwd_unit, &c) != 0) {
    fprintf(stderr, "ref_attn_fwd: out of memory; outputs set to NaN\n");
    fill_nan(o, n_o);
    fill_nan(lse, n_lse);
  }
  free((void *)c.kt);
}

/* ---- backward -------------------------------------------------------------------------------- */

enum { BWD_KEYS_PER_UNIT = 64 };

typedef struct bwd_ctx {
  const ref_problem_t *p;
  const double *q, *k, *v, *kt, *vt, *dout;
  double *dq, *dk, *dv;
  double *lse, *delta; /* [batch][heads_q][seqlen_q], from phase 1 */
  long row_blocks, key_blocks;
} bwd_ctx_t;

/* Phase 1, unit (b, h, row block): LSE, delta and dQ of its rows. */
static void bwd_rows_unit(void *arg, long unit, scratch_t *w) {
  const bwd_ctx_t *c = arg;
  const ref_problem_t *p = c->p;
  const int D = p->head_dim, Dv = dv_of(p), Sq = p->seqlen_q, Sk = p->seqlen_k;
  const int Hq = p->heads_q, Hkv = p->heads_kv, group = Hq / Hkv;
  const long blk = unit % c->row_blocks;
  const int h = (int)((unit / c->row_blocks) % Hq);
  const int b = (int)(unit / c->row_blocks / Hq);
  const int g = h / group;
  const size_t kvstride = (size_t)Hkv * D, vstride = (size_t)Hkv * Dv;
  const double *kb = c->k + (size_t)b * Sk * kvstride + (size_t)g * D;
  const double *vb = c->v + (size_t)b * Sk * vstride + (size_t)g * Dv;
  const double *kt = c->kt + ((size_t)b * Hkv + g) * (size_t)D * Sk;
  const double *vt = c->vt + ((size_t)b * Hkv + g) * (size_t)Dv * Sk;
  const double scale = p->softmax_scale;
  const int i0 = (int)(blk * FWD_ROWS_PER_UNIT);
  const int i1 = i0 + FWD_ROWS_PER_UNIT < Sq ? i0 + FWD_ROWS_PER_UNIT : Sq;
  for (int i = i0; i < i1; ++i) {
    const size_t qrow = ((size_t)b * Sq + i) * Hq + h; /* row index of q, dq, o, dout */
    const size_t stat = ((size_t)b * Hq + h) * Sq + i;
    const double *qi = c->q + qrow * D, *doi = c->dout + qrow * Dv;
    double *dqi = c->dq + qrow * D;
    for (int d = 0; d < D; ++d) dqi[d] = 0.0;
    int lo, hi;
    c->lse[stat] = row_forward(p, i, qi, kt, vb, vstride, w, &lo, &hi);
    c->delta[stat] = 0.0;
    if (lo > hi) continue; /* sees no key: no gradient */
    double delta = 0.0;    /* dO_i . O_i */
    if (rounds(p) && p->given_o != NULL)
      for (int d = 0; d < Dv; ++d) delta += doi[d] * p->given_o[qrow * Dv + d];
    else
      for (int d = 0; d < Dv; ++d) delta += doi[d] * ref_round_to(p->round_dtype, w->o[d]);
    c->delta[stat] = delta;
    row_ds(p, doi, vt, delta, lo, hi, w);
    for (int j = lo; j <= hi; ++j) { /* dQ_i = scale sum_j dS~_j k_j */
      const double sj = w->ds[j] * scale;
      const double *kj = kb + j * kvstride;
      for (int d = 0; d < D; ++d) dqi[d] += sj * kj[d];
    }
  }
}

/* Phase 2, unit (b, g, key block): dK and dV of its keys. */
static void bwd_keys_unit(void *arg, long unit, scratch_t *w) {
  const bwd_ctx_t *c = arg;
  const ref_problem_t *p = c->p;
  const int D = p->head_dim, Dv = dv_of(p), Sq = p->seqlen_q, Sk = p->seqlen_k;
  const int Hq = p->heads_q, Hkv = p->heads_kv, group = Hq / Hkv;
  const long blk = unit % c->key_blocks;
  const int g = (int)((unit / c->key_blocks) % Hkv);
  const int b = (int)(unit / c->key_blocks / Hkv);
  const size_t kvstride = (size_t)Hkv * D, vstride = (size_t)Hkv * Dv;
  double *dkb = c->dk + (size_t)b * Sk * kvstride + (size_t)g * D;
  double *dvb = c->dv + (size_t)b * Sk * vstride + (size_t)g * Dv;
  const double *kt = c->kt + ((size_t)b * Hkv + g) * (size_t)D * Sk;
  const double *vt = c->vt + ((size_t)b * Hkv + g) * (size_t)Dv * Sk;
  const double scale = p->softmax_scale;
  const int j0 = (int)(blk * BWD_KEYS_PER_UNIT);
  const int j1 = j0 + BWD_KEYS_PER_UNIT < Sk ? j0 + BWD_KEYS_PER_UNIT - 1 : Sk - 1;
  for (int j = j0; j <= j1; ++j) {
    for (int d = 0; d < D; ++d) dkb[j * kvstride + d] = 0.0;
    for (int d = 0; d < Dv; ++d) dvb[j * vstride + d] = 0.0;
  }
  for (int h = g * group; h < (g + 1) * group; ++h) {
    for (int i = 0; i < Sq; ++i) {
      int lo, hi;
      row_range(p, i, &lo, &hi);
      const int a = lo > j0 ? lo : j0, e = hi < j1 ? hi : j1;
      if (a > e) continue;
      const size_t qrow = ((size_t)b * Sq + i) * Hq + h;
      const size_t stat = ((size_t)b * Hq + h) * Sq + i;
      const double *qi = c->q + qrow * D, *doi = c->dout + qrow * Dv;
      row_scores(p, qi, kt, a, e, w->s, w->dt);
      row_probs(p, c->lse[stat], a, e, w);
      row_ds(p, doi, vt, c->delta[stat], a, e, w);
      for (int j = a; j <= e; ++j) {
        const double pj = w->pr[j], sj = w->ds[j] * scale;
        double *dvj = dvb + j * vstride, *dkj = dkb + j * kvstride;
        for (int d = 0; d < Dv; ++d) dvj[d] += pj * doi[d]; /* dV_j += P~_j dO_i */
        for (int d = 0; d < D; ++d) dkj[d] += sj * qi[d];   /* dK_j += scale dS~_j q_i */
      }
    }
  }
}

void ref_attn_bwd(const ref_problem_t *p, const double *q, const double *k, const double *v,
                  const double *dout, double *dq, double *dk, double *dv) {
  if (!problem_ok(p)) return;
  if (is_varlen(p)) {
    ref_varlen_bwd(p, q, k, v, dout, dq, dk, dv);
    return;
  }
  const size_t n_stat = (size_t)p->batch * p->heads_q * p->seqlen_q;
  bwd_ctx_t c;
  c.p = p;
  c.q = q;
  c.k = k;
  c.v = v;
  c.dout = dout;
  c.dq = dq;
  c.dk = dk;
  c.dv = dv;
  c.row_blocks = (p->seqlen_q + FWD_ROWS_PER_UNIT - 1) / FWD_ROWS_PER_UNIT;
  c.key_blocks = (p->seqlen_k + BWD_KEYS_PER_UNIT - 1) / BWD_KEYS_PER_UNIT;
  c.kt = pack_transposed(k, p->batch, p->seqlen_k, p->heads_kv, p->head_dim);
  c.vt = pack_transposed(v, p->batch, p->seqlen_k, p->heads_kv, dv_of(p));
  c.lse = malloc((n_stat ? n_stat : 1) * sizeof(double));
  c.delta = malloc((n_stat ? n_stat : 1) * sizeof(double));
  const long row_units = (long)p->batch * p->heads_q * c.row_blocks;
  const long key_units = (long)p->batch * p->heads_kv * c.key_blocks;
  if (!c.kt || !c.vt || !c.lse || !c.delta || pool_run(p, row_units, bwd_rows_unit, &c) != 0 ||
      pool_run(p, key_units, bwd_keys_unit, &c) != 0) {
    fprintf(stderr, "ref_attn_bwd: out of memory; outputs set to NaN\n");
    fill_nan(dq, (size_t)p->batch * p->seqlen_q * p->heads_q * p->head_dim);
    fill_nan(dk, (size_t)p->batch * p->seqlen_k * p->heads_kv * p->head_dim);
    fill_nan(dv, (size_t)p->batch * p->seqlen_k * p->heads_kv * dv_of(p));
  }
  free((void *)c.kt);
  free((void *)c.vt);
  free(c.lse);
  free(c.delta);
}
