/*
 * bwd.cu - the library's launcher of the Hopper (sm_90a) attention backward: three kernels on the
 * caller's stream, cd_sm90_bwd_pre (delta, log2 LSE, the dQ accumulator zeroed), the main kernel
 * (dK, dV, dQ sums: bwd_kernel.cuh for the narrow rows, bwd_wide_kernel.cuh for the wide ones says
 * which warps do what) and cd_sm90_bwd_post (dQ).
 *
 * Rows (bwd_tiles.cuh, D_QK / D_V): 64 / 64, 128 / 128 and 96 / 96 (config.cuh
 * SM90_BWD_D96) here, 192 / 128 and 256 / 256 in
 * bwd_wide.cu (behind dispatch.h's CUDADENT_SM90_BWD_WIDE); a call runs at the narrowest row that
 * covers head_dim and head_dim_v (bwd_launch.cuh cd_sm90_bwd_row, which also says how the columns
 * past the real dims are zero-filled and the workspace's parts). The design and its measurements:
 * docs/kernels/sm90_bwd.md. Varlen calls (cu_seqlens_q, behind dispatch.h's CUDADENT_SM90_BWD_VARLEN)
 * run bwd_varlen.cu's launcher (section 7 of that note). Softcap (behind dispatch.h's
 * CUDADENT_SM90_BWD_SOFTCAP): calls of the 128 / 128 row, not deterministic, run its softcap
 * kernel (cd_sm90_bwd_softcap; varlen ones bwd_varlen.cu's; that note's section "Softcap"), dense
 * ones of the 64 / 64 row its own where CUDADENT_SM90_BWD_D64_SOFTCAP is 1, and dense calls of the
 * wide rows, behind CUDADENT_SM90_BWD_WIDE_SOFTCAP, bwd_wide.cu's.
 */
#include <string.h>

#include "kernels/dev.h"
#include "kernels/sm90/bwd_launch.cuh"

/* The widest head_dim / head_dim_v the Hopper backward takes: 256 with the wide rows, else 128. */
#define SM90_BWD_MAX_DIM (CUDADENT_SM90_BWD_WIDE ? 256 : 128)

/* What the kernels can run at all: fp16 / bf16, head_dim and head_dim_v (api.c: multiples of 8)
 * up to SM90_BWD_MAX_DIM, each call at the row covering both. Softcap (where dispatch.c's row lists
 * it), not deterministic: with the gate CUDADENT_SM90_BWD_SOFTCAP dense and varlen calls of the
 * 128 / 128 row (a head dim over 64, both up to 128) and, with CUDADENT_SM90_BWD_D64_SOFTCAP too,
 * dense calls of the 64 / 64 row (both head dims up to 64; varlen ones too with
 * CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP); with CUDADENT_SM90_BWD_WIDE_SOFTCAP
 * calls of the wide rows (a head dim over 128; varlen ones where varlen_ok takes them): the softcap
 * kernels are those rows' non-deterministic ones (docs/kernels/sm90_bwd_softcap.md), and with
 * CUDADENT_SM90_BWD_DET_SOFTCAP the 128 / 128 row's deterministic ones for its dense deterministic
 * calls; the others go to the portable backward, the next row. */
extern "C" int cudadent_sm90_bwd_supports(const cudadent_attn_bwd_params_t *p) {
  const int dtype_ok = p->dtype == CUDADENT_DTYPE_FP16 || p->dtype == CUDADENT_DTYPE_BF16;
  const int dv = p->head_dim_v != 0 ? p->head_dim_v : p->head_dim; /* 0 in api.c's probes */
  const int dim_ok = p->head_dim >= 8 && p->head_dim <= SM90_BWD_MAX_DIM && dv >= 8 &&
                     dv <= SM90_BWD_MAX_DIM;
  /* varlen (dispatch.h CUDADENT_SM90_BWD_VARLEN lists the feature on the row): the narrow rows, and
   * the wide ones where CUDADENT_SM90_BWD_VARLEN_WIDE is 1, not deterministic (bwd_varlen.cu; such
   * calls go to the portable backward, the next row) */
  const int varlen = p->cu_seqlens_q != NULL || p->cu_seqlens_k != NULL;
  const int wide = p->head_dim > 128 || dv > 128, narrow64 = p->head_dim <= 64 && dv <= 64;
  const int varlen_ok = !varlen || ((!wide || CUDADENT_SM90_BWD_VARLEN_WIDE) && !p->deterministic);
  const int softcap_row = wide       ? CUDADENT_SM90_BWD_WIDE_SOFTCAP
                          : narrow64 ? CUDADENT_SM90_BWD_SOFTCAP && CUDADENT_SM90_BWD_D64_SOFTCAP &&
                                           (!varlen || CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP)
                                     : CUDADENT_SM90_BWD_SOFTCAP;
  const int det_ok = !p->deterministic || (CUDADENT_SM90_BWD_DET_SOFTCAP && !wide && !narrow64 && !varlen);
  const int softcap_ok = p->softcap == 0.f || (softcap_row && det_ok);
  return dtype_ok && dim_ok && varlen_ok && softcap_ok;
}

