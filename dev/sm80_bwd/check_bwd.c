/*
 * check_bwd.c - standalone correctness check of the sm80 backward launcher (cudadent_sm80_bwd)
 * against the double-precision CPU reference, independent of the forward kernel: O and LSE come
 * from ref_attn_fwd. Criterion (flash-attn's): max|out - ref| <= 2 max|out_lowp - ref| + 1e-5 per
 * dQ, dK, dV, where out_lowp is the reference with P and dS rounded to the input dtype.
 * Outputs are NaN-poisoned before each call; every case runs on odd strides too; deterministic
 * cases also run 3 times and must be bit-identical.
 *
 * Build (see run_gpu.sh): nvcc check_bwd.c bwd.cu reference.c -lcudart
 * Usage: check_bwd [quick | tiny | cpu N]
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "cudadent.h"
#include "kernels/dev.h"
#include "reference.h"

#define CK(x)                                                                              \
  do {                                                                                     \
    cudaError_t e_ = (x);                                                                  \
    if (e_ != cudaSuccess) {                                                               \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));   \
      exit(2);                                                                             \
    }                                                                                      \
  } while (0)

typedef struct tcase {
  int b, sq, sk, hq, hkv, d, causal, wl, wr, dtype, det, layout, outliers;
} tcase_t;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double urand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return ((rng >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double nrand(void) { return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand()); }

/* layout 0: (b, s, h, d) dense; 1: (b, h, s, d); 2: padded seq and batch strides */
static void strides(int layout, int s, int h, int d, int64_t st[3]) {
  if (layout == 1) {
    st[2] = (int64_t)s * d; st[1] = d; st[0] = (int64_t)h * s * d;
  } else if (layout == 2) {
    st[1] = (int64_t)h * d + 24; st[2] = d; st[0] = (int64_t)s * st[1] + 40;
  } else {
    st[1] = (int64_t)h * d; st[2] = d; st[0] = (int64_t)s * h * d;
  }
}

typedef struct dtensor {
  uint16_t *dev;
  size_t elems;
  int64_t st[3];
  int b, s, h, d;
} dtensor_t;

static void dt_alloc(dtensor_t *t, int layout, int b, int s, int h, int d) {
  t->b = b; t->s = s; t->h = h; t->d = d;
  strides(layout, s, h, d, t->st);
  t->elems = (size_t)t->st[0] * b + 64;
  CK(cudaMalloc((void **)&t->dev, t->elems * 2));
}

static uint16_t to_bits(int dtype, double x) {
  return dtype == CUDADENT_DTYPE_BF16 ? ref_double_to_bf16_bits(x) : ref_double_to_half_bits(x);
}
static double from_bits(int dtype, uint16_t x) {
  return dtype == CUDADENT_DTYPE_BF16 ? ref_bf16_bits_to_double(x) : ref_half_bits_to_double(x);
}

/* dense doubles [b][s][h][d] -> device strided tensor; gaps filled with a NaN pattern */
static void dt_upload(dtensor_t *t, int dtype, const double *x) {
  uint16_t *h = (uint16_t *)malloc(t->elems * 2);
  for (size_t i = 0; i < t->elems; ++i) h[i] = 0x7FC1;
  for (int bi = 0; bi < t->b; ++bi)
    for (int si = 0; si < t->s; ++si)
      for (int hi = 0; hi < t->h; ++hi)
        for (int di = 0; di < t->d; ++di)
          h[bi * t->st[0] + si * t->st[1] + hi * t->st[2] + di] =
              to_bits(dtype, x[(((size_t)bi * t->s + si) * t->h + hi) * t->d + di]);
  CK(cudaMemcpy(t->dev, h, t->elems * 2, cudaMemcpyHostToDevice));
  free(h);
}

