/*
 * problem.c - the set-up of a problem (problem.h): random inputs in the chosen layout, poisoned
 * outputs, the params and the calls through the public API; also the dtype names, the one-line
 * description and the GPU probe. The check against the reference: problem_check.c; timing and
 * FLOPs: problem_timing.c.
 */
#define _POSIX_C_SOURCE 200809L
#include "problem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "reference.h"
#include "problem_internal.h"

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

const char *problem_dtype_name(cudadent_dtype_t dtype) {
  switch (dtype) {
    case CUDADENT_DTYPE_FP16: return "fp16";
    case CUDADENT_DTYPE_BF16: return "bf16";
    case CUDADENT_DTYPE_FP8_E4M3: return "fp8_e4m3";
  }
  return "?";
}

void problem_describe(const problem_desc_t *d, char *buf, size_t len) {
  static const char *layouts[] = {"contiguous", "padded", "heads-first", "huge-batch-stride",
                                  "gapped"};
  char mask[48] = "", dims[32], cap[32] = "";
  if (d->causal) snprintf(mask, sizeof mask, " causal");
  if (d->window_left >= 0 || d->window_right >= 0)
    snprintf(mask + strlen(mask), sizeof mask - strlen(mask), " window(%d,%d)", d->window_left,
             d->window_right);
  if (d->head_dim_v > 0 && d->head_dim_v != d->head_dim)
    snprintf(dims, sizeof dims, "d%d/%d", d->head_dim, d->head_dim_v);
  else
    snprintf(dims, sizeof dims, "d%d", d->head_dim);
  if (d->softcap != 0.0f) snprintf(cap, sizeof cap, " softcap %g", (double)d->softcap);
  const int layout_ok = (int)d->layout >= 0 && (size_t)d->layout < sizeof layouts / sizeof *layouts;
  if (d->varlen > 0) { /* "varlen 5 seqs max 300/400 (0:0 1:1 ...)" */
    int used = snprintf(buf, len, "varlen %d seqs max %d/%d (", d->varlen, d->seqlen_q, d->seqlen_k);
    for (int i = 0; i < d->varlen && used > 0 && (size_t)used < len; ++i)
      used += snprintf(buf + used, len - (size_t)used, "%s%d:%d%s", i ? " " : "", d->varlen_q[i],
                       d->varlen_k[i], d->varlen_used ? "u" : "");
    if (used > 0 && (size_t)used < len) {
      buf += used;
      len -= (size_t)used;
      snprintf(buf, len, ")%s%s ", d->varlen_cu_q || d->varlen_cu_k ? " invalid cu_seqlens" : "",
               d->varlen_report ? " report" : "");
      used = (int)strlen(buf);
      buf += used;
      len -= (size_t)used;
    }
    snprintf(buf, len, "h%d/%d %s %s%s%s %s%s%s", d->heads_q, d->heads_kv, dims,
             problem_dtype_name(d->dtype), mask, cap, layout_ok ? layouts[d->layout] : "?",
             d->outliers ? " outliers" : "", d->late_max ? " late-max" : "");
    return;
  }
  snprintf(buf, len, "b%d sq%d sk%d h%d/%d %s %s%s%s %s%s%s", d->batch, d->seqlen_q, d->seqlen_k,
           d->heads_q, d->heads_kv, dims, problem_dtype_name(d->dtype), mask, cap,
           layout_ok ? layouts[d->layout] : "?", d->outliers ? " outliers" : "",
           d->late_max ? " late-max" : "");
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

/* The widest row a kernel may read of a problem: max(head_dim, head_dim_v) rounded up to 64 (the
 * portable kernels' widths: one of 64, 128, 192, 256), or desc->gap_width where that is larger. */
static int kernel_width(const problem_desc_t *d) {
  const int dv = problem_head_dim_v(d), m = d->head_dim > dv ? d->head_dim : dv;
  const int w = m <= 64 ? 64 : (m + 63) / 64 * 64;
  return d->gap_width > w ? d->gap_width : w;
}

/* Strides for dims {batch, seqlen, heads, head_dim}; returns the elements to allocate. width:
 * kernel_width of the problem (LAYOUT_GAPPED's rows). */
static size_t layout_strides(problem_layout_t layout, const int dims[4], int width,
                             cudadent_tensor_t *t) {
  const int64_t b = dims[0], s = dims[1], h = dims[2], d = dims[3];
  t->stride_dim = 1;
  switch (layout) {
    case LAYOUT_GAPPED: { /* head rows of width + 8 elements (a gap of width - d + 8), a gap row
                             after each batch */
      const int64_t head = (width > d ? width : d) + 8, row = h * head, batch = (s + 1) * row;
      t->stride_head = head;
      t->stride_seq = row;
      t->stride_batch = batch;
      return (size_t)(b * batch);
    }
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

#define CUDA_OR_FAIL(call)                                                                  \
  do {                                                                                      \
    cudaError_t e_ = (call);                                                                \
    if (e_ != cudaSuccess) {                                                                \
      snprintf(err, err_len, "%s: %s", #call, cudaGetErrorString(e_));                      \
      return -1;                                                                            \
    }                                                                                       \
  } while (0)

static int tensor_alloc(problem_tensor_t *pt, problem_layout_t layout, int width, int b, int s,
                        int h, int d, char *err, size_t err_len) {
  pt->dims[0] = b;
  pt->dims[1] = s;
  pt->dims[2] = h;
  pt->dims[3] = d;
  pt->alloc_elems = layout_strides(layout, pt->dims, width, &pt->t);
  size_t bytes = pt->alloc_elems * 2;
  if (bytes == 0) bytes = 16;
  CUDA_OR_FAIL(cudaMalloc(&pt->device, bytes));
  pt->t.data = pt->device;
  return 0;
}

/* A gap element of LAYOUT_GAPPED's inputs: large, finite in fp16 and bf16, random sign and
 * size (a constant would shift every score of a row alike, which the softmax does not see). */
static uint16_t gap_bits(cudadent_dtype_t dtype, uint64_t *gap_rng) {
  const double x = 5e3 + 1e4 * rng_uniform(gap_rng);
  return to_bits(dtype, rng_uniform(gap_rng) < 0.5 ? -x : x);
}

/* The elements of an allocation outside the tensor: the gaps (and padding) of its layout. */
static unsigned char *outside_mask(const problem_tensor_t *pt) {
  const int *dm = pt->dims;
  unsigned char *outside = malloc(pt->alloc_elems ? pt->alloc_elems : 1);
  if (!outside) return NULL;
  memset(outside, 1, pt->alloc_elems);
  for (int b = 0; b < dm[0]; ++b)
    for (int s = 0; s < dm[1]; ++s)
      for (int h = 0; h < dm[2]; ++h)
        memset(outside + offset_of(&pt->t, b, s, h, 0), 0, (size_t)dm[3]);
  return outside;
}

/* Random input: dense host copy (returned) scattered into the device layout. Elements outside
 * the tensor hold the poison, or with gap_rng (LAYOUT_GAPPED) large values (gap_bits). */
static int tensor_fill_random(problem_tensor_t *pt, cudadent_dtype_t dtype, int outliers,
                              int big_rows, uint64_t *rng, uint64_t *gap_rng,
                              uint16_t **host_dense, char *err, size_t err_len) {
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
  if (gap_rng != NULL) {
    unsigned char *outside = outside_mask(pt);
    if (!outside) {
      free(dense);
      free(strided);
      snprintf(err, err_len, "out of host memory");
      return -1;
    }
    for (size_t j = 0; j < pt->alloc_elems; ++j)
      if (outside[j]) strided[j] = gap_bits(dtype, gap_rng);
    free(outside);
  }
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

/* varlen: totals, batch and the max lengths from the sequences; the arrays on the host and the
 * device (the prefix sums, or the desc's invalid ones); the report's buffer. */
static int setup_varlen(problem_t *pr, char *err, size_t err_len) {
  problem_desc_t *d = &pr->d;
  const int n = d->varlen;
  if (!d->varlen_q || !d->varlen_k) {
    snprintf(err, err_len, "varlen: no lengths");
    return -1;
  }
  pr->host_cu_q = malloc((size_t)(n + 1) * sizeof(int32_t));
  pr->host_cu_k = malloc((size_t)(n + 1) * sizeof(int32_t));
  if (d->varlen_used) pr->host_used = malloc((size_t)n * sizeof(int32_t));
  if (!pr->host_cu_q || !pr->host_cu_k || (d->varlen_used && !pr->host_used)) {
    snprintf(err, err_len, "out of host memory");
    return -1;
  }
  int64_t tq = 0, tk = 0;
  int mq = 0, mk = 0;
  pr->host_cu_q[0] = pr->host_cu_k[0] = 0;
  for (int i = 0; i < n; ++i) {
    tq += d->varlen_q[i];
    tk += d->varlen_k[i];
    mq = d->varlen_q[i] > mq ? d->varlen_q[i] : mq;
    mk = d->varlen_k[i] > mk ? d->varlen_k[i] : mk;
    pr->host_cu_q[i + 1] = (int32_t)tq;
    pr->host_cu_k[i + 1] = (int32_t)tk;
    if (pr->host_used) pr->host_used[i] = d->varlen_used[i];
  }
  if (d->varlen_cu_q) memcpy(pr->host_cu_q, d->varlen_cu_q, (size_t)(n + 1) * sizeof(int32_t));
  if (d->varlen_cu_k) memcpy(pr->host_cu_k, d->varlen_cu_k, (size_t)(n + 1) * sizeof(int32_t));
  pr->total_q = (int)tq;
  pr->total_k = (int)tk;
  d->batch = n;
  if (d->seqlen_q < mq) d->seqlen_q = mq;
  if (d->seqlen_k < mk) d->seqlen_k = mk;
  CUDA_OR_FAIL(cudaMalloc((void **)&pr->dev_cu_q, (size_t)(n + 1) * sizeof(int32_t)));
  CUDA_OR_FAIL(cudaMalloc((void **)&pr->dev_cu_k, (size_t)(n + 1) * sizeof(int32_t)));
  CUDA_OR_FAIL(cudaMemcpy(pr->dev_cu_q, pr->host_cu_q, (size_t)(n + 1) * sizeof(int32_t),
                          cudaMemcpyHostToDevice));
  CUDA_OR_FAIL(cudaMemcpy(pr->dev_cu_k, pr->host_cu_k, (size_t)(n + 1) * sizeof(int32_t),
                          cudaMemcpyHostToDevice));
  if (pr->host_used) {
    CUDA_OR_FAIL(cudaMalloc((void **)&pr->dev_used, (size_t)n * sizeof(int32_t)));
    CUDA_OR_FAIL(cudaMemcpy(pr->dev_used, pr->host_used, (size_t)n * sizeof(int32_t),
                            cudaMemcpyHostToDevice));
  }
  if (d->varlen_report) {
    CUDA_OR_FAIL(cudaMalloc((void **)&pr->dev_report, sizeof *pr->dev_report));
    CUDA_OR_FAIL(cudaMemset(pr->dev_report, 0xFF, sizeof *pr->dev_report)); /* poisoned */
  }
  return 0;
}

int problem_varlen_report(const problem_t *pr, cudadent_seqlens_report_t *report) {
  if (!pr->dev_report) return -1;
  return cudaMemcpy(report, pr->dev_report, sizeof *report, cudaMemcpyDeviceToHost) == cudaSuccess
             ? 0
             : -1;
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
  /* the gaps' own stream: the inputs of a seed are the same in every layout */
  uint64_t gap_state = d->seed ^ 0x6A09E667F3BCC909ull, *gap_rng = NULL;
  if (d->layout == LAYOUT_GAPPED) gap_rng = &gap_state;
  const problem_layout_t L = d->layout;
  const int D = d->head_dim, Dv = problem_head_dim_v(d), W = kernel_width(d);
  if (d->varlen > 0 && setup_varlen(pr, err, err_len) != 0) return -1;
  int B, Sq, Sk;
  problem_alloc_dims(pr, &B, &Sq, &Sk);
  const int Hq = d->heads_q, Hkv = d->heads_kv;
  if (tensor_alloc(&pr->q, L, W, B, Sq, Hq, D, err, err_len) ||
      tensor_alloc(&pr->k, L, W, B, Sk, Hkv, D, err, err_len) ||
      tensor_alloc(&pr->v, L, W, B, Sk, Hkv, Dv, err, err_len) ||
      tensor_alloc(&pr->o, L, W, B, Sq, Hq, Dv, err, err_len) ||
      tensor_alloc(&pr->dout, L, W, B, Sq, Hq, Dv, err, err_len) ||
      tensor_alloc(&pr->dq, L, W, B, Sq, Hq, D, err, err_len) ||
      tensor_alloc(&pr->dk, L, W, B, Sk, Hkv, D, err, err_len) ||
      tensor_alloc(&pr->dv, L, W, B, Sk, Hkv, Dv, err, err_len))
    return -1;
  size_t lse_n = (size_t)B * d->heads_q * Sq;
  CUDA_OR_FAIL(cudaMalloc((void **)&pr->lse, (lse_n ? lse_n : 1) * sizeof(float)));
  if (tensor_fill_random(&pr->q, d->dtype, d->outliers, 0, &rng, gap_rng, &pr->host_q, err,
                         err_len) ||
      tensor_fill_random(&pr->k, d->dtype, d->outliers, d->late_max ? 64 : 0, &rng, gap_rng,
                         &pr->host_k, err, err_len) ||
      tensor_fill_random(&pr->v, d->dtype, d->outliers, 0, &rng, gap_rng, &pr->host_v, err,
                         err_len) ||
      tensor_fill_random(&pr->dout, d->dtype, 0, 0, &rng, gap_rng, &pr->host_dout, err, err_len))
    return -1;
  if (problem_poison(pr, 0) != 0 || problem_poison(pr, 1) != 0) {
    snprintf(err, err_len, "poisoning outputs failed");
    return -1;
  }
  return 0;
}

void problem_destroy(problem_t *pr) {
  problem_tensor_t *ts[] = {&pr->q, &pr->k, &pr->v, &pr->o, &pr->dout, &pr->dq, &pr->dk, &pr->dv};
  for (size_t i = 0; i < sizeof ts / sizeof ts[0]; ++i) {
    cudaFree(ts[i]->device);
    free(ts[i]->expect_gaps);
  }
  cudaFree(pr->lse);
  cudaFree(pr->workspace);
  cudaFree(pr->dev_cu_q);
  cudaFree(pr->dev_cu_k);
  cudaFree(pr->dev_used);
  cudaFree(pr->dev_report);
  free(pr->host_cu_q);
  free(pr->host_cu_k);
  free(pr->host_used);
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
    (p)->head_dim_v = (pr)->d.head_dim_v;                                              \
    (p)->softcap = (pr)->d.softcap;                                                    \
    if ((pr)->d.varlen > 0) {                                                          \
      (p)->cu_seqlens_q = (pr)->dev_cu_q;                                              \
      (p)->cu_seqlens_k = (pr)->dev_cu_k;                                              \
      (p)->seqused_k = (pr)->dev_used;                                                 \
      (p)->seqlens_report = (pr)->dev_report;                                          \
      (p)->total_q = (pr)->total_q;                                                    \
      (p)->total_k = (pr)->total_k;                                                    \
    }                                                                                  \
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
  for (int i = 0; i < n; ++i) {
    free(outs[i]->expect_gaps); /* poisoned again: the gaps must hold the poison */
    outs[i]->expect_gaps = NULL;
    if (cudaMemset(outs[i]->device, 0xFF, (outs[i]->alloc_elems ? outs[i]->alloc_elems : 8) * 2) !=
        cudaSuccess)
      return -1;
  }
  if (!bwd) pr->o_gap_clobbered = 0;
  if (!bwd) {
    int b, sq, sk;
    problem_alloc_dims(pr, &b, &sq, &sk);
    size_t lse_n = (size_t)b * pr->d.heads_q * sq;
    if (cudaMemset(pr->lse, 0xFF, (lse_n ? lse_n : 1) * sizeof(float)) != cudaSuccess) return -1;
  }
  return cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}

int problem_gap_o_for_bwd(problem_t *pr) {
  problem_tensor_t *o = &pr->o;
  if (pr->d.layout != LAYOUT_GAPPED || o->alloc_elems == 0) return 0;
  uint16_t *raw = malloc(o->alloc_elems * 2);
  unsigned char *outside = outside_mask(o);
  int rc = -1;
  if (!raw || !outside || cudaDeviceSynchronize() != cudaSuccess ||
      cudaMemcpy(raw, o->device, o->alloc_elems * 2, cudaMemcpyDeviceToHost) != cudaSuccess)
    goto done;
  uint64_t gap_state = pr->d.seed ^ 0xBB67AE8584CAA73Bull;
  long clobbered = 0;
  for (size_t j = 0; j < o->alloc_elems; ++j)
    if (outside[j]) {
      const uint16_t want = o->expect_gaps ? o->expect_gaps[j] : (uint16_t)POISON_BITS;
      clobbered += raw[j] != want;
      raw[j] = gap_bits(pr->d.dtype, &gap_state);
    }
  if (cudaMemcpy(o->device, raw, o->alloc_elems * 2, cudaMemcpyHostToDevice) != cudaSuccess)
    goto done;
  pr->o_gap_clobbered += clobbered;
  free(o->expect_gaps);
  o->expect_gaps = raw; /* the elements inside are not compared against it */
  raw = NULL;
  rc = 0;
done:
  free(raw);
  free(outside);
  return rc;
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