/* What the default dispatch gives this kernel: everything it supports. (Until session 17 the
 * deterministic calls with a right mask bound went to the sm80 backward: their dQ turns ran in
 * ascending key-block order, 177.6 TFLOP/s at b4 s4k 32/8 heads d128 causal on an H200, below the
 * sm80 backward's 262 without determinism. Descending turns (config.cuh SM90_BWD_DET_DESCENDING)
 * measured 275 there: docs/kernels/sm90_bwd.md section 3.) */
extern "C" int cudadent_sm90_bwd_preferred(const cudadent_attn_bwd_params_t *p) {
  (void)p;
  return 1;
}

/* The accumulator is as wide as the row's D_QK (its padded columns are summed too: zeros), so
 * the size follows the row, not head_dim. */
extern "C" size_t cudadent_sm90_bwd_workspace_size(const cudadent_attn_bwd_params_t *p) {
  if (p->cu_seqlens_q != NULL) return cd_sm90_bwd_varlen_workspace(p);
  const int row = cd_sm90_bwd_row(p);
  const int64_t rows = (int64_t)p->batch * p->heads_q * cd_sm90_bwd_sq_pad(p);
  const size_t sems = p->deterministic ? cd_sm90_bwd_align((size_t)(rows / cd_sm90_bwd_row_block_m(row)) * sizeof(int)) : 0;
#if SM90_BWD_PERSISTENT == 2
  /* the dynamic scheduler's unit counter (a dev build's), where the semaphores would start:
   * bwd_parts.cuh cd_sm90_bwd_unit_counter */
  const size_t counter = p->deterministic ? 0 : cd_sm90_bwd_align(sizeof(int));
#else
  const size_t counter = 0;
#endif
  return cd_sm90_bwd_align((size_t)rows * row * sizeof(float)) +
         2 * cd_sm90_bwd_align((size_t)rows * sizeof(float)) + sems + counter;
}

#if CUDADENT_SM90_BWD_DET_SOFTCAP
/* A deterministic softcap call of the 128 / 128 row (dispatch.h CUDADENT_SM90_BWD_DET_SOFTCAP): the
 * row's softcap kernel in the deterministic mode cd_sm90_bwd_launch_mode would take without
 * softcap. (Not the 64 / 64 row: its descending-turn softcap kernel spills 44 B.) */
template <int D>
static cudaError_t cd_sm90_bwd_softcap_det(const cudadent_attn_bwd_params_t *p, void *workspace, cudaStream_t stream) {
  constexpr int BM = cd_sm90_bwd_tile<D>::BLOCK_M, BN = cd_sm90_bwd_tile<D>::BLOCK_N;
  const bool fp16 = p->dtype == CUDADENT_DTYPE_FP16;
  if (cd_sm90_bwd_det_rotates(p, (p->seqlen_k + BN - 1) / BN, (p->seqlen_q + BM - 1) / BM))
    return fp16 ? cd_sm90_bwd_launch<D, D, true, CD_SM90_BWD_DET_ROTATED, BM, true>(p, workspace, stream)
                : cd_sm90_bwd_launch<D, D, false, CD_SM90_BWD_DET_ROTATED, BM, true>(p, workspace, stream);
  return fp16 ? cd_sm90_bwd_launch<D, D, true, CD_SM90_BWD_DET, BM, true>(p, workspace, stream)
              : cd_sm90_bwd_launch<D, D, false, CD_SM90_BWD_DET, BM, true>(p, workspace, stream);
}
#endif

/* A dense softcap call of the 128 / 128 row, of the 96 / 96 row (config.cuh SM90_BWD_D96, not
 * deterministic: cd_sm90_bwd_row), or of the 64 / 64 row where dispatch.h's
 * CUDADENT_SM90_BWD_D64_SOFTCAP is 1 (p->softcap > 0; deterministic only where
 * CUDADENT_SM90_BWD_DET_SOFTCAP is 1: supports(); the wide rows' go to cd_sm90_bwd_wide): its row's
 * softcap kernel (bwd_kernel.cuh cd_sm90_bwd_softcap_kernel); the workspace is the row's. */