static void dt_download(const dtensor_t *t, int dtype, double *x, uint16_t *raw) {
  uint16_t *h = (uint16_t *)malloc(t->elems * 2);
  CK(cudaMemcpy(h, t->dev, t->elems * 2, cudaMemcpyDeviceToHost));
  size_t n = 0;
  for (int bi = 0; bi < t->b; ++bi)
    for (int si = 0; si < t->s; ++si)
      for (int hi = 0; hi < t->h; ++hi)
        for (int di = 0; di < t->d; ++di, ++n) {
          const uint16_t v = h[bi * t->st[0] + si * t->st[1] + hi * t->st[2] + di];
          if (x) x[n] = from_bits(dtype, v);
          if (raw) raw[n] = v;
        }
  free(h);
}

static cudadent_tensor_t as_tensor(const dtensor_t *t) {
  cudadent_tensor_t r;
  r.data = t->dev;
  r.stride_batch = t->st[0];
  r.stride_seq = t->st[1];
  r.stride_head = t->st[2];
  r.stride_dim = 1;
  return r;
}


/* ---- emulation of the kernel's rounding points (the "lowp" side of the criterion) ----
 * The library reference's lowp (P and dS rounded) does not model two roundings every kernel with
 * this API makes: delta = rowsum(dO * O) from the O it is given (rounded to the dtype), and the
 * final rounding of dQ/dK/dV to the dtype. This emulation adds both: delta from rounded O, LSE as
 * fp32, P rounded before P^T dO, dS rounded before dS K and dS^T Q, outputs rounded. Threads over
 * (b, h, row) for dQ and (b, hkv, key) for dK/dV. */
typedef struct emul_ctx {
  const ref_problem_t *p;
  const double *q, *k, *v, *dout, *o, *lse, *delta;
  double *dq, *dk, *dv;
  int dt;
  long next, n_rows, n_keys;
} emul_ctx_t;

static int emul_vis(const ref_problem_t *p, int i, int j) { return ref_visible(p, i, j); }

static double emul_p(const emul_ctx_t *c, int b, int h, int i, int j, double *dp_out) {
  const ref_problem_t *p = c->p;
  const int D = p->head_dim, Hq = p->heads_q, Hkv = p->heads_kv, hk = h / (Hq / Hkv);
  const double *qi = c->q + (((size_t)b * p->seqlen_q + i) * Hq + h) * D;
  const double *doi = c->dout + (((size_t)b * p->seqlen_q + i) * Hq + h) * D;
  const double *kj = c->k + (((size_t)b * p->seqlen_k + j) * Hkv + hk) * D;
  const double *vj = c->v + (((size_t)b * p->seqlen_k + j) * Hkv + hk) * D;
  double s = 0, dp = 0;
  for (int d = 0; d < D; ++d) { s += qi[d] * kj[d]; dp += doi[d] * vj[d]; }
  *dp_out = dp;
  const double l = c->lse[((size_t)b * Hq + h) * p->seqlen_q + i];
  return exp(s * p->softmax_scale - l);
}

