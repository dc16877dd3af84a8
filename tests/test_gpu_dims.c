/*
 * test_gpu_dims.c - every head dim up to 256, head_dim_v != head_dim and softcap (issue 27),
 * forward and backward on the GPU through the public API against the double-precision CPU
 * reference (tools/problem.h: fresh random inputs, poisoned outputs, flash-attn's criterion).
 * Skipped with 'skipped: no CUDA device' where there is none.
 *
 * Tests:
 *   gpu_dims_fwd/<case>, gpu_dims_bwd/<case>   the case list below, each named
 *       "NN-d<head_dim>[v<head_dim_v>][-cap<softcap>]": head dims 8, 32, 40, 64, 80, 96, 104,
 *       128, 160, 192, 224, 256 (two cases each, one fp16 and one bf16), the pairs (192,128),
 *       (128,64), (64,128), (256,128), (96,256) and a few odd ones, softcap 30 and 5 at several
 *       widths; causal, windows and none; GQA and MQA; seqlen_q != seqlen_k both ways, lengths 1,
 *       17, 127, 1000; most in LAYOUT_GAPPED (each head row followed by large values up to the
 *       kernel width, so a kernel reading past the real dim fails the criterion; outputs' gaps
 *       must still hold the poison), the others packed (a read past the dim reads the next head),
 *       padded or heads-first. A case fails on the criterion, on a clobbered gap, on a
 *       non-finite output, or on a refusal (no kernel for it in this build: after issue 27 every
 *       case here must run).
 *   gpu_dims_hopper_fwd/<case>     the Hopper forward's rows (64, 96, 128, 192 / 128, 256; the
 *       d96 rows of config.cuh SM90_FWD_D96) and calls rounded up to them, with and without LSE, no
 *       softcap, gaps to 256 columns: forward only
 *       (CUDADENT_KERNEL_FWD=sm90 runs every one on the Hopper path; the default dispatch the
 *       larger ones).
 *   gpu_dims_hopper_bwd/<case>     the Hopper backward (rows 64, 96 and 128) at head dims and
 *       head_dim_v up to 128 rounded up to them, no softcap, gaps to 128 columns; two cases
 *       deterministic (bit-identical repeats: the turn order and the rotated walk); from case 20
 *       the wide rows (192 / 128, 256) and dims rounded up to them, gaps to 256 columns, two
 *       deterministic, skipped while dispatch.h's CUDADENT_SM90_BWD_WIDE is 0. With
 *       CUDADENT_KERNEL_BWD=sm90 every one runs the Hopper backward; under the default dispatch
 *       they do on sm_90 too (the Hopper backward is preferred for every call it supports).
 *   gpu_dims_bwd_deterministic     d104 causal GQA softcap 30: five backward calls bit-identical
 *                                  and right.
 *   gpu_dims_gap_overread_fails    the harness's own check: calls that read (or write) past the
 *                                  real dim on purpose (params naming a wider head dim over the
 *                                  same gapped buffers) must fail the check; variants this build
 *                                  refuses are skipped (all refused: the test skips).
 *
 * Cost: the fp64 reference dominates (about 2 ns per score and head-dim column on one core of
 * this project's CPUs: a fwd check computes it twice, a bwd check about ten times); the cases
 * below add up to about 45 core-seconds, the Hopper cases (forward only) to about 100 more
 * and the Hopper backward's to about 40 more (estimated), a few seconds on a 16-core GPU host. Long lengths
 * (1000) are kept to five cases.
 * CUDADENT_KERNEL=sm80|sm90 in the environment picks the path under test (dispatch.c); softcap
 * cases forced onto an sm90 row without it skip (run_dims_case). The Hopper forward's softcap
 * cases: test_gpu_softcap.c.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "dispatch.h" /* CUDADENT_SM90_BWD_WIDE, CUDADENT_SM90_FWD_SOFTCAP, CUDADENT_SM90_BWD_SOFTCAP,
                       * CUDADENT_SM90_BWD_WIDE_SOFTCAP */
#include "harness.h"
#include "problem.h"

void register_gpu_dims_tests(void);

#define NONE 0, -1, -1
#define CAUSAL 1, -1, -1
#define WINDOW 0, 33, 7      /* sliding window, both sides */
#define LOCAL 1, 64, -1      /* causal local window */
#define RIGHT0 0, -1, 0      /* causal written as window_right = 0 */

/* b, sq, sk, hq, hkv, head_dim, head_dim_v, dtype, mask (3 values), softcap, layout */
#define DC(b, sq, sk, hq, hkv, dim, dimv, dt, mask, cap, lay)                                  \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, cap, LAYOUT_##lay, 0, 0, 0, 0}
#define DC_OUTLIERS(b, sq, sk, hq, hkv, dim, dimv, dt, mask, cap, lay)                         \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, cap, LAYOUT_##lay, 1, 0, 0, 0}

typedef struct dims_case {
  int batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, head_dim_v;
  cudadent_dtype_t dtype;
  int mask[3]; /* causal, window_left, window_right */
  float softcap;
  problem_layout_t layout;
  int outliers;
  int no_lse, gap_width; /* the Hopper cases: lse = NULL; the gaps' reach (problem.h) */
  int deterministic;     /* the Hopper backward's cases: bit-identical repeats, then the check */
} dims_case_t;

