/*
 * problem.h - one attention problem on the device, for the CLI and the GPU tests: random inputs
 * (fresh each run unless a seed is given) in a chosen memory layout, NaN-poisoned outputs, calls
 * through the public API, a check against the double-precision CPU reference with flash-attn's
 * criterion, and CUDA-event timing.
 *
 * Criterion (docs/DESIGN.md): for each output X in {O, dQ, dK, dV}:
 *   max|X - ref| <= 2 * max|X_lowp - ref| + 1e-5
 * where ref is the exact double reference and X_lowp the reference with P (and dS) rounded to the
 * input dtype and its result rounded to that dtype (flash-attn's out_pt is a tensor of the input
 * dtype: the rounding of the output itself is part of the allowed error). LSE must be within 1e-3 of the reference (it is fp32 and independent of rounding
 * P); rows that see no key must have O == 0 and LSE == -inf. Every output element must be
 * finite, and the padding between elements of strided outputs must still hold the poison.
 */
#ifndef CUDADENT_PROBLEM_H
#define CUDADENT_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "cudadent.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum problem_layout {
  LAYOUT_CONTIGUOUS = 0, /* (batch, seqlen, heads, head_dim) dense, as after a reshape */
  LAYOUT_PADDED = 1,     /* heads and batch padded: non-contiguous head and batch strides */
  LAYOUT_HEADS_FIRST = 2, /* stored (batch, heads, seqlen, head_dim): a transposed view */
  LAYOUT_HUGE_BATCH_STRIDE = 3, /* batch stride past 2^31 elements: int64 offsets (GBs each) */
  LAYOUT_GAPPED = 4      /* each head's row followed by a gap of columns, up to the kernel width
                            W = max(head_dim, head_dim_v) rounded up to 64 (or gap_width), plus 8
                            (so W - dim + 8 columns), and each batch by one gap row. The gaps of
                            the inputs hold large finite values of random sign and size (|x| in
                            [5e3, 1.5e4]), so a kernel that reads past the real dim (or past the
                            last row) fails the criterion visibly; the gaps of the outputs hold
                            the poison and must still hold it after the call */
} problem_layout_t;

typedef struct problem_desc {
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim; /* head_dim: of Q and K */
  cudadent_dtype_t dtype;
  int causal, window_left, window_right;
  float softmax_scale; /* 0: 1/sqrt(head_dim) */
  problem_layout_t layout;
  int outliers;        /* 1: about one element in 500 multiplied by 8..16 */
  int late_max;        /* 1: keys [0, 64) multiplied by 8, so a row's score max jumps in the key
                          block that kernels walking the keys last to first reach last */
  int deterministic;
  int no_lse;          /* 1: the forward is called with lse = NULL (so LSE is not checked) */
  uint64_t seed;       /* 0: drawn from the clock */
  int head_dim_v;      /* of V, O, dO, dV; 0: = head_dim (passed to the params as given) */
  float softcap;       /* > 0: scores = softcap * tanh(scores / softcap); 0: none */
  int gap_width;       /* LAYOUT_GAPPED: the row width W the gaps reach (0: the kernel width,
                          max(head_dim, head_dim_v) rounded up to 64) */
  /* varlen (cudadent.h, "features of layout v2"): varlen > 0 sequences of varlen_q[i] queries and
   * varlen_k[i] keys, packed (total, heads, dim) tensors in the layout above with batch 1
   * (LAYOUT_PADDED and LAYOUT_GAPPED add their gaps around the one packed "batch"). problem_create
   * then sets batch = varlen and seqlen_q / seqlen_k = the longest sequence's (the call's
   * max_seqlen_q / max_seqlen_k; a larger value given is kept), uploads the prefix sums as
   * cu_seqlens_q / cu_seqlens_k, and the check compares each sequence on its own (the criterion
   * per sequence; tokens in no sequence: O == 0, LSE == -inf). */
  int varlen;                       /* sequences; 0: a dense problem */
  const int *varlen_q, *varlen_k;   /* [varlen] lengths */
  const int *varlen_used;           /* [varlen] seqused_k; NULL: none */
  const int *varlen_cu_q, *varlen_cu_k; /* [varlen + 1] uploaded instead of the prefix sums
                                       (invalid arrays: the clamping); NULL: the prefix sums. The
                                       totals stay the sums of the lengths */
  int varlen_report;                /* 1: the call passes seqlens_report (problem_varlen_report) */
} problem_desc_t;

/* V's head dim of a problem: head_dim_v, or head_dim where that is 0. */
static inline int problem_head_dim_v(const problem_desc_t *d) {
  return d->head_dim_v > 0 ? d->head_dim_v : d->head_dim;
}

typedef struct problem_tensor {
  void *device;            /* allocation (16-bit elements) */
  size_t alloc_elems;
  cudadent_tensor_t t;     /* view into it */
  int dims[4];
  uint16_t *expect_gaps;   /* NULL: every element of the allocation outside the tensor must be
                              the poison after a call; else the allocation's expected content
                              there (an output refilled as an input: problem_gap_o_for_bwd) */
} problem_tensor_t;

typedef struct problem {
  problem_desc_t d;
  problem_tensor_t q, k, v, o, dout, dq, dk, dv;
  float *lse;
  /* varlen: the token counts, the arrays the call gets (host copies and device), the report */
  int total_q, total_k;
  int32_t *host_cu_q, *host_cu_k, *host_used;
  int32_t *dev_cu_q, *dev_cu_k, *dev_used;
  cudadent_seqlens_report_t *dev_report;
  void *workspace;
  size_t workspace_bytes;
  uint16_t *host_q, *host_k, *host_v, *host_dout; /* the inputs, as uploaded (dense) */
  long o_gap_clobbered; /* problem_gap_o_for_bwd: O's gap elements the forward overwrote */
} problem_t;

