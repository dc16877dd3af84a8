/* problem.c - see problem.h. */
#define _POSIX_C_SOURCE 200809L
#include "problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "reference.h"

#define POISON_BITS 0xFFFFu /* a NaN in both fp16 and bf16 */

/* ---- random numbers: splitmix64 + Box-Muller --------------------------------------------------- */
static uint64_t rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double rng_uniform(uint64_t *state) { /* (0, 1) */
  return ((double)(rng_next(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double rng_normal(uint64_t *state) {
  double u1 = rng_uniform(state), u2 = rng_uniform(state);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static uint16_t to_bits(cudadent_dtype_t dtype, double x) {
  return dtype == CUDADENT_DTYPE_BF16 ? ref_double_to_bf16_bits(x) : ref_double_to_half_bits(x);
}
static double from_bits(cudadent_dtype_t dtype, uint16_t b) {
  return dtype == CUDADENT_DTYPE_BF16 ? ref_bf16_bits_to_double(b) : ref_half_bits_to_double(b);
}

const char *problem_dtype_name(cudadent_dtype_t dtype) {
  switch (dtype) {
    case CUDADENT_DTYPE_FP16: return "fp16";
    case CUDADENT_DTYPE_BF16: return "bf16";
    case CUDADENT_DTYPE_FP8_E4M3: return "fp8_e4m3";
  }
  return "?";
}

void problem_describe(const problem_desc_t *d, char *buf, size_t len) {
  static const char *layouts[] = {"contiguous", "padded", "heads-first", "huge-batch-stride"};
  char mask[48] = "";
  if (d->causal) snprintf(mask, sizeof mask, " causal");
  if (d->window_left >= 0 || d->window_right >= 0)
    snprintf(mask + strlen(mask), sizeof mask - strlen(mask), " window(%d,%d)", d->window_left,
             d->window_right);
  snprintf(buf, len, "b%d sq%d sk%d h%d/%d d%d %s%s %s%s%s", d->batch, d->seqlen_q, d->seqlen_k,
           d->heads_q, d->heads_kv, d->head_dim, problem_dtype_name(d->dtype), mask,
           layouts[d->layout], d->outliers ? " outliers" : "", d->late_max ? " late-max" : "");
}

int problem_gpu_present(char *reason, size_t reason_len) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess && count > 0) return 1;
  (void)cudaGetLastError();
  /* "CUDA driver version is insufficient" is also what the runtime says when there is no driver
   * at all: cudaDriverGetVersion tells the two apart (0: no driver installed) */
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);
  (void)cudaRuntimeGetVersion(&runtime);
  if (driver == 0)
    snprintf(reason, reason_len, "no CUDA device: no NVIDIA driver is installed (no GPU here)");
  else if (err == cudaErrorInsufficientDriver)
    snprintf(reason, reason_len,
             "no usable CUDA device: the NVIDIA driver supports CUDA %d.%d, this build's runtime "
             "needs %d.%d (update the driver)",
             driver / 1000, driver % 1000 / 10, runtime / 1000, runtime % 1000 / 10);
  else if (err == cudaSuccess || err == cudaErrorNoDevice)
    snprintf(reason, reason_len, "no CUDA device: the NVIDIA driver (CUDA %d.%d) sees no GPU",
             driver / 1000, driver % 1000 / 10);
  else
    snprintf(reason, reason_len, "no usable CUDA device: %s (%s)", cudaGetErrorString(err),
             cudaGetErrorName(err));
  return 0;
}

/* ---- layouts ------------------------------------------------------------------------------------ */

/* Strides for dims {batch, seqlen, heads, head_dim}; returns the elements to allocate. */
static size_t layout_strides(problem_layout_t layout, const int dims[4], cudadent_tensor_t *t) {
  const int64_t b = dims[0], s = dims[1], h = dims[2], d = dims[3];
  t->stride_dim = 1;
  switch (layout) {
    case LAYOUT_PADDED: { /* each head row padded by 8 elements, each batch by 2 rows */
      const int64_t head = d + 8, row = h * head, batch = (s + 2) * row;
      t->stride_head = head;
      t->stride_seq = row;
      t->stride_batch = batch;
      return (size_t)(b * batch);
    }
    case LAYOUT_HUGE_BATCH_STRIDE:
      t->stride_head = d;
      t->stride_seq = h * d;
      t->stride_batch = ((int64_t)1 << 31) + 1024;
      return b > 0 ? (size_t)((b - 1) * t->stride_batch + s * h * d) : 0;
    case LAYOUT_HEADS_FIRST:
      t->stride_seq = d;
      t->stride_head = s * d;
      t->stride_batch = h * s * d;
      return (size_t)(b * h * s * d);
    case LAYOUT_CONTIGUOUS:
    default:
      t->stride_head = d;
      t->stride_seq = h * d;
      t->stride_batch = s * h * d;
      return (size_t)(b * s * h * d);
  }
}

static int64_t offset_of(const cudadent_tensor_t *t, int b, int s, int h, int d) {
  return b * t->stride_batch + s * t->stride_seq + h * t->stride_head + d;
}

#define CUDA_OR_FAIL(call)                                                                  \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      snprintf(err, err_len, "%s: %s", #call, cudaGetErrorString(e_));                      \
      return -1;                                                                            \
    }                                                                                       \
  } while (0)

