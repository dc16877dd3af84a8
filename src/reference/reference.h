/*
 * reference.h - double-precision CPU attention, forward and backward: the ground truth of every
 * correctness test and of the CLI's --check. Not part of the public library (built as the static
 * library cudadent_reference, linked by tests and tools).
 *
 * Layouts are dense and contiguous: q, dq are [batch][seqlen_q][heads_q][head_dim], o, dout
 * [batch][seqlen_q][heads_q][head_dim_v]; k, dk are [batch][seqlen_k][heads_kv][head_dim], v, dv
 * [batch][seqlen_k][heads_kv][head_dim_v]; lse is [batch][heads_q][seqlen_q]. Varlen problems
 * (cu_seqlens_q / cu_seqlens_k set) drop the batch dimension: [total_q][heads_q][..],
 * [total_k][heads_kv][..], and lse [heads_q][total_q] (cudadent.h).
 * Query head h reads KV head h / (heads_q / heads_kv). Masking is the public API's (cudadent.h):
 * bottom-right aligned windows, causal == window_right 0 (per sequence in varlen problems). A row
 * that sees no key has O = 0, LSE = -inf and contributes no gradient. softcap > 0 caps the
 * scaled scores, s = softcap * tanh(s / softcap), before the mask and softmax; the backward
 * multiplies dS by 1 - tanh^2 before dQ and dK.
 *
 * Low-precision variant: with round_dtype set to CUDADENT_DTYPE_FP16 or _BF16, the probabilities P
 * (normalized) are rounded to that dtype before P V and before P^T dO, and dS (with softcap: after
 * its 1 - tanh^2 factor) is rounded before dS K and dS^T Q, and delta = rowsum(dO * O) uses O rounded to that dtype (a kernel is handed the
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
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim; /* varlen: batch = sequences,
                                                                 seqlen_q/k = max_seqlen_q/k */
  double softmax_scale;
  int causal;
  int window_left, window_right; /* -1 unbounded */
  int round_dtype;               /* REF_ROUND_NONE, or a cudadent_dtype_t (fp16 / bf16) */
  int threads;                   /* 0: one per online CPU */
  /* Backward, low-precision variant only: the O a kernel is handed (the forward's stored output,
   * o's layout, [..][heads_q][head_dim_v], already in the dtype). O is an input of the backward,
   * so its lowp reference takes delta = rowsum(dO * given_o) from it; NULL: from O~ rounded to
   * the dtype. The exact variant always uses its own exact O. */
  const double *given_o;
  /* Layout v2 (cudadent.h, "features of layout v2"); 0 / NULL: as before. */
  int head_dim_v;                /* of v, o, dout, dv; 0: = head_dim */
  double softcap;                /* > 0: s = softcap * tanh(s / softcap); 0: none */
  /* varlen: host arrays as cudadent.h's device ones (batch + 1, batch entries); both cu_seqlens
   * set: varlen, with the layouts above and cudadent.h's clamping of invalid entries. */
  const int32_t *cu_seqlens_q, *cu_seqlens_k, *seqused_k;
  int total_q, total_k;
} ref_problem_t;

/* Sequence b's clamped ranges in a varlen problem (cudadent.h): queries [*q0, *q1), keys
 * [*k0, *k1), of which the first *used are used (seqused_k). */
void ref_varlen_ranges(const ref_problem_t *p, int b, int *q0, int *q1, int *k0, int *k1,
                       int *used);

/* The varlen forward and backward (ref_attn_fwd / ref_attn_bwd call them for varlen problems):
 * each sequence is the dense problem of batch 1 over its clamped ranges, masks aligned to its own
 * lengths; tokens in no range get O = 0, LSE = -inf, dQ = 0, dK = dV = 0 (and so do the keys of
 * a sequence past its seqused_k). */
void ref_varlen_fwd(const ref_problem_t *p, const double *q, const double *k, const double *v,
                    double *o, double *lse);
void ref_varlen_bwd(const ref_problem_t *p, const double *q, const double *k, const double *v,
                    const double *dout, double *dq, double *dk, double *dv);

/* 1 if query row i sees key column j for this (dense) problem, else 0. */
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