static cudaError_t cd_sm90_bwd_softcap(const cudadent_attn_bwd_params_t *p, void *workspace, cudaStream_t stream) {
#if CUDADENT_SM90_BWD_DET_SOFTCAP
  if (p->deterministic) return cd_sm90_bwd_softcap_det<128>(p, workspace, stream); /* supports(): row 128 */
#endif
#if SM90_BWD_D96
  if (cd_sm90_bwd_row(p) == 96) {
    constexpr int BM96 = cd_sm90_bwd_tile<96>::BLOCK_M;
    return p->dtype == CUDADENT_DTYPE_FP16
               ? cd_sm90_bwd_launch<96, 96, true, CD_SM90_BWD_NONDET, BM96, true>(p, workspace, stream)
               : cd_sm90_bwd_launch<96, 96, false, CD_SM90_BWD_NONDET, BM96, true>(p, workspace, stream);
  }
#endif
  if (cd_sm90_bwd_row(p) == 64) {
    constexpr int BM64 = cd_sm90_bwd_tile<64>::BLOCK_M;
    return p->dtype == CUDADENT_DTYPE_FP16
               ? cd_sm90_bwd_launch<64, 64, true, CD_SM90_BWD_NONDET, BM64, true>(p, workspace, stream)
               : cd_sm90_bwd_launch<64, 64, false, CD_SM90_BWD_NONDET, BM64, true>(p, workspace, stream);
  }
  constexpr int BM = cd_sm90_bwd_tile<128>::BLOCK_M;
  return p->dtype == CUDADENT_DTYPE_FP16
             ? cd_sm90_bwd_launch<128, 128, true, CD_SM90_BWD_NONDET, BM, true>(p, workspace, stream)
             : cd_sm90_bwd_launch<128, 128, false, CD_SM90_BWD_NONDET, BM, true>(p, workspace, stream);
}

extern "C" cudaError_t cudadent_sm90_bwd(const cudadent_attn_bwd_params_t *p, void *workspace,
                                         cudaStream_t stream) {
  /* api.c has normalized head_dim_v (0 -> head_dim) and supports() bounded both dims */
  if (p->cu_seqlens_q != NULL) return cd_sm90_bwd_varlen_run(p, workspace, stream);
  const int row = cd_sm90_bwd_row(p);
  if (p->softcap > 0.f && (row == 64 || row == 96 || row == 128)) return cd_sm90_bwd_softcap(p, workspace, stream);
  if (row == 64) return cd_sm90_bwd_launch_mode<64, 64>(p, workspace, stream);
#if SM90_BWD_D96
  if (row == 96) return cd_sm90_bwd_launch_mode<96, 96>(p, workspace, stream); /* config.cuh */
#endif
#if SM90_BWD_D128_BM80
  if (cd_sm90_bwd_takes_bm80(p)) /* FA3's non-causal d128 tile (config.cuh) */
    return p->dtype == CUDADENT_DTYPE_FP16
               ? cd_sm90_bwd_launch<128, 128, true, CD_SM90_BWD_NONDET, 80>(p, workspace, stream)
               : cd_sm90_bwd_launch<128, 128, false, CD_SM90_BWD_NONDET, 80>(p, workspace, stream);
#endif
  if (row == 128) return cd_sm90_bwd_launch_mode<128, 128>(p, workspace, stream);
  return cd_sm90_bwd_wide(p, workspace, stream);
}

#ifdef CUDADENT_DEV
/* ---- the dev-only entry point (src/kernels/dev.h): the block-phase trace (bwd_trace.cuh) ---- */