typedef struct error_figure {
  int seq;             /* varlen: 1 + the sequence of the figures below (the one with the
                          largest max_err / tolerance; bad_elements and pass cover them all) */
  double max_err;      /* max |x - ref| */
  double max_err_lowp; /* max |x_lowp - ref| */
  double tolerance;    /* 2 * max_err_lowp + 1e-5 */
  long bad_elements;   /* non-finite outputs, clobbered padding, masked rows not zero/-inf */
  int pass;
  size_t worst;        /* dense index of the element with max_err, and its values */
  double worst_x, worst_ref, worst_lowp;
} error_figure_t;

typedef struct check_result {
  error_figure_t o, lse, dq, dk, dv;
  int lse_checked; /* 0 where the forward was asked for no LSE */
  double o_worst_lse, o_worst_lse_ref; /* the LSE of the worst O element's row, and its ref */
  int pass;
} check_result_t;

/* Allocates and fills the problem (inputs random, outputs poisoned). Returns 0, or -1 with a
 * message in err. Call problem_destroy in either case. */
int problem_create(problem_t *pr, const problem_desc_t *desc, char *err, size_t err_len);
void problem_destroy(problem_t *pr);

void problem_fwd_params(const problem_t *pr, cudadent_attn_fwd_params_t *p);
/* The backward params read o and lse, which problem_run_fwd wrote. */
void problem_bwd_params(const problem_t *pr, cudadent_attn_bwd_params_t *p);

/* NaN-fill the forward's outputs (o, lse) or, with bwd != 0, the backward's (dq, dk, dv),
 * synchronously. */
int problem_poison(problem_t *pr, int bwd);

/* LAYOUT_GAPPED, between the forward and the backward: the O the backward reads is an input, so
 * its gaps get large values like the other inputs' (a backward reading O past head_dim_v then
 * shows). Counts first the gap elements the forward overwrote (reported by problem_check as bad
 * O elements), and from then on the check expects those values, not the poison, in O's gaps.
 * Synchronous; a no-op for other layouts. Returns 0, or -1 on a CUDA failure. */
int problem_gap_o_for_bwd(problem_t *pr);

/* varlen with varlen_report: the report the last forward wrote (synchronizes). Returns 0, or -1
 * (no report asked, or a CUDA failure). */
int problem_varlen_report(const problem_t *pr, cudadent_seqlens_report_t *report);

/* Calls through the public API on stream (workspace sized on first use). */
cudadent_status_t problem_run_fwd(problem_t *pr, void *stream);
cudadent_status_t problem_run_bwd(problem_t *pr, void *stream);

/* Downloads the outputs and checks them against the reference (synchronizes). With bwd != 0 the
 * gradients are checked (o and lse too). Returns 0 on a completed check (see r->pass), -1 on a
 * CUDA failure. */
int problem_check(problem_t *pr, int bwd, check_result_t *r);
void problem_print_check(const check_result_t *r, int bwd);

/* The forward of desc checked on n seeds, desc->seed (1 if 0) and on: the distribution of O's
 * error ratio max|o - ref| / max|o_lowp - ref| (a kernel's accuracy class: the exact-max
 * softmax's mean is ~0.75 on small bf16 shapes, a kernel as accurate as the low-precision
 * reference ~1), the criterion failures and the LSE's max error. Returns 0, or -1 (message in
 * err) when a run could not be set up, run or checked. */
typedef struct seed_stats {
  int runs, fails, over_1_5;
  double mean, p50, p90, p99, max, lse_max_err;
} seed_stats_t;
int problem_check_seeds(const problem_desc_t *desc, int n, seed_stats_t *st, char *err,
                        size_t err_len);

/* A deterministic backward's repeatability (desc.deterministic): the forward once (O's gaps
 * refilled: problem_gap_o_for_bwd), then `runs` backwards on poisoned gradients, each run's dq, dk,
 * dv (whole allocations) compared bitwise with the first run's, then the criterion on the last
 * (its figures printed). Returns 0 when every run equals the first and the check passes, else 1
 * with the reason in why. */
int problem_bwd_repeatable(problem_t *pr, int runs, char *why, size_t why_len);

/* Median milliseconds of iters calls (after warm-up), each timed with CUDA events, with the L2
 * cache flushed before each call. Returns < 0 on failure (message in err). */
double problem_time_ms(problem_t *pr, int bwd, int iters, char *err, size_t err_len);
/* GPU time per call of a CUDA graph of `calls` forward (or backward) calls, median of 10 replays,
 * in microseconds. */
double problem_graph_us(problem_t *pr, int bwd, int calls, char *err, size_t err_len);

/* FLOPs by the FlashAttention convention: 4 * B * Hq * (visible (i, j) pairs) * D forward, which
 * is 4 B Hq Sq Sk D unmasked and about half of it causal (with head_dim_v: 2 (D + Dv) for 4 D);
 * backward is 2.5x forward. varlen: the pairs within each sequence (its used keys), summed. */
double problem_flops(const problem_desc_t *d, int bwd);

/* 1 if a CUDA device is present; otherwise 0 and why in reason. */
int problem_gpu_present(char *reason, size_t reason_len);

const char *problem_dtype_name(cudadent_dtype_t dtype);
/* A one-line description: "b2 sq1000 sk1000 h16/2 d64 bf16 causal padded"; with head_dim_v
 * "d192/128", with softcap "softcap 30". */
void problem_describe(const problem_desc_t *d, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
