/*
 * problem_internal.h - what the parts of the problem library share and problem.h does not
 * offer: the poison pattern, an element's offset in a strided tensor, and qsort's comparison.
 * The parts: problem.c (set-up and calls), problem_check.c (the check against the reference),
 * problem_timing.c (timing and FLOPs).
 */
#ifndef CUDADENT_PROBLEM_INTERNAL_H
#define CUDADENT_PROBLEM_INTERNAL_H

#include <stdint.h>

#include "problem.h"

#define POISON_BITS 0xFFFFu /* a NaN in both fp16 and bf16 */

static inline int64_t offset_of(const cudadent_tensor_t *t, int b, int s, int h, int d) {
  return b * t->stride_batch + s * t->stride_seq + h * t->stride_head + d;
}

/* The tensors' (batch, seqlen_q, seqlen_k) as allocated: the problem's, or varlen's packed
 * (1, total_q, total_k). The LSE is [batch][heads_q][seqlen_q] of these. */
static inline void problem_alloc_dims(const problem_t *pr, int *b, int *sq, int *sk) {
  *b = pr->d.varlen > 0 ? 1 : pr->d.batch;
  *sq = pr->d.varlen > 0 ? pr->total_q : pr->d.seqlen_q;
  *sk = pr->d.varlen > 0 ? pr->total_k : pr->d.seqlen_k;
}

static inline int cmp_double(const void *a, const void *b) { /* qsort, ascending */
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#endif