static void *emul_worker(void *arg) {
  emul_ctx_t *c = (emul_ctx_t *)arg;
  const ref_problem_t *p = c->p;
  const int D = p->head_dim, Hq = p->heads_q, Hkv = p->heads_kv, G = Hq / Hkv;
  const int Sq = p->seqlen_q, Sk = p->seqlen_k;
  double *acc = malloc(2 * D * sizeof(double));
  for (;;) {
    const long u = __sync_fetch_and_add(&c->next, 1);
    if (u >= c->n_rows + c->n_keys) break;
    if (u < c->n_rows) { /* dQ row (b, h, i) */
      const int i = (int)(u % Sq), h = (int)(u / Sq % Hq), b = (int)(u / Sq / Hq);
      const int hk = h / G;
      const double dl = c->delta[((size_t)b * Hq + h) * Sq + i];
      for (int d = 0; d < D; ++d) acc[d] = 0;
      for (int j = 0; j < Sk; ++j) {
        if (!emul_vis(p, i, j)) continue;
        double dp;
        const double pij = emul_p(c, b, h, i, j, &dp);
        const double ds = ref_round_to(c->dt, pij * (dp - dl));
        const double *kj = c->k + (((size_t)b * Sk + j) * Hkv + hk) * D;
        for (int d = 0; d < D; ++d) acc[d] += ds * kj[d];
      }
      double *dqi = c->dq + (((size_t)b * Sq + i) * Hq + h) * D;
      for (int d = 0; d < D; ++d) dqi[d] = ref_round_to(c->dt, acc[d] * p->softmax_scale);
    } else { /* dK, dV row (b, hk, j) */
      const long w = u - c->n_rows;
      const int j = (int)(w % Sk), hk = (int)(w / Sk % Hkv), b = (int)(w / Sk / Hkv);
      for (int d = 0; d < 2 * D; ++d) acc[d] = 0;
      for (int h = hk * G; h < (hk + 1) * G; ++h)
        for (int i = 0; i < Sq; ++i) {
          if (!emul_vis(p, i, j)) continue;
          double dp;
          const double pij = emul_p(c, b, h, i, j, &dp);
          const double dl = c->delta[((size_t)b * Hq + h) * Sq + i];
          const double ds = ref_round_to(c->dt, pij * (dp - dl));
          const double pr = ref_round_to(c->dt, pij);
          const double *qi = c->q + (((size_t)b * Sq + i) * Hq + h) * D;
          const double *doi = c->dout + (((size_t)b * Sq + i) * Hq + h) * D;
          for (int d = 0; d < D; ++d) { acc[d] += ds * qi[d]; acc[D + d] += pr * doi[d]; }
        }
      const size_t off = (((size_t)b * Sk + j) * Hkv + hk) * D;
      for (int d = 0; d < D; ++d) {
        c->dk[off + d] = ref_round_to(c->dt, acc[d] * p->softmax_scale);
        c->dv[off + d] = ref_round_to(c->dt, acc[D + d]);
      }
    }
  }
  free(acc);
  return NULL;
}

/* o: rounded forward output; lse: as the kernel gets it (fp32, -inf for empty rows) */
static void emul_bwd(const ref_problem_t *p, int dt, const double *q, const double *k,
                     const double *v, const double *dout, const double *o, const double *lse,
                     double *dq, double *dk, double *dv) {
  const int D = p->head_dim, Hq = p->heads_q, Sq = p->seqlen_q;
  const size_t nl = (size_t)p->batch * Hq * Sq;
  double *delta = malloc(nl * sizeof(double));
  for (int b = 0; b < p->batch; ++b)
    for (int i = 0; i < Sq; ++i)
      for (int h = 0; h < Hq; ++h) {
        const size_t row = (((size_t)b * Sq + i) * Hq + h) * D;
        double s = 0;
        for (int d = 0; d < D; ++d) s += dout[row + d] * o[row + d];
        delta[((size_t)b * Hq + h) * Sq + i] = s;
      }
  emul_ctx_t c = {p, q, k, v, dout, o, lse, delta, dq, dk, dv, dt, 0,
                  (long)p->batch * Hq * Sq, (long)p->batch * p->heads_kv * p->seqlen_k};
  int nt = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (nt < 1) nt = 1;
  if (nt > 64) nt = 64;
  pthread_t th[64];
  for (int t = 1; t < nt; ++t) pthread_create(&th[t], NULL, emul_worker, &c);
  emul_worker(&c);
  for (int t = 1; t < nt; ++t) pthread_join(th[t], NULL);
  free(delta);
}

typedef struct errs { double max_err, max_lowp; long nan; size_t where; } errs_t;

static errs_t compare(const double *out, const double *ref, const double *lowp, size_t n) {
  errs_t e = {0, 0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    if (!isfinite(out[i])) { e.nan++; continue; }
    const double a = fabs(out[i] - ref[i]);
    if (a > e.max_err) { e.max_err = a; e.where = i; }
    const double l = fabs(lowp[i] - ref[i]);
    if (l > e.max_lowp) e.max_lowp = l;
  }
  return e;
}