static const dims_case_t cases[] = {
    /* every head dim, twice (fp16 and bf16) */
    DC(2, 127, 127, 4, 4, 8, 0, BF16, NONE, 0, GAPPED),
    DC(1, 17, 1000, 4, 1, 8, 0, FP16, CAUSAL, 0, CONTIGUOUS),     /* MQA, sq < sk */
    DC(2, 127, 300, 4, 2, 32, 0, FP16, WINDOW, 0, GAPPED),
    DC(1, 1000, 1000, 2, 1, 32, 0, BF16, CAUSAL, 0, CONTIGUOUS),
    DC(2, 17, 17, 4, 4, 40, 0, BF16, NONE, 0, CONTIGUOUS),
    DC(1, 300, 127, 8, 2, 40, 0, FP16, CAUSAL, 0, GAPPED),        /* sq > sk: rows with no key */
    DC(1, 1, 1000, 4, 4, 64, 0, BF16, NONE, 0, GAPPED),           /* one query (decoding) */
    DC(2, 257, 257, 4, 2, 64, 0, FP16, CAUSAL, 30.0f, CONTIGUOUS),
    DC(2, 127, 127, 4, 2, 80, 0, BF16, CAUSAL, 0, GAPPED),
    DC(1, 1000, 1000, 2, 2, 80, 0, FP16, NONE, 0, HEADS_FIRST),
    DC(1, 1000, 17, 4, 1, 96, 0, BF16, NONE, 0, GAPPED),          /* MQA, sq > sk */
    DC(2, 200, 200, 4, 4, 96, 0, FP16, LOCAL, 5.0f, CONTIGUOUS),
    DC(2, 17, 127, 4, 2, 104, 0, FP16, CAUSAL, 0, GAPPED),
    DC(1, 333, 333, 2, 1, 104, 0, BF16, WINDOW, 0, CONTIGUOUS),
    DC(1, 1000, 1000, 2, 1, 128, 0, BF16, CAUSAL, 30.0f, GAPPED),
    DC(2, 127, 1, 4, 4, 128, 0, FP16, NONE, 0, CONTIGUOUS),        /* one key */
    DC(2, 127, 127, 4, 4, 160, 0, BF16, NONE, 0, GAPPED),
    DC(1, 500, 300, 4, 2, 160, 0, FP16, CAUSAL, 0, CONTIGUOUS),
    DC(1, 300, 300, 4, 1, 192, 0, FP16, RIGHT0, 0, GAPPED),
    DC(2, 17, 17, 2, 2, 192, 0, BF16, NONE, 5.0f, CONTIGUOUS),
    DC(1, 257, 1000, 4, 2, 224, 0, BF16, NONE, 0, GAPPED),
    DC(2, 127, 127, 4, 4, 224, 0, FP16, CAUSAL, 0, PADDED),
    DC(1, 1000, 1000, 2, 2, 256, 0, BF16, CAUSAL, 0, GAPPED),
    DC(2, 127, 300, 4, 1, 256, 0, FP16, WINDOW, 30.0f, CONTIGUOUS),
    /* head_dim_v != head_dim */
    DC(1, 1000, 1000, 4, 2, 192, 128, BF16, CAUSAL, 0, GAPPED),   /* DeepSeek's training shape */
    DC(1, 127, 300, 8, 8, 192, 128, FP16, NONE, 30.0f, CONTIGUOUS),
    DC(2, 127, 127, 4, 1, 128, 64, BF16, WINDOW, 0, GAPPED),
    DC(1, 1, 300, 4, 2, 128, 64, FP16, CAUSAL, 0, CONTIGUOUS),
    DC(1, 300, 127, 4, 2, 64, 128, FP16, CAUSAL, 0, GAPPED),
    DC(2, 17, 17, 4, 4, 64, 128, BF16, NONE, 0, CONTIGUOUS),
    DC(2, 17, 1000, 4, 2, 256, 128, BF16, NONE, 5.0f, GAPPED),
    DC(1, 257, 257, 4, 4, 256, 128, FP16, LOCAL, 0, CONTIGUOUS),
    DC(1, 257, 257, 4, 4, 96, 256, FP16, CAUSAL, 0, CONTIGUOUS),
    DC(1, 127, 127, 2, 2, 96, 256, BF16, NONE, 0, GAPPED),
    DC(1, 127, 127, 4, 2, 8, 256, BF16, CAUSAL, 0, GAPPED),      /* the widest gap of V's rows */
    DC(2, 200, 200, 4, 2, 40, 104, FP16, LOCAL, 0, GAPPED),
    DC(1, 127, 300, 4, 1, 136, 184, BF16, RIGHT0, 5.0f, GAPPED),
    /* more of softcap: outliers (scores far into tanh's flat part), many heads */
    DC_OUTLIERS(2, 127, 127, 4, 2, 80, 0, BF16, NONE, 5.0f, GAPPED),
    DC_OUTLIERS(1, 300, 300, 4, 4, 160, 0, FP16, CAUSAL, 30.0f, GAPPED),
    DC(4, 257, 257, 8, 2, 96, 0, BF16, CAUSAL, 30.0f, GAPPED),
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

/* The Hopper forward's rows (src/kernels/sm90/fwd_tiles.cuh: 64, 128, 192 / 128 and 256, a call
 * taking the narrowest that covers its head dims), forward only, no softcap (the Hopper forward
 * has none), with and without LSE (the no-LSE d64 / d128 rows are other kernels; the 192 / 128
 * and 256 rows take both with fp32 row sums); GAPPED cases' gaps reach 256 columns, the widest
 * row, so that any column a row reads or writes past the real dims shows. Under the default
 * dispatch the first cases (enough work, sm90's preferred()) run the Hopper forward on sm_90;
 * CUDADENT_KERNEL_FWD=sm90 runs all of them there. */
#define HC(b, sq, sk, hq, hkv, dim, dimv, dt, mask, nolse, lay)                                \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, 0, LAYOUT_##lay, 0, nolse, 256, 0}
#define HC_OUTLIERS(b, sq, sk, hq, hkv, dim, dimv, dt, mask, nolse, lay)                       \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, 0, LAYOUT_##lay, 1, nolse, 256, 0}
static const dims_case_t hopper_cases[] = {
    /* d256 */
    HC(2, 1000, 1000, 4, 2, 256, 0, BF16, NONE, 0, GAPPED),
    HC(1, 1000, 1000, 8, 1, 256, 0, FP16, CAUSAL, 1, GAPPED),        /* MQA, no LSE */
    HC(4, 1000, 160, 8, 2, 256, 0, FP16, NONE, 1, GAPPED),          /* 256 tiles: > SMs */
    HC(2, 127, 300, 4, 4, 256, 0, FP16, WINDOW, 0, CONTIGUOUS),
    HC(1, 300, 127, 4, 2, 256, 0, BF16, CAUSAL, 1, GAPPED),         /* sq > sk: rows with no key */
    /* 192 / 128 */
    HC(1, 1000, 1000, 8, 2, 192, 128, BF16, CAUSAL, 0, GAPPED),     /* DeepSeek's training shape */
    HC(2, 1000, 700, 4, 4, 192, 128, FP16, NONE, 1, GAPPED),
    HC(4, 1000, 200, 8, 8, 192, 128, BF16, CAUSAL, 0, GAPPED),      /* 256 tiles, sq > sk */
    HC(2, 257, 257, 4, 1, 192, 128, FP16, LOCAL, 0, CONTIGUOUS),
    HC(1, 17, 1000, 4, 2, 192, 128, BF16, WINDOW, 1, GAPPED),
    /* d96 (the d96 rows of config.cuh SM90_FWD_D96: BLOCK_M 192, 32-column slabs) */
    HC(2, 1000, 1000, 4, 2, 96, 0, FP16, NONE, 0, GAPPED),
    HC(1, 1000, 1000, 8, 2, 96, 0, BF16, CAUSAL, 1, GAPPED),
    HC(2, 300, 127, 4, 4, 96, 0, FP16, WINDOW, 1, GAPPED),
    HC_OUTLIERS(2, 257, 257, 8, 2, 96, 0, BF16, CAUSAL, 0, GAPPED),
    /* other widths, rounded up to a row */
    HC(4, 1000, 700, 8, 4, 80, 0, BF16, CAUSAL, 1, GAPPED),         /* d96 row, no LSE */
    HC(1, 500, 300, 4, 2, 160, 0, FP16, CAUSAL, 0, GAPPED),         /* 256 row */
    HC(2, 127, 127, 4, 4, 224, 0, BF16, NONE, 1, GAPPED),           /* 256 row */
    HC(2, 300, 300, 4, 2, 40, 0, FP16, LOCAL, 0, GAPPED),           /* 64 row, M128 */
    HC(1, 1000, 1000, 4, 1, 40, 0, BF16, NONE, 1, GAPPED),          /* 64 row, M192, no LSE */
    HC(1, 127, 1, 4, 4, 136, 0, FP16, NONE, 0, GAPPED),             /* 256 row, one key */
    HC(2, 127, 127, 4, 1, 128, 64, BF16, WINDOW, 0, GAPPED),        /* 128 row */
    HC(1, 300, 127, 4, 2, 64, 128, FP16, CAUSAL, 1, GAPPED),        /* 128 row, no LSE */
    HC(1, 127, 300, 4, 1, 136, 184, BF16, RIGHT0, 0, GAPPED),       /* 256 row */
    HC(1, 127, 127, 4, 2, 8, 256, BF16, CAUSAL, 1, GAPPED),         /* 256 row, widest V gap */
    HC(1, 127, 127, 4, 2, 176, 104, FP16, NONE, 0, GAPPED),         /* 192 / 128 row */
    /* head dims within 96, head_dim_v != head_dim: the d96 rows (a dev build with config.cuh's
     * SM90_FWD_D96 0: the 128 row) */
    HC(1, 300, 257, 4, 2, 72, 96, FP16, CAUSAL, 1, GAPPED),         /* no LSE: the ones past V */
    HC(2, 257, 300, 8, 1, 96, 48, BF16, WINDOW, 0, GAPPED),         /* MQA, V's 3rd slab all past */
};
enum { N_HOPPER = sizeof hopper_cases / sizeof hopper_cases[0] };

/* The Hopper backward (src/kernels/sm90/bwd.cu: widths 64, 96 and 128, a call on the narrower that
 * covers head_dim and head_dim_v, TMA zero-filling the columns past them), backward checked
 * after a forward, no softcap (the Hopper backward has none); gaps reach 128 columns, the wider
 * width, so that any column read or written past the real dims shows. Lengths not multiples of
 * the tiles (BLOCK_N 128, BLOCK_M 128 / 64). Estimated reference cost in the comments (core-s). */
#define HB(b, sq, sk, hq, hkv, dim, dimv, dt, mask, det, lay)                                  \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, 0, LAYOUT_##lay, 0, 0, 128, det}
#define HB_OUTLIERS(b, sq, sk, hq, hkv, dim, dimv, dt, mask, det, lay)                         \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, 0, LAYOUT_##lay, 1, 0, 128, det}
#define HBW(b, sq, sk, hq, hkv, dim, dimv, dt, mask, det, lay)                                 \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, 0, LAYOUT_##lay, 0, 0, 256, det}
#define HBW_OUTLIERS(b, sq, sk, hq, hkv, dim, dimv, dt, mask, det, lay)                        \
  {b, sq, sk, hq, hkv, dim, dimv, CUDADENT_DTYPE_##dt, {mask}, 0, LAYOUT_##lay, 1, 0, 256, det}
static const dims_case_t hopper_bwd_cases[] = {
    /* width 64 */
    HB(2, 127, 127, 4, 4, 8, 0, BF16, NONE, 0, GAPPED),           /* 0.04 */
    HB(2, 127, 300, 4, 2, 32, 0, FP16, WINDOW, 0, GAPPED),        /* 0.4 */
    HB(1, 300, 127, 8, 2, 40, 0, FP16, CAUSAL, 0, GAPPED),        /* 0.5, sq > sk: rows w/o keys */
    HB(1, 17, 1000, 4, 1, 56, 0, BF16, CAUSAL, 0, CONTIGUOUS),    /* 0.15, MQA, sq < sk, packed */
    HB(2, 300, 300, 4, 2, 64, 0, FP16, LOCAL, 0, GAPPED),         /* 1.8, the full width */
    /* width 96 (config.cuh SM90_BWD_D96; a dev build with it at 0: width 128) */
    HB(1, 257, 257, 4, 1, 72, 0, BF16, LOCAL, 0, GAPPED),         /* 0.8, MQA */
    HB(1, 1000, 500, 4, 2, 80, 0, BF16, CAUSAL, 0, GAPPED),       /* 6.4, sq > sk */
    HB(1, 1000, 1000, 2, 1, 96, 0, FP16, NONE, 0, GAPPED),        /* 7.7 */
    HB_OUTLIERS(2, 257, 257, 8, 2, 96, 0, BF16, CAUSAL, 0, GAPPED), /* 4.1 */
    /* width 128 */
    HB(1, 127, 300, 4, 1, 104, 0, FP16, RIGHT0, 0, GAPPED),       /* 0.6 */
    HB(2, 17, 1000, 4, 2, 120, 0, BF16, NONE, 0, GAPPED),         /* 0.7, sq < sk */
    HB(2, 127, 127, 4, 4, 128, 0, FP16, WINDOW, 0, GAPPED),       /* 0.7, the full width */
    /* head_dim_v != head_dim */
    HB(1, 300, 127, 4, 2, 64, 128, FP16, CAUSAL, 0, GAPPED),      /* 0.6 */
    HB(2, 127, 127, 4, 1, 128, 64, BF16, WINDOW, 0, GAPPED),      /* 0.5 */
    HB(1, 1000, 1000, 2, 1, 96, 64, FP16, CAUSAL, 0, GAPPED),     /* 6.4 */
    HB(1, 200, 333, 4, 2, 40, 120, BF16, WINDOW, 0, GAPPED),      /* 0.9 */
    HB(2, 1, 1000, 4, 4, 40, 120, FP16, NONE, 0, CONTIGUOUS),     /* 0.03, one query, packed */
    HB(1, 127, 300, 8, 1, 8, 128, BF16, CAUSAL, 0, GAPPED),       /* 0.8, the widest V gap */
    /* deterministic: the turn order (causal), the rotated walk (no mask, fewer key blocks than
     * query blocks: bwd.cu cd_sm90_bwd_det_rotates) */
    HB(2, 300, 300, 4, 2, 96, 0, BF16, CAUSAL, 1, GAPPED),        /* 2.8 */
    HB(1, 1000, 300, 4, 2, 40, 120, FP16, NONE, 1, GAPPED),       /* 3.8 */
    /* the wide rows (192 / 128, 256 / 256; BLOCK_M = BLOCK_N = 64), skipped while dispatch.h's
     * CUDADENT_SM90_BWD_WIDE is 0 (cases from WIDE_FIRST on; gaps reach 256 columns) */
    HBW(1, 300, 300, 4, 2, 256, 0, BF16, CAUSAL, 0, GAPPED),      /* 3.5, GQA */
    HBW(2, 127, 200, 4, 4, 256, 0, FP16, WINDOW, 0, GAPPED),      /* 2.6, sq < sk */
    HBW(1, 200, 77, 4, 1, 256, 0, BF16, NONE, 0, CONTIGUOUS),     /* 0.8, MQA, sq > sk, packed */
    HBW_OUTLIERS(1, 257, 257, 8, 2, 256, 0, FP16, LOCAL, 0, GAPPED), /* 5.4 */
    HBW(1, 300, 300, 8, 2, 192, 128, BF16, CAUSAL, 0, GAPPED),    /* 4.3, DeepSeek's shape */
    HBW(2, 127, 257, 4, 4, 192, 128, FP16, LOCAL, 0, GAPPED),     /* 2.7 */
    HBW(1, 257, 100, 4, 2, 192, 128, BF16, RIGHT0, 0, CONTIGUOUS), /* 0.8, sq > sk: rows w/o keys */
    /* rounded up to a wide row: 136 -> 256, 200 / 128 -> 256, 256 / 64 -> 256, 176 / 104 and
     * 136 / 8 -> 192 / 128 */
    HBW(1, 200, 200, 4, 2, 136, 0, FP16, CAUSAL, 0, GAPPED),      /* 1.1 */
    HBW(1, 127, 300, 4, 1, 200, 128, BF16, WINDOW, 0, GAPPED),    /* 1.2, MQA */
    HBW(2, 127, 127, 4, 2, 256, 64, FP16, NONE, 0, GAPPED),       /* 1.3 */
    HBW(1, 127, 127, 4, 2, 176, 104, BF16, CAUSAL, 0, GAPPED),    /* 0.4 */
    HBW(2, 65, 1, 4, 4, 136, 8, FP16, NONE, 0, GAPPED),           /* 0.01, one key */
    /* deterministic: the turn order (causal, d256: dQ from registers), the rotated walk
     * (192 / 128, no mask, 4 key blocks <= 10 query blocks) */
    HBW(2, 300, 300, 4, 2, 256, 0, BF16, CAUSAL, 1, GAPPED),      /* 7 */
    HBW(1, 600, 200, 4, 2, 192, 128, FP16, NONE, 1, GAPPED),      /* 6 */
};
enum { WIDE_FIRST = 20 }; /* the first wide case */
enum { N_HOPPER_BWD = sizeof hopper_bwd_cases / sizeof hopper_bwd_cases[0] };

static problem_desc_t case_desc_of(const dims_case_t *c) {
  problem_desc_t d;
  memset(&d, 0, sizeof d);
  d.batch = c->batch;
  d.seqlen_q = c->seqlen_q;
  d.seqlen_k = c->seqlen_k;
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
  d.outliers = c->outliers;
  d.no_lse = c->no_lse;
  d.gap_width = c->layout == LAYOUT_GAPPED ? c->gap_width : 0;
  d.deterministic = c->deterministic;
  return d;
}

static problem_desc_t case_desc(int i) { return case_desc_of(&cases[i]); }

/* Whether the path of a direction is forced onto sm90 (CUDADENT_KERNEL_FWD / _BWD, else
 * CUDADENT_KERNEL; dispatch.c). */
static int forced_sm90(const char *own_var) {
  const char *v = getenv(own_var);
  if (!v || !v[0]) v = getenv("CUDADENT_KERNEL");
  return v && strcmp(v, "sm90") == 0;
}

/* Why a softcap case forced onto an sm90 row that does not take it skips (NULL: it runs): the
 * forward's while dispatch.h CUDADENT_SM90_FWD_SOFTCAP is 0 or both head dims are up to 64 (its
 * supports()), the backward's (bwd) while its row's gate is 0 (CUDADENT_SM90_BWD_SOFTCAP: the
 * 128 / 128 row, and with CUDADENT_SM90_BWD_D64_SOFTCAP the 64 / 64 row; CUDADENT_SM90_BWD_WIDE_SOFTCAP
 * with CUDADENT_SM90_BWD_WIDE: a head dim over 128) or the call is not one the row takes (dense, not
 * deterministic);
 * CUDADENT_KERNEL_FWD=sm90 alone runs the Hopper forward, the portable backward. */
static const char *sm90_softcap_skip(const problem_desc_t *desc, int bwd) {
  if (desc->softcap == 0.0f) return NULL;
  const int dv = problem_head_dim_v(desc);
  if (forced_sm90("CUDADENT_KERNEL_FWD") &&
      (!CUDADENT_SM90_FWD_SOFTCAP || (desc->head_dim <= 64 && dv <= 64)))
    return "softcap forward forced onto sm90, whose row does not take it (dispatch.h "
           "CUDADENT_SM90_FWD_SOFTCAP 0, or head dims up to 64)";
  const int wide = desc->head_dim > 128 || dv > 128;
  const int bwd_gate = wide ? CUDADENT_SM90_BWD_WIDE && CUDADENT_SM90_BWD_WIDE_SOFTCAP
                     : desc->head_dim <= 64 && dv <= 64
                         ? CUDADENT_SM90_BWD_SOFTCAP && CUDADENT_SM90_BWD_D64_SOFTCAP
                         : CUDADENT_SM90_BWD_SOFTCAP;
  const int det_ok = !desc->deterministic ||
                     (CUDADENT_SM90_BWD_DET_SOFTCAP && !wide && !(desc->head_dim <= 64 && dv <= 64));
  if (bwd && forced_sm90("CUDADENT_KERNEL_BWD") && (!bwd_gate || !det_ok || desc->varlen > 0))
    return "softcap backward forced onto sm90, whose row does not take it (dispatch.h "
           "CUDADENT_SM90_BWD_SOFTCAP, at d64 CUDADENT_SM90_BWD_D64_SOFTCAP, over 128 "
           "CUDADENT_SM90_BWD_WIDE_SOFTCAP, 0; or not a dense call; or deterministic while "
           "CUDADENT_SM90_BWD_DET_SOFTCAP is 0 or the row is not 128 / 128)";
  return NULL;
}

/* Forward, then (bwd) the backward with O's gaps refilled as an input's, then the check; skipped
 * where sm90_softcap_skip says so. */
static int run_dims_case(const problem_desc_t *desc, int bwd) {
  T_REQUIRE_GPU();
  const char *skip = sm90_softcap_skip(desc, bwd);
  if (skip) return t_skip(skip);
  problem_t pr;
  char err[256] = "", name[200];
  problem_describe(desc, name, sizeof name);
  if (problem_create(&pr, desc, err, sizeof err) != 0) {
    problem_destroy(&pr);
    return T_FAILF("%s: setup: %s", name, err);
  }
  printf("    %s seed %llu\n", name, (unsigned long long)pr.d.seed);
  cudadent_status_t st = problem_run_fwd(&pr, NULL);
  if (st == CUDADENT_STATUS_SUCCESS && bwd) {
    if (problem_gap_o_for_bwd(&pr) != 0) {
      problem_destroy(&pr);
      return T_FAILF("%s: CUDA failure refilling O's gaps: %s", name,
                     cudaGetErrorString(cudaGetLastError()));
    }
    st = problem_run_bwd(&pr, NULL);
  }
  if (st != CUDADENT_STATUS_SUCCESS) {
    problem_destroy(&pr);
    return T_FAILF("%s: %s: %s", name, cudadent_get_error_string(st),
                   cudadent_get_last_error_message());
  }
  check_result_t r;
  const int rc = problem_check(&pr, bwd, &r);
  problem_destroy(&pr);
  if (rc != 0) return T_FAILF("%s: CUDA failure: %s", name, cudaGetErrorString(cudaGetLastError()));
  problem_print_check(&r, bwd);
  return r.pass ? T_PASS : T_FAILF("%s: outside the criterion (or a clobbered gap, or a "
                                   "non-finite output: 'bad' above)", name);
}

/* One test function per case and direction: C has no closures, so a table of thunks. */
#define DIMS_FN(i)                                                                            \
  static int dims_fwd_##i(void) {                                                             \
    if (i >= N_CASES) return T_FAILF("no case %d", i);                                        \
    problem_desc_t d = case_desc(i);                                                          \
    return run_dims_case(&d, 0);                                                              \
  }                                                                                           \
  static int dims_bwd_##i(void) {                                                             \
    if (i >= N_CASES) return T_FAILF("no case %d", i);                                        \
    problem_desc_t d = case_desc(i);                                                          \
    return run_dims_case(&d, 1);                                                              \
  }