static int tensor_alloc(problem_tensor_t *pt, problem_layout_t layout, int b, int s, int h, int d,
                        char *err, size_t err_len) {
  pt->dims[0] = b;
  pt->dims[1] = s;
  pt->dims[2] = h;
  pt->dims[3] = d;
  pt->alloc_elems = layout_strides(layout, pt->dims, &pt->t);
  size_t bytes = pt->alloc_elems * 2;
  if (bytes == 0) bytes = 16;
  CUDA_OR_FAIL(cudaMalloc(&pt->device, bytes));
  pt->t.data = pt->device;
  return 0;
}

/* Random input: dense host copy (returned) scattered into the device layout. */
static int tensor_fill_random(problem_tensor_t *pt, cudadent_dtype_t dtype, int outliers,
                              int big_rows, uint64_t *rng, uint16_t **host_dense, char *err,
                              size_t err_len) {
  const int *dm = pt->dims;
  const size_t n = (size_t)dm[0] * dm[1] * dm[2] * dm[3];
  uint16_t *dense = malloc((n ? n : 1) * sizeof *dense);
  uint16_t *strided = malloc((pt->alloc_elems ? pt->alloc_elems : 1) * sizeof *strided);
  if (!dense || !strided) {
    free(dense);
    free(strided);
    snprintf(err, err_len, "out of host memory");
    return -1;
  }
  memset(strided, 0xFF, pt->alloc_elems * sizeof *strided); /* POISON_BITS between elements */
  size_t i = 0;
  for (int b = 0; b < dm[0]; ++b)
    for (int s = 0; s < dm[1]; ++s)
      for (int h = 0; h < dm[2]; ++h)
        for (int d = 0; d < dm[3]; ++d, ++i) {
          double x = rng_normal(rng);
          if (outliers && rng_uniform(rng) < 0.002) x *= 8.0 + 8.0 * rng_uniform(rng);
          if (s < big_rows) x *= 8.0;
          dense[i] = to_bits(dtype, x);
          strided[offset_of(&pt->t, b, s, h, d)] = dense[i];
        }
  cudaError_t e = cudaMemcpy(pt->device, strided, pt->alloc_elems * 2, cudaMemcpyHostToDevice);
  free(strided);
  *host_dense = dense;
  if (e != cudaSuccess) {
    snprintf(err, err_len, "upload: %s", cudaGetErrorString(e));
    return -1;
  }
  return 0;
}