static int run_case(const tcase_t *c, int quick, int cpu_only) {
  const int B = c->b, Sq = c->sq, Sk = c->sk, Hq = c->hq, Hkv = c->hkv, D = c->d;
  const size_t nq = (size_t)B * Sq * Hq * D, nk = (size_t)B * Sk * Hkv * D;
  const size_t nl = (size_t)B * Hq * Sq;
  double *q = malloc(nq * 8), *k = malloc(nk * 8), *v = malloc(nk * 8), *dout = malloc(nq * 8);
  double *o = malloc(nq * 8), *lse = malloc(nl * 8);
  double *dq_r = malloc(nq * 8), *dk_r = malloc(nk * 8), *dv_r = malloc(nk * 8);
  double *dq_l = malloc(nq * 8), *dk_l = malloc(nk * 8), *dv_l = malloc(nk * 8);
  double *dq_g = malloc(nq * 8), *dk_g = malloc(nk * 8), *dv_g = malloc(nk * 8);
  const int dt = c->dtype;
  for (size_t i = 0; i < nq; ++i) {
    q[i] = ref_round_to(dt, nrand() * (c->outliers && urand() < 1e-3 ? 8.0 : 1.0));
    dout[i] = ref_round_to(dt, nrand());
  }
  for (size_t i = 0; i < nk; ++i) {
    k[i] = ref_round_to(dt, nrand() * (c->outliers && urand() < 1e-3 ? 8.0 : 1.0));
    v[i] = ref_round_to(dt, nrand());
  }
  ref_problem_t pr;
  memset(&pr, 0, sizeof pr);
  pr.batch = B; pr.seqlen_q = Sq; pr.seqlen_k = Sk; pr.heads_q = Hq; pr.heads_kv = Hkv;
  pr.head_dim = D; pr.softmax_scale = 1.0 / sqrt((double)D); pr.causal = c->causal;
  pr.window_left = c->wl; pr.window_right = c->wr; pr.round_dtype = REF_ROUND_NONE;
  ref_attn_fwd(&pr, q, k, v, o, lse);
  for (size_t i = 0; i < nq; ++i) o[i] = ref_round_to(dt, o[i]);
  ref_attn_bwd(&pr, q, k, v, dout, dq_r, dk_r, dv_r);
  pr.round_dtype = dt;
  ref_attn_bwd(&pr, q, k, v, dout, dq_l, dk_l, dv_l); /* the library's lowp: P, dS rounded */
  double *dq_e = malloc(nq * 8), *dk_e = malloc(nk * 8), *dv_e = malloc(nk * 8);
  {
    double *lse_f = malloc(nl * 8);
    for (size_t i = 0; i < nl; ++i) lse_f[i] = (double)(float)lse[i];
    emul_bwd(&pr, dt, q, k, v, dout, o, lse_f, dq_e, dk_e, dv_e);
    free(lse_f);
  }
  if (cpu_only) {
    const errs_t a = compare(dq_e, dq_r, dq_l, nq), b2 = compare(dk_e, dk_r, dk_l, nk),
                 c2 = compare(dv_e, dv_r, dv_l, nk);
    printf("cpu: |emul-ref| dq %.2e dk %.2e dv %.2e   |lib_lowp-ref| dq %.2e dk %.2e dv %.2e\n",
           a.max_err, b2.max_err, c2.max_err, a.max_lowp, b2.max_lowp, c2.max_lowp);
    return 0;
  }

  dtensor_t tq, tk, tv, to, tdo, tdq, tdk, tdv;
  dt_alloc(&tq, c->layout, B, Sq, Hq, D);
  dt_alloc(&tk, c->layout, B, Sk, Hkv, D);
  dt_alloc(&tv, c->layout, B, Sk, Hkv, D);
  dt_alloc(&to, c->layout, B, Sq, Hq, D);
  dt_alloc(&tdo, c->layout, B, Sq, Hq, D);
  dt_alloc(&tdq, c->layout, B, Sq, Hq, D);
  dt_alloc(&tdk, c->layout, B, Sk, Hkv, D);
  dt_alloc(&tdv, c->layout, B, Sk, Hkv, D);
  dt_upload(&tq, dt, q); dt_upload(&tk, dt, k); dt_upload(&tv, dt, v);
  dt_upload(&to, dt, o); dt_upload(&tdo, dt, dout);
  float *lse_h = malloc(nl * 4), *lse_d;
  for (size_t i = 0; i < nl; ++i) lse_h[i] = (float)lse[i];
  CK(cudaMalloc((void **)&lse_d, nl * 4));
  CK(cudaMemcpy(lse_d, lse_h, nl * 4, cudaMemcpyHostToDevice));

  cudadent_attn_bwd_params_t p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.dtype = (cudadent_dtype_t)dt;
  p.batch = B; p.seqlen_q = Sq; p.seqlen_k = Sk; p.heads_q = Hq; p.heads_kv = Hkv; p.head_dim = D;
  p.q = as_tensor(&tq); p.k = as_tensor(&tk); p.v = as_tensor(&tv); p.o = as_tensor(&to);
  p.dout = as_tensor(&tdo); p.dq = as_tensor(&tdq); p.dk = as_tensor(&tdk); p.dv = as_tensor(&tdv);
  p.lse = lse_d;
  p.softmax_scale = (float)(1.0 / sqrt((double)D));
  /* normalize as api.c does */
  p.causal = 0;
  p.window_left = c->wl >= Sk ? -1 : c->wl;
  p.window_right = c->causal ? 0 : (c->wr >= Sq ? -1 : c->wr);
  p.deterministic = c->det;
  if (!cudadent_sm80_bwd_supports(&p)) { printf("unsupported?\n"); return 1; }
  const size_t ws_bytes = cudadent_sm80_bwd_workspace_size(&p);
  void *ws = NULL;
  CK(cudaMalloc(&ws, ws_bytes ? ws_bytes : 256));
  CK(cudaMemset(ws, 0xFF, ws_bytes ? ws_bytes : 256)); /* garbage (NaN) on entry */

  int fail = 0;
  const int runs = c->det ? 3 : 1;
  uint16_t *raw0[3] = {0, 0, 0}, *raw1[3] = {0, 0, 0};
  int identical = 1;
  for (int r = 0; r < runs; ++r) {
    CK(cudaMemset(tdq.dev, 0xFF, tdq.elems * 2));
    CK(cudaMemset(tdk.dev, 0xFF, tdk.elems * 2));
    CK(cudaMemset(tdv.dev, 0xFF, tdv.elems * 2));
    CK(cudadent_sm80_bwd(&p, ws, 0));
    CK(cudaDeviceSynchronize());
    uint16_t **raw = r == 0 ? raw0 : raw1;
    if (!raw[0]) {
      raw[0] = malloc(nq * 2); raw[1] = malloc(nk * 2); raw[2] = malloc(nk * 2);
    }
    dt_download(&tdq, dt, r == 0 ? dq_g : NULL, raw[0]);
    dt_download(&tdk, dt, r == 0 ? dk_g : NULL, raw[1]);
    dt_download(&tdv, dt, r == 0 ? dv_g : NULL, raw[2]);
    if (r > 0 && (memcmp(raw0[0], raw1[0], nq * 2) || memcmp(raw0[1], raw1[1], nk * 2) ||
                  memcmp(raw0[2], raw1[2], nk * 2)))
      identical = 0;
  }
  /* criterion against the emulated lowp (see emul_bwd); the library-lowp bound is printed too */
  const errs_t eq = compare(dq_g, dq_r, dq_e, nq);
  const errs_t ek = compare(dk_g, dk_r, dk_e, nk);
  const errs_t ev = compare(dv_g, dv_r, dv_e, nk);
  const errs_t lq = compare(dq_g, dq_r, dq_l, nq);
  const errs_t lk = compare(dk_g, dk_r, dk_l, nk);
  const errs_t lv = compare(dv_g, dv_r, dv_l, nk);
  const errs_t *es[3] = {&eq, &ek, &ev};
  for (int i = 0; i < 3; ++i)
    if (es[i]->nan || !(es[i]->max_err <= 2 * es[i]->max_lowp + 1e-5)) fail = 1;
  if (!identical) fail = 1;
  printf("%s b%d sq%d sk%d hq%d hkv%d d%d c%d w(%d,%d) %s det%d L%d out%d | "
         "dq %.2e/%.2e dk %.2e/%.2e dv %.2e/%.2e nan %ld/%ld/%ld%s%s\n",
         fail ? "FAIL" : "ok  ", B, Sq, Sk, Hq, Hkv, D, c->causal, c->wl, c->wr,
         dt == CUDADENT_DTYPE_BF16 ? "bf16" : "fp16", c->det, c->layout, c->outliers, eq.max_err,
         2 * eq.max_lowp + 1e-5, ek.max_err, 2 * ek.max_lowp + 1e-5, ev.max_err,
         2 * ev.max_lowp + 1e-5, eq.nan, ek.nan, ev.nan, c->det ? (identical ? " bitident" : " NOT-IDENTICAL") : "",
         "");
  printf("      library-lowp bounds (no O/output rounding): dq %.2e dk %.2e dv %.2e\n",
         2 * lq.max_lowp + 1e-5, 2 * lk.max_lowp + 1e-5, 2 * lv.max_lowp + 1e-5);
  if (fail) {
    const char *nm[3] = {"dq", "dk", "dv"};
    const double *g[3] = {dq_g, dk_g, dv_g}, *rf[3] = {dq_r, dk_r, dv_r}, *em[3] = {dq_e, dk_e, dv_e};
    const double *lp[3] = {dq_l, dk_l, dv_l};
    for (int i = 0; i < 3; ++i) {
      const size_t w = es[i]->where, n = i == 0 ? nq : nk;
      const int S = i == 0 ? Sq : Sk, H = i == 0 ? Hq : Hkv;
      const double bound = 2 * es[i]->max_lowp + 1e-5;
      size_t over = 0, over_half = 0;
      for (size_t e = 0; e < n; ++e) {
        const double a = fabs(g[i][e] - rf[i][e]);
        over += a > bound;
        over_half += a > 0.5 * bound;
      }
      printf("      %s worst at b%zu s%zu h%zu d%zu: got %.5f ref %.5f emul %.5f liblowp %.5f; "
             "%zu over bound, %zu over half of it (of %zu)\n", nm[i],
             w / ((size_t)S * H * D), w / ((size_t)H * D) % S, w / D % H, w % D, g[i][w], rf[i][w],
             em[i][w], lp[i][w], over, over_half, n);
    }
  }
  (void)quick;
  cudaFree(ws); cudaFree(lse_d);
  dtensor_t *all[8] = {&tq, &tk, &tv, &to, &tdo, &tdq, &tdk, &tdv};
  for (int i = 0; i < 8; ++i) cudaFree(all[i]->dev);
  for (int i = 0; i < 3; ++i) { free(raw0[i]); free(raw1[i]); }
  free(q); free(k); free(v); free(dout); free(o); free(lse); free(lse_h);
  free(dq_r); free(dk_r); free(dv_r); free(dq_l); free(dk_l); free(dv_l);
  free(dq_g); free(dk_g); free(dv_g); free(dq_e); free(dk_e); free(dv_e);
  return fail;
}