extern "C" cudaError_t cudadent_dev_sm90_bwd_trace_set(
    const cudadent_attn_bwd_params_t *p, void *buf, size_t buf_bytes, size_t *needed) {
#if SM90_BWD_TRACE
  if (p == NULL || needed == NULL) return cudaErrorInvalidValue;
  *needed = 0;
  if (p->cu_seqlens_q != NULL || p->cu_seqlens_k != NULL) return cudaErrorNotSupported; /* dense calls */
  const int row = cd_sm90_bwd_row(p); /* 192, 256: the wide rows (bwd_wide_kernel.cuh, bwd_wide.cu) */
  /* the 192 / 128 row's E3 kernel (config.cuh SM90_BWD_WIDE3, bwd_wide3_kernel.cuh) has no trace:
   * a build with -DSM90_BWD_WIDE3=0 traces that row's 64-key kernel */
  if (SM90_BWD_WIDE3 && row == 192 && !p->deterministic && p->softcap == 0.f) return cudaErrorNotSupported;
  /* likewise the 256 / 256 row's E5 kernel (config.cuh SM90_BWD_WIDE5, bwd_wide5_kernel.cuh): a build
   * with -DSM90_BWD_WIDE5=0 traces that row's 64-key kernel */
  if (SM90_BWD_WIDE5 && row == 256 && !p->deterministic && p->softcap == 0.f) return cudaErrorNotSupported;
  const int bm = cd_sm90_bwd_takes_bm80(p) ? 80 : cd_sm90_bwd_row_block_m(row);
  const int bn = cd_sm90_bwd_row_block_n(row);
  if (p->heads_kv <= 0 || p->batch <= 0) return cudaErrorInvalidValue;
  const long long ctas = (long long)((p->seqlen_k + bn - 1) / bn) * p->heads_kv * p->batch;
  const long long max_blocks = (long long)(p->heads_q / p->heads_kv) * ((p->seqlen_q + bm - 1) / bm);
  if (max_blocks > INT32_MAX) return cudaErrorInvalidValue;
  *needed = sizeof(unsigned long long) * (size_t)(CD_SM90_BWD_TRACE_HDR + CD_SM90_BWD_TRACE_HDR * ctas +
                                                  CD_SM90_BWD_TRACE_REC * ctas * max_blocks);
  cd_sm90_bwd_trace_state st = {nullptr, 0, 0};
  if (buf != NULL) {
    if (buf_bytes < *needed) return cudaErrorInvalidValue;
    unsigned long long h[CD_SM90_BWD_TRACE_HDR] = {0};
    memcpy(&h[CD_SM90_BWD_TRACE_H_MAGIC], "CDBWDTR1", 8); /* the file's magic, little-endian */
    h[CD_SM90_BWD_TRACE_H_VERSION] = 1;
    h[CD_SM90_BWD_TRACE_H_CTAS] = (unsigned long long)ctas;
    h[CD_SM90_BWD_TRACE_H_MAX_BLOCKS] = (unsigned long long)max_blocks;
    h[CD_SM90_BWD_TRACE_H_REC] = CD_SM90_BWD_TRACE_REC;
    h[CD_SM90_BWD_TRACE_H_EVENTS] = CD_BWD_EV_COUNT;
    h[CD_SM90_BWD_TRACE_H_BLOCK_M] = (unsigned long long)bm;
    h[CD_SM90_BWD_TRACE_H_BLOCK_N] = (unsigned long long)bn;
    h[CD_SM90_BWD_TRACE_H_D] = (unsigned long long)row;
    h[CD_SM90_BWD_TRACE_H_SEQLEN_Q] = (unsigned long long)p->seqlen_q;
    h[CD_SM90_BWD_TRACE_H_SEQLEN_K] = (unsigned long long)p->seqlen_k;
    h[CD_SM90_BWD_TRACE_H_BATCH] = (unsigned long long)p->batch;
    h[CD_SM90_BWD_TRACE_H_HEADS_Q] = (unsigned long long)p->heads_q;
    h[CD_SM90_BWD_TRACE_H_HEADS_KV] = (unsigned long long)p->heads_kv;
    h[CD_SM90_BWD_TRACE_H_FLAGS] = (p->deterministic ? 1u : 0u) |
                                   (p->causal || p->window_left >= 0 || p->window_right >= 0 ? 2u : 0u) |
                                   (p->dtype == CUDADENT_DTYPE_FP16 ? 4u : 0u);
    cudaError_t err = cudaMemset(buf, 0, *needed);
    if (err == cudaSuccess) err = cudaMemcpy(buf, h, sizeof h, cudaMemcpyHostToDevice);
    if (err != cudaSuccess) return err;
    st.buf = (unsigned long long *)buf;
    st.ctas = ctas;
    st.max_blocks = (int)max_blocks;
  }
  /* both units' kernels (this one's narrow rows, bwd_wide.cu's wide ones): a call runs one of them */
  cudaError_t err = cudaMemcpyToSymbol(cd_sm90_bwd_trace_dev, &st, sizeof st);
  return err != cudaSuccess ? err : cd_sm90_bwd_wide_trace_state_set(&st);
#else
  (void)p;
  (void)buf;
  (void)buf_bytes;
  if (needed != NULL) *needed = 0;
  return cudaErrorNotSupported;
#endif
}
#endif /* CUDADENT_DEV */
