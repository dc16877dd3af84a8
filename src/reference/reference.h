/*
 * reference.h - double-precision CPU attention, forward and backward: the ground truth of every
 * correctness test and of the CLI's --check. Not part of the public library (built as the static
 * library cudadent_reference, linked by tests and tools).
 *
 * Layouts are dense and contiguous: q, o, dout, dq are [batch][seqlen_q][heads_q][head_dim];
 * k, v, dk, dv are [batch][seqlen_k][heads_kv][head_dim]; lse is [batch][heads_q][seqlen_q].
 * Query head h reads KV head h / (heads_q / heads_kv). Masking is the public API's (cudadent.h):
 * bottom-right aligned windows, causal == window_right 0. A row that sees no key has O = 0,
 * LSE = -inf and contributes no gradient.
 *
 * Low-precision variant: with round_dtype set to CUDADENT_DTYPE_FP16 or _BF16, the probabilities P
 * (normalized) are rounded to that dtype before P V and before P^T dO, and dS is rounded before
 * dS K and dS^T Q, and delta = rowsum(dO * O) uses O rounded to that dtype (a kernel is handed the
 * forward's stored, rounded O): the error a correct kernel with those rounding points makes, which sets the
 * tolerance of tests (criterion in tests: max|out-ref| <= 2 max|out_lowp-ref| + 1e-5).
 *
 * Work is split over threads (pthreads) by (batch, head) pairs; results do not depend on the
 * thread count.
 */
#ifndef CUDADENT_REFERENCE_H
#define CUDADENT_REFERENCE_H

#include <stdint.h>
#include "cudadent.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REF_ROUND_NONE (-1)

typedef struct ref_problem {
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim;
  double softmax_scale;
  int causal;
  int window_left, window_right; /* -1 unbounded */
  int round_dtype;               /* REF_ROUND_NONE, or a cudadent_dtype_t (fp16 / bf16) */
  int threads;                   /* 0: one per online CPU */
  /* Backward, low-precision variant only: the O a kernel is handed (the forward's stored output,
   * [batch][seqlen_q][heads_q][head_dim], already in the dtype). O is an input of the backward,
   * so its lowp reference takes delta = rowsum(dO * given_o) from it; NULL: from O~ rounded to
   * the dtype. The exact variant always uses its own exact O. */
  const double *given_o;
} ref_problem_t;

/* 1 if query row i sees key column j for this problem, else 0. */
int ref_visible(const ref_problem_t *p, int i, int j);

/* o (may be NULL) and lse (may be NULL) are written. */
void ref_attn_fwd(const ref_problem_t *p, const double *q, const double *k, const double *v,
                  double *o, double *lse);

/* Gradients of sum(o * dout) with respect to q, k, v. dq, dk, dv are written (overwritten). */
void ref_attn_bwd(const ref_problem_t *p, const double *q, const double *k, const double *v,
                  const double *dout, double *dq, double *dk, double *dv);

/* Round-to-nearest-even conversions between double and the 16-bit formats (bit patterns). */
uint16_t ref_double_to_half_bits(double x);
uint16_t ref_double_to_bf16_bits(double x);
double ref_half_bits_to_double(uint16_t h);
double ref_bf16_bits_to_double(uint16_t b);
/* x rounded to dtype (fp16 or bf16) and back; other dtypes: x unchanged. */
double ref_round_to(int dtype, double x);

#ifdef __cplusplus
}
#endif

#endif /* CUDADENT_REFERENCE_H */