int problem_create(problem_t *pr, const problem_desc_t *desc, char *err, size_t err_len) {
  memset(pr, 0, sizeof *pr);
  pr->d = *desc;
  problem_desc_t *d = &pr->d;
  if (d->softmax_scale == 0.0f) d->softmax_scale = (float)(1.0 / sqrt((double)d->head_dim));
  if (d->seed == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    d->seed = ((uint64_t)ts.tv_sec * 1000000007ull) ^ (uint64_t)ts.tv_nsec;
  }
  uint64_t rng = d->seed;
  const problem_layout_t L = d->layout;
  if (tensor_alloc(&pr->q, L, d->batch, d->seqlen_q, d->heads_q, d->head_dim, err, err_len) ||
      tensor_alloc(&pr->k, L, d->batch, d->seqlen_k, d->heads_kv, d->head_dim, err, err_len) ||
      tensor_alloc(&pr->v, L, d->batch, d->seqlen_k, d->heads_kv, d->head_dim, err, err_len) ||
      tensor_alloc(&pr->o, L, d->batch, d->seqlen_q, d->heads_q, d->head_dim, err, err_len) ||
      tensor_alloc(&pr->dout, L, d->batch, d->seqlen_q, d->heads_q, d->head_dim, err, err_len) ||
      tensor_alloc(&pr->dq, L, d->batch, d->seqlen_q, d->heads_q, d->head_dim, err, err_len) ||
      tensor_alloc(&pr->dk, L, d->batch, d->seqlen_k, d->heads_kv, d->head_dim, err, err_len) ||
      tensor_alloc(&pr->dv, L, d->batch, d->seqlen_k, d->heads_kv, d->head_dim, err, err_len))
    return -1;
  size_t lse_n = (size_t)d->batch * d->heads_q * d->seqlen_q;
  CUDA_OR_FAIL(cudaMalloc((void **)&pr->lse, (lse_n ? lse_n : 1) * sizeof(float)));
  if (tensor_fill_random(&pr->q, d->dtype, d->outliers, 0, &rng, &pr->host_q, err, err_len) ||
      tensor_fill_random(&pr->k, d->dtype, d->outliers, d->late_max ? 64 : 0, &rng, &pr->host_k,
                         err, err_len) ||
      tensor_fill_random(&pr->v, d->dtype, d->outliers, 0, &rng, &pr->host_v, err, err_len) ||
      tensor_fill_random(&pr->dout, d->dtype, 0, 0, &rng, &pr->host_dout, err, err_len))
    return -1;
  if (problem_poison(pr, 0) != 0 || problem_poison(pr, 1) != 0) {
    snprintf(err, err_len, "poisoning outputs failed");
    return -1;
  }
  return 0;
}

void problem_destroy(problem_t *pr) {
  problem_tensor_t *ts[] = {&pr->q, &pr->k, &pr->v, &pr->o, &pr->dout, &pr->dq, &pr->dk, &pr->dv};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) cudaFree(ts[i]->device);
  cudaFree(pr->lse);
  cudaFree(pr->workspace);
  free(pr->host_q);
  free(pr->host_k);
  free(pr->host_v);
  free(pr->host_dout);
  memset(pr, 0, sizeof *pr);
}

/* The fields the fwd and bwd params structs share, from the problem. */
#define COPY_SHARED_FIELDS(p, pr)                                                      \
  do {                                                                                 \
    (p)->struct_size = sizeof *(p);                                                    \
    (p)->dtype = (pr)->d.dtype;                                                        \
    (p)->batch = (pr)->d.batch;                                                        \
    (p)->seqlen_q = (pr)->d.seqlen_q;                                                  \
    (p)->seqlen_k = (pr)->d.seqlen_k;                                                  \
    (p)->heads_q = (pr)->d.heads_q;                                                    \
    (p)->heads_kv = (pr)->d.heads_kv;                                                  \
    (p)->head_dim = (pr)->d.head_dim;                                                  \
    (p)->q = (pr)->q.t;                                                                \
    (p)->k = (pr)->k.t;                                                                \
    (p)->v = (pr)->v.t;                                                                \
    (p)->o = (pr)->o.t;                                                                \
    (p)->softmax_scale = (pr)->d.softmax_scale;                                        \
    (p)->causal = (pr)->d.causal;                                                      \
    (p)->window_left = (pr)->d.window_left;                                            \
    (p)->window_right = (pr)->d.window_right;                                          \
    (p)->deterministic = (pr)->d.deterministic;                                        \
  } while (0)