int main(int argc, char **argv) {
  /* quick: skip the largest cases; tiny: only small ones (for the sanitizers) */
  const int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
  const int tiny = argc > 1 && strcmp(argv[1], "tiny") == 0;
  /* cpu N: only the CPU references of case N (no GPU), to study the criterion */
  const int cpu_case = argc > 2 && strcmp(argv[1], "cpu") == 0 ? atoi(argv[2]) : -1;
  const int BF = CUDADENT_DTYPE_BF16, FP = CUDADENT_DTYPE_FP16;
  /* b sq sk hq hkv d causal wl wr dtype det layout outliers */
  const tcase_t cases[] = {
      {1, 1, 1, 1, 1, 64, 0, -1, -1, BF, 0, 0, 0},
      {1, 1, 1, 1, 1, 128, 1, -1, -1, FP, 0, 0, 0},
      {1, 17, 17, 2, 1, 64, 1, -1, -1, BF, 0, 2, 0},
      {2, 127, 127, 4, 2, 128, 0, -1, -1, BF, 0, 1, 0},
      {2, 128, 128, 2, 2, 64, 0, -1, -1, FP, 0, 0, 0},
      {1, 256, 256, 2, 2, 128, 1, -1, -1, BF, 0, 0, 0},
      {1, 1000, 1000, 2, 2, 64, 1, -1, -1, BF, 0, 2, 0},
      {1, 1000, 1000, 2, 1, 128, 0, -1, -1, FP, 0, 0, 1},
      {1, 130, 1000, 2, 2, 64, 1, -1, -1, BF, 0, 0, 0},
      {1, 1000, 130, 2, 2, 128, 1, -1, -1, BF, 0, 0, 0},   /* early rows fully masked */
      {1, 1000, 130, 2, 2, 64, 0, -1, -1, FP, 0, 1, 0},
      {1, 500, 700, 2, 1, 64, 0, 64, 32, BF, 0, 0, 0},
      {1, 700, 500, 2, 2, 128, 0, 100, -1, FP, 0, 2, 0},
      {1, 333, 333, 1, 1, 64, 0, 0, 0, BF, 0, 0, 0},       /* diagonal only */
      {1, 300, 777, 2, 2, 128, 0, 5, 7, BF, 0, 0, 0},       /* windows with sk > sq */
      {1, 300, 300, 8, 1, 128, 0, -1, -1, BF, 0, 0, 0},    /* MQA */
      {2, 257, 300, 6, 2, 64, 1, -1, -1, FP, 0, 2, 0},     /* GQA causal */
      {1, 4097, 4097, 1, 1, 64, 1, -1, -1, BF, 0, 0, 0},
      {1, 4097, 4097, 1, 1, 128, 0, -1, -1, BF, 0, 0, 1},
      /* deterministic: also checked for bit-identity over 3 runs */
      {1, 1000, 1000, 2, 2, 64, 1, -1, -1, BF, 1, 0, 0},
      {2, 515, 515, 4, 2, 128, 0, -1, -1, FP, 1, 2, 0},
      {1, 2048, 2048, 2, 1, 128, 1, -1, -1, BF, 1, 0, 0},
      {1, 1000, 130, 2, 2, 64, 1, -1, -1, BF, 1, 0, 0},
      {1, 700, 500, 4, 4, 64, 0, 100, 20, BF, 1, 1, 0},
      /* shapes of the lead's gpu_bwd/39 and /47 (few query rows, outliers) */
      {1, 17, 4097, 2, 2, 128, 1, -1, -1, FP, 0, 1, 1},
      {1, 1, 1000, 4, 4, 128, 0, 33, 7, BF, 0, 1, 1},
  };
  const int n = (int)(sizeof cases / sizeof cases[0]);
  int fails = 0;
  if (cpu_case >= 0) return run_case(&cases[cpu_case], 0, 1);
  for (int i = 0; i < n; ++i) {
    if (quick && (long)cases[i].sq * cases[i].sk > 2000000) continue;
    if (tiny && (long)cases[i].sq * cases[i].sk > 300000) continue;
    fails += run_case(&cases[i], quick, 0);
    fflush(stdout);
  }
  printf("check_bwd: %d cases, %d failed\n", n, fails);
  return fails ? 1 : 0;
}