#define DIMS_10(t) DIMS_FN(t##0) DIMS_FN(t##1) DIMS_FN(t##2) DIMS_FN(t##3) DIMS_FN(t##4) \
  DIMS_FN(t##5) DIMS_FN(t##6) DIMS_FN(t##7) DIMS_FN(t##8) DIMS_FN(t##9)
DIMS_FN(0) DIMS_FN(1) DIMS_FN(2) DIMS_FN(3) DIMS_FN(4) DIMS_FN(5) DIMS_FN(6) DIMS_FN(7)
DIMS_FN(8) DIMS_FN(9) DIMS_10(1) DIMS_10(2) DIMS_10(3) DIMS_10(4)
#define DIMS_PTRS(i) {dims_fwd_##i, dims_bwd_##i}
#define DIMS_PTRS_10(t) DIMS_PTRS(t##0), DIMS_PTRS(t##1), DIMS_PTRS(t##2), DIMS_PTRS(t##3), \
  DIMS_PTRS(t##4), DIMS_PTRS(t##5), DIMS_PTRS(t##6), DIMS_PTRS(t##7), DIMS_PTRS(t##8),      \
  DIMS_PTRS(t##9)
static const t_fn dims_fns[][2] = {
    DIMS_PTRS(0), DIMS_PTRS(1), DIMS_PTRS(2), DIMS_PTRS(3), DIMS_PTRS(4),
    DIMS_PTRS(5), DIMS_PTRS(6), DIMS_PTRS(7), DIMS_PTRS(8), DIMS_PTRS(9),
    DIMS_PTRS_10(1), DIMS_PTRS_10(2), DIMS_PTRS_10(3), DIMS_PTRS_10(4)};
_Static_assert(sizeof dims_fns / sizeof dims_fns[0] >= N_CASES, "add DIMS_FN rows for new cases");

/* the Hopper cases: forward only */
#define HOPPER_FN(i)                                                                          \
  static int hopper_fwd_##i(void) {                                                           \
    if (i >= N_HOPPER) return T_FAILF("no case %d", i);                                       \
    problem_desc_t d = case_desc_of(&hopper_cases[i]);                                        \
    return run_dims_case(&d, 0);                                                              \
  }
#define HOPPER_10(t) HOPPER_FN(t##0) HOPPER_FN(t##1) HOPPER_FN(t##2) HOPPER_FN(t##3)           \
  HOPPER_FN(t##4) HOPPER_FN(t##5) HOPPER_FN(t##6) HOPPER_FN(t##7) HOPPER_FN(t##8) HOPPER_FN(t##9)
HOPPER_FN(0) HOPPER_FN(1) HOPPER_FN(2) HOPPER_FN(3) HOPPER_FN(4) HOPPER_FN(5) HOPPER_FN(6)
HOPPER_FN(7) HOPPER_FN(8) HOPPER_FN(9) HOPPER_10(1) HOPPER_10(2)
#define HOPPER_PTRS_10(t) hopper_fwd_##t##0, hopper_fwd_##t##1, hopper_fwd_##t##2,               \
  hopper_fwd_##t##3, hopper_fwd_##t##4, hopper_fwd_##t##5, hopper_fwd_##t##6, hopper_fwd_##t##7, \
  hopper_fwd_##t##8, hopper_fwd_##t##9
static const t_fn hopper_fns[] = {hopper_fwd_0, hopper_fwd_1, hopper_fwd_2, hopper_fwd_3,
                                  hopper_fwd_4, hopper_fwd_5, hopper_fwd_6, hopper_fwd_7,
                                  hopper_fwd_8, hopper_fwd_9, HOPPER_PTRS_10(1),
                                  HOPPER_PTRS_10(2)};
_Static_assert(sizeof hopper_fns / sizeof hopper_fns[0] >= N_HOPPER,
               "add HOPPER_FN rows for new Hopper cases");

/* ---- deterministic backward: bit-identical repeats, then the check ---------------------------- */
static int run_repeatable(const problem_desc_t *d, int runs) {
  T_REQUIRE_GPU();
  char err[256] = "", name[200];
  problem_describe(d, name, sizeof name);
  problem_t pr;
  if (problem_create(&pr, d, err, sizeof err) != 0) {
    problem_destroy(&pr);
    return T_FAILF("setup: %s", err);
  }
  printf("    %s deterministic, seed %llu\n", name, (unsigned long long)pr.d.seed);
  const int rc = problem_bwd_repeatable(&pr, runs, err, sizeof err);
  problem_destroy(&pr);
  return rc == 0 ? T_PASS : T_FAILF("%s: %s", name, err);
}

/* the Hopper backward's cases: a checked backward, or (deterministic) three bit-identical ones */
enum { HOPPER_BWD_REPEATS = 3 };
#define HOPPER_BWD_FN(i)                                                                      \
  static int hopper_bwd_##i(void) {                                                           \
    if (i >= N_HOPPER_BWD) return T_FAILF("no case %d", i);                                   \
    if (i >= WIDE_FIRST && !CUDADENT_SM90_BWD_WIDE)                                           \
      return t_skip("the Hopper backward's wide rows are gated off (dispatch.h "              \
                    "CUDADENT_SM90_BWD_WIDE 0 until these tests pass)");                      \
    problem_desc_t d = case_desc_of(&hopper_bwd_cases[i]);                                    \
    return d.deterministic ? run_repeatable(&d, HOPPER_BWD_REPEATS) : run_dims_case(&d, 1);   \
  }
#define HOPPER_BWD_10(t) HOPPER_BWD_FN(t##0) HOPPER_BWD_FN(t##1) HOPPER_BWD_FN(t##2)           \
  HOPPER_BWD_FN(t##3) HOPPER_BWD_FN(t##4) HOPPER_BWD_FN(t##5) HOPPER_BWD_FN(t##6)              \
  HOPPER_BWD_FN(t##7) HOPPER_BWD_FN(t##8) HOPPER_BWD_FN(t##9)
HOPPER_BWD_10() HOPPER_BWD_10(1) HOPPER_BWD_10(2) HOPPER_BWD_FN(30) HOPPER_BWD_FN(31)
HOPPER_BWD_FN(32) HOPPER_BWD_FN(33)
#define HOPPER_BWD_PTRS_10(t) hopper_bwd_##t##0, hopper_bwd_##t##1, hopper_bwd_##t##2,         \
  hopper_bwd_##t##3, hopper_bwd_##t##4, hopper_bwd_##t##5, hopper_bwd_##t##6,                  \
  hopper_bwd_##t##7, hopper_bwd_##t##8, hopper_bwd_##t##9
static const t_fn hopper_bwd_fns[] = {HOPPER_BWD_PTRS_10(), HOPPER_BWD_PTRS_10(1),
                                      HOPPER_BWD_PTRS_10(2), hopper_bwd_30, hopper_bwd_31,
                                      hopper_bwd_32, hopper_bwd_33};
_Static_assert(sizeof hopper_bwd_fns / sizeof hopper_bwd_fns[0] >= N_HOPPER_BWD,
               "add HOPPER_BWD_FN rows for new Hopper backward cases");

/* d104 causal GQA softcap 30 (the portable backward, or the 128 row's deterministic softcap kernel
 * where dispatch.h's CUDADENT_SM90_BWD_DET_SOFTCAP is 1): five runs */
static int test_dims_bwd_deterministic(void) {
  problem_desc_t d;
  memset(&d, 0, sizeof d);
  d.batch = 2; d.seqlen_q = 300; d.seqlen_k = 300; d.heads_q = 4; d.heads_kv = 2;
  d.head_dim = 104; d.dtype = CUDADENT_DTYPE_BF16; d.causal = 1; d.window_left = -1;
  d.window_right = -1; d.softcap = 30.0f; d.deterministic = 1; d.layout = LAYOUT_GAPPED;
  const char *skip = sm90_softcap_skip(&d, 1);
  if (skip) return t_skip(skip);
  return run_repeatable(&d, 5);
}

/* ---- the harness catches reads past the real dim -----------------------------------------------
 * A gapped problem of head dims (64, 64) whose gaps reach 128 columns would be read by a kernel
 * of width 128 that does not zero-fill: params naming head_dim (and/or head_dim_v) 128 over the
 * same buffers make the library's own kernels do exactly that. Each such call must fail the
 * check of the (64, 64) problem: Q/K's gaps in the scores (the criterion), V's gaps and O's
 * writes past 64 (O's gap no longer poison), dO's and O's gaps in the backward. A variant this
 * build refuses (UNSUPPORTED_*: no kernel for it) is reported and skipped. */
typedef struct overread {
  const char *what;
  int bwd;          /* 0: the forward mutated; 1: a right forward, then the backward mutated */
  int head_dim, head_dim_v; /* the params' (0: the problem's) */
} overread_t;

static cudadent_status_t run_mutated(problem_t *pr, const overread_t *m, void **ws, size_t *ws_bytes) {
  size_t need = 0;
  cudadent_status_t st;
  cudadent_attn_fwd_params_t f;
  cudadent_attn_bwd_params_t b;
  if (!m->bwd) {
    problem_fwd_params(pr, &f);
    if (m->head_dim) f.head_dim = m->head_dim;
    if (m->head_dim_v) f.head_dim_v = m->head_dim_v;
    st = cudadent_attn_fwd_workspace_size(&f, &need);
  } else {
    problem_bwd_params(pr, &b);
    if (m->head_dim) b.head_dim = m->head_dim;
    if (m->head_dim_v) b.head_dim_v = m->head_dim_v;
    st = cudadent_attn_bwd_workspace_size(&b, &need);
  }
  if (st != CUDADENT_STATUS_SUCCESS) return st;
  if (need > *ws_bytes) {
    cudaFree(*ws);
    *ws = NULL;
    *ws_bytes = 0;
    if (cudaMalloc(ws, need) != cudaSuccess) return CUDADENT_STATUS_CUDA_ERROR;
    *ws_bytes = need;
  }
  return m->bwd ? cudadent_attn_bwd(&b, *ws, *ws_bytes, NULL)
                : cudadent_attn_fwd(&f, *ws, *ws_bytes, NULL);
}

static int test_gap_overread_fails(void) {
  T_REQUIRE_GPU();
  static const overread_t variants[] = {
      {"fwd reads Q, K to 128 (head_dim 128, head_dim_v 64)", 0, 128, 64},
      {"fwd reads V to 128, writes O to 128 (head_dim_v 128)", 0, 0, 128},
      {"fwd reads Q, K, V to 128, writes O to 128 (head_dim 128)", 0, 128, 0},
      {"bwd reads V, O, dO to 128, writes dV to 128 (head_dim_v 128)", 1, 0, 128},
      {"bwd reads everything to 128, writes dQ, dK, dV to 128 (head_dim 128)", 1, 128, 0},
  };
  int ran = 0, result = T_PASS;
  for (size_t i = 0; i < sizeof variants / sizeof variants[0]; ++i) {
    const overread_t *m = &variants[i];
    problem_desc_t d;
    memset(&d, 0, sizeof d);
    d.batch = 2; d.seqlen_q = 100; d.seqlen_k = 130; d.heads_q = 4; d.heads_kv = 2;
    d.head_dim = 64; d.dtype = CUDADENT_DTYPE_BF16; d.window_left = -1; d.window_right = -1;
    d.layout = LAYOUT_GAPPED; d.gap_width = 128;
    problem_t pr;
    char err[256] = "";
    if (problem_create(&pr, &d, err, sizeof err) != 0) {
      problem_destroy(&pr);
      return T_FAILF("setup: %s", err);
    }
    void *ws = NULL;
    size_t ws_bytes = 0;
    cudadent_status_t st = CUDADENT_STATUS_SUCCESS;
    if (m->bwd) {
      st = problem_run_fwd(&pr, NULL);
      if (st == CUDADENT_STATUS_SUCCESS && problem_gap_o_for_bwd(&pr) != 0)
        st = CUDADENT_STATUS_CUDA_ERROR;
    }
    if (st == CUDADENT_STATUS_SUCCESS) st = run_mutated(&pr, m, &ws, &ws_bytes);
    cudaFree(ws);
    if (st == CUDADENT_STATUS_UNSUPPORTED_HEAD_DIM || st == CUDADENT_STATUS_UNSUPPORTED_FEATURE ||
        st == CUDADENT_STATUS_UNSUPPORTED_ARCH) {
      printf("    %s: refused by this build (%s), not run\n", m->what,
             cudadent_get_last_error_message());
      problem_destroy(&pr);
      continue;
    }
    if (st != CUDADENT_STATUS_SUCCESS) {
      result = T_FAILF("%s: %s: %s", m->what, cudadent_get_error_string(st),
                       cudadent_get_last_error_message());
      problem_destroy(&pr);
      break;
    }
    check_result_t r;
    const int rc = problem_check(&pr, m->bwd, &r);
    problem_destroy(&pr);
    if (rc != 0) {
      result = T_FAILF("%s: CUDA failure in the check", m->what);
      break;
    }
    ++ran;
    const error_figure_t *f = m->bwd ? (r.dq.pass ? (r.dk.pass ? &r.dv : &r.dk) : &r.dq) : &r.o;
    printf("    %s: check %s (%s max_err %.3e tol %.3e bad %ld)\n", m->what,
           r.pass ? "PASSED" : "failed, as it must", m->bwd ? "first failing gradient" : "o",
           f->max_err, f->tolerance, f->bad_elements);
    if (r.pass) result = T_FAILF("%s: the check did not see it", m->what);
  }
  if (result == T_PASS && ran == 0) return t_skip("no kernel of this build takes the wider calls");
  return result;
}

void register_gpu_dims_tests(void) {
  static char names[2][N_CASES][48];
  for (int i = 0; i < N_CASES; ++i) {
    const dims_case_t *c = &cases[i];
    char tail[32] = "", cap[24] = "";
    if (c->head_dim_v && c->head_dim_v != c->head_dim) snprintf(tail, sizeof tail, "v%d", c->head_dim_v);
    if (c->softcap != 0.0f) snprintf(cap, sizeof cap, "-cap%g", (double)c->softcap);
    for (int dir = 0; dir < 2; ++dir) {
      snprintf(names[dir][i], sizeof names[dir][i], "gpu_dims_%s/%02d-d%d%s%s",
               dir ? "bwd" : "fwd", i, c->head_dim, tail, cap);
      t_register(names[dir][i], dims_fns[i][dir]);
    }
  }
  static char hopper_names[N_HOPPER][56];
  for (int i = 0; i < N_HOPPER; ++i) {
    const dims_case_t *c = &hopper_cases[i];
    char tail[32] = "";
    if (c->head_dim_v && c->head_dim_v != c->head_dim) snprintf(tail, sizeof tail, "v%d", c->head_dim_v);
    snprintf(hopper_names[i], sizeof hopper_names[i], "gpu_dims_hopper_fwd/%02d-d%d%s%s", i,
             c->head_dim, tail, c->no_lse ? "-nolse" : "");
    t_register(hopper_names[i], hopper_fns[i]);
  }
  static char hopper_bwd_names[N_HOPPER_BWD][56];
  for (int i = 0; i < N_HOPPER_BWD; ++i) {
    const dims_case_t *c = &hopper_bwd_cases[i];
    char tail[32] = "";
    if (c->head_dim_v && c->head_dim_v != c->head_dim) snprintf(tail, sizeof tail, "v%d", c->head_dim_v);
    snprintf(hopper_bwd_names[i], sizeof hopper_bwd_names[i], "gpu_dims_hopper_bwd/%02d-d%d%s%s",
             i, c->head_dim, tail, c->deterministic ? "-det" : "");
    t_register(hopper_bwd_names[i], hopper_bwd_fns[i]);
  }
  t_register("gpu_dims_bwd_deterministic", test_dims_bwd_deterministic);
  t_register("gpu_dims_gap_overread_fails", test_gap_overread_fails);
}
