/*
 * varlen_cases.h - what the varlen GPU tests (test_gpu_varlen.c, forward; test_gpu_varlen_bwd.c,
 * backward) share: a case's fields and its problem description (tools/problem.h's varlen mode),
 * the mask shorthands, and the ragged batches (sequence lengths of q and k, seqused_k, invalid
 * cu_seqlens arrays).
 */
#ifndef CUDADENT_TESTS_VARLEN_CASES_H
#define CUDADENT_TESTS_VARLEN_CASES_H

#include <string.h>

#include "cudadent.h"
#include "problem.h"

#define NONE 0, -1, -1
#define CAUSAL 1, -1, -1
#define WINDOW 0, 33, 7 /* sliding window, both sides */
#define LOCAL 1, 64, -1 /* causal local window */

typedef struct varlen_case {
  const char *name;
  int n;                      /* sequences */
  const int *q, *k, *used;    /* lengths, seqused_k (NULL: none) */
  const int *cu_q, *cu_k;     /* invalid arrays uploaded instead (NULL: the prefix sums) */
  int heads_q, heads_kv, head_dim, head_dim_v;
  cudadent_dtype_t dtype;
  int mask[3];                /* causal, window_left, window_right */
  float softcap;
  problem_layout_t layout;
  int deterministic;          /* backward: 1 runs it repeatedly, bitwise equal */
  int report;                 /* 1: seqlens_report, compared with expect */
  cudadent_seqlens_report_t expect;
  int no_lse;                 /* forward: 1 passes lse = NULL */
} varlen_case_t;

#define NO_REPORT 0, {0, 0, 0, 0}, 0 /* report, expect, no_lse */

static inline problem_desc_t varlen_case_desc(const varlen_case_t *c) {
  problem_desc_t d;
  memset(&d, 0, sizeof d);
  d.varlen = c->n;
  d.varlen_q = c->q;
  d.varlen_k = c->k;
  d.varlen_used = c->used;
  d.varlen_cu_q = c->cu_q;
  d.varlen_cu_k = c->cu_k;
  d.varlen_report = c->report;
  d.heads_q = c->heads_q;
  d.heads_kv = c->heads_kv;
  d.head_dim = c->head_dim;
  d.head_dim_v = c->head_dim_v;
  d.dtype = c->dtype;
  d.causal = c->mask[0];
  d.window_left = c->mask[1];
  d.window_right = c->mask[2];
  d.softcap = c->softcap;
  d.layout = c->layout;
  d.deterministic = c->deterministic;
  d.no_lse = c->no_lse;
  return d;
}

/* mixed lengths: an empty sequence, one query, odd, long, keys 0 (no key: O = 0, LSE = -inf and
 * dQ = 0) */
static const int mix_q[] = {0, 1, 17, 300, 64, 129}, mix_k[] = {5, 1, 17, 400, 0, 129};
/* the same transposed: more queries than keys (bottom-right alignment: early rows see nothing) */
static const int tr_q[] = {5, 1, 17, 400, 0, 129}, tr_k[] = {0, 1, 17, 300, 64, 129};
/* 40 short sequences (lengths 1..23 and 1..29): many CTAs past their sequence's keys / queries */
static const int many_q[] = {1, 8, 14, 22, 6, 13, 19, 3, 10, 17, 2, 9, 15, 21, 5, 12, 18, 1, 7,
                             14, 20, 4, 11, 17, 1, 8, 14, 22, 6, 13, 19, 3, 10, 17, 2, 9, 15, 21,
                             5, 12};
static const int many_k[] = {1, 6, 11, 16, 21, 26, 2, 7, 12, 17, 22, 27, 3, 8, 13, 18, 23, 28, 4,
                             9, 14, 19, 24, 29, 5, 10, 15, 20, 25, 1, 6, 11, 16, 21, 26, 2, 7, 12,
                             17, 22};
/* long: several key and query tiles per sequence, and a grid large enough for the large tiles
 * under a mask */
static const int long_q[] = {1000, 513, 3, 0}, long_k[] = {1000, 700, 9, 0};
/* seqused_k: part of the keys, none (0), all; the unused keys' dK, dV must be 0 */
static const int used_q[] = {37, 0, 200, 5, 64}, used_k[] = {100, 10, 250, 64, 64},
                 used_u[] = {50, 3, 250, 0, 1};
/* invalid cu_seqlens_q: sequence 1 too long (100 > max 70: cut to 70, tokens [120, 150) in no
 * sequence), cu_seqlens_q[batch] = 155 < total 160 (tokens [155, 160) in none): their O = 0,
 * LSE = -inf, dQ = 0 */
static const int bad_q[] = {50, 70, 30, 10}, bad_k[] = {60, 60, 60, 60};
static const int bad_cu_q[] = {0, 50, 150, 150, 155};
/* invalid cu_seqlens_k: sequence 1 70 keys (> max 60: cut to 60, keys 120..129 in no sequence;
 * the first bad entry, index 2), entry 3 past total_k (sequence 2's keys cut to 60, sequence 3
 * gets none: its rows O = 0, LSE = -inf): keys [190, 240) in no sequence, dK = dV = 0 */
static const int badk_cu_k[] = {0, 60, 130, 400, 240};
/* no key at all (max_seqlen_k = 0): O = 0, dQ = 0; no query at all: dK = dV = 0 */
static const int nokey_q[] = {3, 0, 20}, nokey_k[] = {0, 0, 0};
static const int noq_q[] = {0, 0, 0}, noq_k[] = {3, 0, 20};

#define LEN(a) (int)(sizeof a / sizeof a[0])

#endif /* CUDADENT_TESTS_VARLEN_CASES_H */
