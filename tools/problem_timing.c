/*
 * problem_timing.c - timing a problem's calls (problem.h): the median of CUDA-event-timed calls
 * with the L2 flushed before each, the GPU time per call in a CUDA graph, and the FLOPs by the
 * FlashAttention convention.
 */
#define _POSIX_C_SOURCE 200809L
#include "problem.h"

#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "problem_internal.h"

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

/* The visible (query, key) pairs of one sequence of sq queries and sk keys under d's mask. */
static double visible_pairs(const problem_desc_t *d, int sq, int sk) {
  if (d->window_left < 0 && d->window_right < 0 && !d->causal) return (double)sq * sk;
  if (d->causal && d->window_left < 0 && sq == sk)
    return (double)sq * sk / 2.0; /* the convention: halved for causal */
  double pairs = 0.0;
  for (int i = 0; i < sq; ++i) {
    /* visible columns form one interval per row */
    const int shift = sk - sq;
    int lo = d->window_left >= 0 ? i + shift - d->window_left : 0;
    int right = d->causal ? 0 : d->window_right;
    int hi = right >= 0 ? i + shift + right : sk - 1;
    if (lo < 0) lo = 0;
    if (hi > sk - 1) hi = sk - 1;
    if (hi >= lo) pairs += hi - lo + 1;
  }
  return pairs;
}

double problem_flops(const problem_desc_t *d, int bwd) {
  double pairs = 0.0;
  if (d->varlen > 0 && d->varlen_q && d->varlen_k) { /* the pairs within each sequence */
    for (int b = 0; b < d->varlen; ++b) {
      int sk = d->varlen_k[b];
      if (d->varlen_used && d->varlen_used[b] < sk) sk = d->varlen_used[b] > 0 ? d->varlen_used[b] : 0;
      pairs += visible_pairs(d, d->varlen_q[b], sk);
    }
  } else {
    pairs = (double)d->batch * visible_pairs(d, d->seqlen_q, d->seqlen_k);
  }
  /* Q K^T over head_dim, P V over head_dim_v: 2 FLOPs a multiply-add each */
  double f = 2.0 * d->heads_q * pairs * (d->head_dim + problem_head_dim_v(d));
  return bwd ? 2.5 * f : f;
}