void problem_fwd_params(const problem_t *pr, cudadent_attn_fwd_params_t *p) {
  memset(p, 0, sizeof *p);
  COPY_SHARED_FIELDS(p, pr);
  p->lse = pr->d.no_lse ? NULL : pr->lse;
}

void problem_bwd_params(const problem_t *pr, cudadent_attn_bwd_params_t *p) {
  memset(p, 0, sizeof *p);
  COPY_SHARED_FIELDS(p, pr);
  p->dout = pr->dout.t;
  p->dq = pr->dq.t;
  p->dk = pr->dk.t;
  p->dv = pr->dv.t;
  p->lse = pr->lse;
}

int problem_poison(problem_t *pr, int bwd) {
  problem_tensor_t *fwd_outs[] = {&pr->o}, *bwd_outs[] = {&pr->dq, &pr->dk, &pr->dv};
  problem_tensor_t **outs = bwd ? bwd_outs : fwd_outs;
  const int n = bwd ? 3 : 1;
  for (int i = 0; i < n; ++i)
    if (cudaMemset(outs[i]->device, 0xFF, (outs[i]->alloc_elems ? outs[i]->alloc_elems : 8) * 2) !=
        cudaSuccess)
      return -1;
  if (!bwd) {
    size_t lse_n = (size_t)pr->d.batch * pr->d.heads_q * pr->d.seqlen_q;
    if (cudaMemset(pr->lse, 0xFF, (lse_n ? lse_n : 1) * sizeof(float)) != cudaSuccess) return -1;
  }
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

static cudadent_status_t ensure_workspace(problem_t *pr, size_t bytes) {
  if (bytes <= pr->workspace_bytes) return CUDADENT_STATUS_SUCCESS;
  cudaFree(pr->workspace);
  pr->workspace = NULL;
  pr->workspace_bytes = 0;
  if (cudaMalloc(&pr->workspace, bytes) != cudaSuccess) return CUDADENT_STATUS_CUDA_ERROR;
  pr->workspace_bytes = bytes;
  return CUDADENT_STATUS_SUCCESS;
}

cudadent_status_t problem_run_fwd(problem_t *pr, void *stream) {
  cudadent_attn_fwd_params_t p;
  problem_fwd_params(pr, &p);
  size_t bytes = 0;
  cudadent_status_t st = cudadent_attn_fwd_workspace_size(&p, &bytes);
  if (st != CUDADENT_STATUS_SUCCESS) return st;
  if ((st = ensure_workspace(pr, bytes)) != CUDADENT_STATUS_SUCCESS) return st;
  return cudadent_attn_fwd(&p, pr->workspace, pr->workspace_bytes, (cudadent_stream_t)stream);
}

cudadent_status_t problem_run_bwd(problem_t *pr, void *stream) {
  cudadent_attn_bwd_params_t p;
  problem_bwd_params(pr, &p);
  size_t bytes = 0;
  cudadent_status_t st = cudadent_attn_bwd_workspace_size(&p, &bytes);
  if (st != CUDADENT_STATUS_SUCCESS) return st;
  if ((st = ensure_workspace(pr, bytes)) != CUDADENT_STATUS_SUCCESS) return st;
  return cudadent_attn_bwd(&p, pr->workspace, pr->workspace_bytes, (cudadent_stream_t)stream);
}

/* ---- checking ------------------------------------------------------------------------------------ */

static double *dense_to_double(const uint16_t *bits, size_t n, cudadent_dtype_t dtype) {
  double *x = malloc((n ? n : 1) * sizeof *x);
  if (x)
    for (size_t i = 0; i < n; ++i) x[i] = from_bits(dtype, bits[i]);
  return x;
}

/* Downloads a 16-bit output; returns a dense double array (caller frees) and counts padding
 * elements that are no longer poison into *clobbered. */
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
    if (!inside[j] && raw[j] != POISON_BITS) ++bad;
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

static void ref_problem_of(const problem_desc_t *d, ref_problem_t *rp, int round_dtype) {
  memset(rp, 0, sizeof *rp);
  rp->batch = d->batch;
  rp->seqlen_q = d->seqlen_q;
  rp->seqlen_k = d->seqlen_k;
  rp->heads_q = d->heads_q;
  rp->heads_kv = d->heads_kv;
  rp->head_dim = d->head_dim;
  rp->softmax_scale = d->softmax_scale;
  rp->causal = d->causal;
  rp->window_left = d->window_left;
  rp->window_right = d->window_right;
  rp->round_dtype = round_dtype;
  rp->threads = 0;
}

int problem_check(problem_t *pr, int bwd, check_result_t *r) {
  memset(r, 0, sizeof *r);
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  const problem_desc_t *d = &pr->d;
  const size_t nq = (size_t)d->batch * d->seqlen_q * d->heads_q * d->head_dim;
  const size_t nk = (size_t)d->batch * d->seqlen_k * d->heads_kv * d->head_dim;
  const size_t nl = (size_t)d->batch * d->heads_q * d->seqlen_q;
  double *q = dense_to_double(pr->host_q, nq, d->dtype);
  double *k = dense_to_double(pr->host_k, nk, d->dtype);
  double *v = dense_to_double(pr->host_v, nk, d->dtype);
  double *dout = dense_to_double(pr->host_dout, nq, d->dtype);
  double *o_ref = malloc((nq + 1) * sizeof(double)), *o_low = malloc((nq + 1) * sizeof(double));
  double *lse_ref = malloc((nl + 1) * sizeof(double));
  float *lse_f = malloc((nl + 1) * sizeof(float));
  double *lse = malloc((nl + 1) * sizeof(double));
  int rc = -1;
  double *o = NULL, *g[3] = {NULL, NULL, NULL}, *g_ref[3] = {NULL, NULL, NULL},
         *g_low[3] = {NULL, NULL, NULL};
  if (!q || !k || !v || !dout || !o_ref || !o_low || !lse_ref || !lse_f || !lse) goto done;

  ref_problem_t rp;
  ref_problem_of(d, &rp, REF_ROUND_NONE);
  ref_attn_fwd(&rp, q, k, v, o_ref, lse_ref);
  ref_problem_of(d, &rp, d->dtype);
  ref_attn_fwd(&rp, q, k, v, o_low, NULL);

  o = download_output(&pr->o, d->dtype, &r->o.bad_elements);
  if (!o) goto done;
  if (d->no_lse) {
    for (size_t row = 0; row < nl; ++row) lse_f[row] = -INFINITY; /* not asked for */
  } else if (cudaMemcpy(lse_f, pr->lse, nl * sizeof(float), cudaMemcpyDeviceToHost) !=
             cudaSuccess) {
    goto done;
  }
  /* Rows that see no key: O exactly 0 and LSE exactly -inf. */
  for (size_t row = 0; row < nl; ++row) {
    if (!isinf(lse_ref[row])) continue;
    const int b = (int)(row / ((size_t)d->heads_q * d->seqlen_q));
    const int h = (int)(row / d->seqlen_q % d->heads_q), i = (int)(row % d->seqlen_q);
    if (!(isinf(lse_f[row]) && lse_f[row] < 0)) ++r->lse.bad_elements;
    const double *orow = o + (((size_t)b * d->seqlen_q + i) * d->heads_q + h) * d->head_dim;
    for (int c = 0; c < d->head_dim; ++c)
      if (orow[c] != 0.0) ++r->o.bad_elements;
  }
  compare(&r->o, o, o_ref, o_low, nq, d->dtype);
  if (nq > 0) {
    const size_t i = r->o.worst / d->head_dim; /* (b, s, h) of the worst O element */
    const size_t h = i % d->heads_q, s = i / d->heads_q % d->seqlen_q,
                 b = i / ((size_t)d->heads_q * d->seqlen_q);
    const size_t row = (b * d->heads_q + h) * d->seqlen_q + s;
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
    for (int t = 0; t < 3; ++t) {
      const size_t n = t == 0 ? nq : nk;
      g_ref[t] = malloc((n + 1) * sizeof(double));
      g_low[t] = malloc((n + 1) * sizeof(double));
      if (!g_ref[t] || !g_low[t]) goto done;
    }
    ref_problem_of(d, &rp, REF_ROUND_NONE);
    ref_attn_bwd(&rp, q, k, v, dout, g_ref[0], g_ref[1], g_ref[2]);
    ref_problem_of(d, &rp, d->dtype);
    rp.given_o = o; /* the O the backward was handed: an input of the backward */
    ref_attn_bwd(&rp, q, k, v, dout, g_low[0], g_low[1], g_low[2]);
    const problem_tensor_t *gt[3] = {&pr->dq, &pr->dk, &pr->dv};
    error_figure_t *gf[3] = {&r->dq, &r->dk, &r->dv};
    for (int t = 0; t < 3; ++t) {
      g[t] = download_output(gt[t], d->dtype, &gf[t]->bad_elements);
      if (!g[t]) goto done;
      compare(gf[t], g[t], g_ref[t], g_low[t], t == 0 ? nq : nk, d->dtype);
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
  printf("    %-4s max_err %.3e  lowp_err %.3e  tol %.3e  bad %ld  %s\n", name, f->max_err,
         f->max_err_lowp, f->tolerance, f->bad_elements, f->pass ? "ok" : "FAIL");
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

static int cmp_double(const void *a, const void *b) { /* qsort, ascending */
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
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

int problem_download_grads(const problem_t *pr, uint16_t **dq, uint16_t **dk, uint16_t **dv) {
  const problem_tensor_t *ts[3] = {&pr->dq, &pr->dk, &pr->dv};
  uint16_t **outs[3] = {dq, dk, dv};
  for (int t = 0; t < 3; ++t) {
    *outs[t] = malloc((ts[t]->alloc_elems ? ts[t]->alloc_elems : 1) * 2);
    if (!*outs[t] || cudaMemcpy(*outs[t], ts[t]->device, ts[t]->alloc_elems * 2,
                                cudaMemcpyDeviceToHost) != cudaSuccess)
      return -1;
  }
  return 0;
}

/* ---- timing -------------------------------------------------------------------------------------- */

#undef CUDA_OR_FAIL
#define CUDA_OR_FAIL(call)                                                                  \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      snprintf(err, err_len, "%s: %s", #call, cudaGetErrorString(e_));                      \
      goto fail;                                                                            \
    }                                                                                       \
  } while (0)

static cudadent_status_t run_once(problem_t *pr, int bwd, cudaStream_t s) {
  return bwd ? problem_run_bwd(pr, s) : problem_run_fwd(pr, s);
}

double problem_time_ms(problem_t *pr, int bwd, int iters, char *err, size_t err_len) {
  double result = -1.0;
  void *flush = NULL;
  const size_t flush_bytes = 256u << 20; /* several times any L2 */
  cudaEvent_t start = NULL, stop = NULL;
  double *times = calloc((size_t)(iters > 0 ? iters : 1), sizeof *times);
  if (!times) return -1.0;
  CUDA_OR_FAIL(cudaMalloc(&flush, flush_bytes));
  CUDA_OR_FAIL(cudaEventCreate(&start));
  CUDA_OR_FAIL(cudaEventCreate(&stop));
  for (int w = 0; w < 3; ++w) {
    cudadent_status_t st = run_once(pr, bwd, 0);
    if (st != CUDADENT_STATUS_SUCCESS) {
      snprintf(err, err_len, "%s: %s", cudadent_get_error_string(st),
               cudadent_get_last_error_message());
      goto fail;
    }
  }
  for (int i = 0; i < iters; ++i) {
    CUDA_OR_FAIL(cudaMemsetAsync(flush, i & 0xFF, flush_bytes, 0));
    CUDA_OR_FAIL(cudaEventRecord(start, 0));
    (void)run_once(pr, bwd, 0);
    CUDA_OR_FAIL(cudaEventRecord(stop, 0));
    CUDA_OR_FAIL(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_OR_FAIL(cudaEventElapsedTime(&ms, start, stop));
    times[i] = ms;
  }
  qsort(times, (size_t)iters, sizeof *times, cmp_double);
  result = times[iters / 2];
fail:
  free(times);
  cudaFree(flush);
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  return result;
}

double problem_graph_us(problem_t *pr, int bwd, int calls, char *err, size_t err_len) {
  double result = -1.0;
  cudaStream_t s = NULL;
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  cudaEvent_t start = NULL, stop = NULL;
  double times[10];
  CUDA_OR_FAIL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CUDA_OR_FAIL(cudaEventCreate(&start));
  CUDA_OR_FAIL(cudaEventCreate(&stop));
  if (run_once(pr, bwd, s) != CUDADENT_STATUS_SUCCESS) { /* sizes the workspace outside capture */
    snprintf(err, err_len, "%s", cudadent_get_last_error_message());
    goto fail;
  }
  CUDA_OR_FAIL(cudaStreamSynchronize(s));
  CUDA_OR_FAIL(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < calls; ++i) (void)run_once(pr, bwd, s);
  CUDA_OR_FAIL(cudaStreamEndCapture(s, &graph));
  CUDA_OR_FAIL(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OR_FAIL(cudaGraphLaunch(exec, s));
  CUDA_OR_FAIL(cudaStreamSynchronize(s));
  for (int r = 0; r < 10; ++r) {
    CUDA_OR_FAIL(cudaEventRecord(start, s));
    CUDA_OR_FAIL(cudaGraphLaunch(exec, s));
    CUDA_OR_FAIL(cudaEventRecord(stop, s));
    CUDA_OR_FAIL(cudaEventSynchronize(stop));
    float ms = 0.0f;
    CUDA_OR_FAIL(cudaEventElapsedTime(&ms, start, stop));
    times[r] = ms * 1000.0 / calls;
  }
  qsort(times, 10, sizeof times[0], cmp_double);
  result = times[5];
fail:
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  if (s) cudaStreamDestroy(s);
  return result;
}

double problem_flops(const problem_desc_t *d, int bwd) {
  double pairs;
  if (d->window_left < 0 && d->window_right < 0 && !d->causal) {
    pairs = (double)d->seqlen_q * d->seqlen_k;
  } else if (d->causal && d->window_left < 0 && d->seqlen_q == d->seqlen_k) {
    pairs = (double)d->seqlen_q * d->seqlen_k / 2.0; /* the convention: halved for causal */
  } else {
    pairs = 0.0;
    for (int i = 0; i < d->seqlen_q; ++i) {
      /* visible columns form one interval per row */
      const int shift = d->seqlen_k - d->seqlen_q;
      int lo = d->window_left >= 0 ? i + shift - d->window_left : 0;
      int right = d->causal ? 0 : d->window_right;
      int hi = right >= 0 ? i + shift + right : d->seqlen_k - 1;
      if (lo < 0) lo = 0;
      if (hi > d->seqlen_k - 1) hi = d->seqlen_k - 1;
      if (hi >= lo) pairs += hi - lo + 1;
    }
  }
  double f = 4.0 * d->batch * d->heads_q * pairs * d->head_dim;
  return bwd ? 2.5 * f : f;
}
