/*
 * bwd.cu - the library's launcher of the Hopper (sm_90a) attention backward: three kernels on the
 * caller's stream, cd_sm90_bwd_pre (delta, log2 LSE, the dQ accumulator zeroed),
 * cd_sm90_bwd_kernel (dK, dV, dQ sums; bwd_kernel.cuh says which warps do what) and
 * cd_sm90_bwd_post (dQ).
 *
 * Widths: the kernels are compiled for D = 64 and 128 (the tile table, bwd_kernel.cuh); a call
 * runs at the narrower that covers both head_dim and head_dim_v (any multiples of 8 up to 128).
 * Each tensor map's innermost extent is the call's real dim (Q, K: head_dim; V, dO: head_dim_v),
 * so TMA loads the columns past it as zeros, which add nothing to S, dP^T or the dQ / dK / dV
 * products; the stores (dK, dV in the main kernel's epilogue, dQ in the post kernel) and the pre
 * kernel's reads of O and dO stop at the real dims (docs/kernels/sm90_bwd.md section 2.2).
 *
 * Workspace (256-byte aligned parts): the fp32 dQ accumulator [batch][heads_q][sq_pad][D] (D the
 * compiled width, not head_dim), LSE2
 * and delta [batch][heads_q][sq_pad] fp32, sq_pad = seqlen_q rounded up to BLOCK_M, and in the
 * deterministic mode one int32 semaphore per (batch, head, query block). Tensor maps are encoded
 * at every call (they hold addresses) and passed as __grid_constant__ parameters. api.c has
 * validated and normalized the params; nothing is checked again here. The design and its
 * measurements: docs/kernels/sm90_bwd.md.
 */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "device_info.h"
#include "dispatch.h"
#include "kernels/sm90/bwd_prepost.cuh"
#include "kernels/sm90/tensor_map.cuh"

static size_t cd_sm90_bwd_align(size_t x) { return (x + 255) / 256 * 256; }

/* The compiled widths, and the one a call runs at: the narrower covering head_dim and
 * head_dim_v (0 in api.c's probes: = head_dim). */
#define SM90_BWD_NARROW 64
#define SM90_BWD_WIDE 128
static int cd_sm90_bwd_width(const cudadent_attn_bwd_params_t *p) {
  const int dv = p->head_dim_v != 0 ? p->head_dim_v : p->head_dim;
  return p->head_dim <= SM90_BWD_NARROW && dv <= SM90_BWD_NARROW ? SM90_BWD_NARROW : SM90_BWD_WIDE;
}

static int cd_sm90_bwd_block_m(int width) {
  return width == SM90_BWD_NARROW ? cd_sm90_bwd_tile<SM90_BWD_NARROW>::BLOCK_M
                                  : cd_sm90_bwd_tile<SM90_BWD_WIDE>::BLOCK_M;
}

static int64_t cd_sm90_bwd_sq_pad(const cudadent_attn_bwd_params_t *p) {
  const int bm = cd_sm90_bwd_block_m(cd_sm90_bwd_width(p));
  return ((int64_t)p->seqlen_q + bm - 1) / bm * bm;
}

/* What the kernels can run at all: fp16 / bf16, head_dim and head_dim_v (api.c: multiples of 8)
 * up to 128, each call at the width covering both; no softcap (dispatch's row lists no such
 * feature). */
extern "C" int cudadent_sm90_bwd_supports(const cudadent_attn_bwd_params_t *p) {
  const int dtype_ok = p->dtype == CUDADENT_DTYPE_FP16 || p->dtype == CUDADENT_DTYPE_BF16;
  const int dv = p->head_dim_v != 0 ? p->head_dim_v : p->head_dim; /* 0 in api.c's probes */
  const int dim_ok = p->head_dim >= 8 && p->head_dim <= SM90_BWD_WIDE && dv >= 8 &&
                     dv <= SM90_BWD_WIDE;
  return dtype_ok && dim_ok;
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

/* Whether a deterministic call takes rotated walks and turns (bwd_kernel.cuh cd_sm90_bwd_walk_m):
 * no mask, at most as many key blocks as query blocks (the turn formula's premise), and a chain's
 * key blocks resident at once with room to spare (half the SMs, one CTA per SM: a rotated turn
 * may wait for a CTA launched later, so a chain that did not fit could hang). */
static int cd_sm90_bwd_det_rotates(const cudadent_attn_bwd_params_t *p, int n_blocks, int m_blocks) {
  if (!p->deterministic || p->window_left >= 0 || p->window_right >= 0 || n_blocks > m_blocks)
    return 0;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudadent_device_sm_count(dev, &sms) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return 2 * n_blocks <= sms;
}

/* The accumulator is as wide as the compiled width the call runs at (its padded columns are
 * summed too: zeros), so the size follows that width, not head_dim. */
extern "C" size_t cudadent_sm90_bwd_workspace_size(const cudadent_attn_bwd_params_t *p) {
  const int width = cd_sm90_bwd_width(p);
  const int64_t rows = (int64_t)p->batch * p->heads_q * cd_sm90_bwd_sq_pad(p);
  const size_t sems = p->deterministic ? cd_sm90_bwd_align((size_t)(rows / cd_sm90_bwd_block_m(width)) * sizeof(int)) : 0;
  return cd_sm90_bwd_align((size_t)rows * width * sizeof(float)) +
         2 * cd_sm90_bwd_align((size_t)rows * sizeof(float)) + sems;
}

template <int D, bool kFp16, int kDet>
static cudaError_t cd_sm90_bwd_launch(const cudadent_attn_bwd_params_t *p, void *workspace,
                                      cudaStream_t stream) {
  typedef cd_sm90_bwd_tile<D> tile;
  constexpr int SMEM = cd_sm90_bwd_smem<D>::BYTES;
  constexpr int BM = tile::BLOCK_M, BN = tile::BLOCK_N;

  /* one-time, per device (the runtime keeps function attributes per device; idempotent, so a
   * race between threads only repeats it) */
  static cudadent_device_once_t attr_done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute((const void *)cd_sm90_bwd_kernel<D, kFp16, kDet>,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }

  const int64_t sq_pad = cd_sm90_bwd_sq_pad(p);
  const int64_t rows = (int64_t)p->batch * p->heads_q * sq_pad;
  const size_t acc_bytes = cd_sm90_bwd_align((size_t)rows * D * sizeof(float));
  const size_t row_bytes = cd_sm90_bwd_align((size_t)rows * sizeof(float));

  cd_sm90_bwd_io io;
  io.o = p->o.data;
  io.dout = p->dout.data;
  io.dq = p->dq.data;
  io.lse = p->lse;
  io.o_sb = p->o.stride_batch; io.o_ss = p->o.stride_seq; io.o_sh = p->o.stride_head;
  io.do_sb = p->dout.stride_batch; io.do_ss = p->dout.stride_seq; io.do_sh = p->dout.stride_head;
  io.dq_sb = p->dq.stride_batch; io.dq_ss = p->dq.stride_seq; io.dq_sh = p->dq.stride_head;
  io.dq_acc = (float *)workspace;
  io.lse2 = (float *)((char *)workspace + acc_bytes);
  io.delta = (float *)((char *)workspace + acc_bytes + row_bytes);
  io.dq_sem = kDet ? (int *)((char *)workspace + acc_bytes + 2 * row_bytes) : nullptr;
  io.batch = p->batch;
  io.heads_q = p->heads_q;
  io.seqlen_q = p->seqlen_q;
  io.sq_pad = (int)sq_pad;
  io.head_dim = p->head_dim;
  io.head_dim_v = p->head_dim_v;
  io.scale = p->softmax_scale;

  /* innermost extents: the call's real dims (<= D), so the columns past them load as zeros */
  const int d = p->head_dim, dv = p->head_dim_v;
  CUtensorMap tm_q, tm_k, tm_v, tm_do;
  if ((err = cd_sm90_tensor_map_4d(&tm_q, &p->q, kFp16, d, p->seqlen_q, p->heads_q, p->batch, BM)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_do, &p->dout, kFp16, dv, p->seqlen_q, p->heads_q, p->batch, BM)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_k, &p->k, kFp16, d, p->seqlen_k, p->heads_kv, p->batch, BN)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_v, &p->v, kFp16, dv, p->seqlen_k, p->heads_kv, p->batch, BN)) != cudaSuccess)
    return err;

  cd_sm90_bwd_args a;
  a.lse2 = io.lse2;
  a.delta = io.delta;
  a.dq_acc = io.dq_acc;
  a.dk = p->dk.data;
  a.dv = p->dv.data;
  a.dk_sb = p->dk.stride_batch; a.dk_ss = p->dk.stride_seq; a.dk_sh = p->dk.stride_head;
  a.dv_sb = p->dv.stride_batch; a.dv_ss = p->dv.stride_seq; a.dv_sh = p->dv.stride_head;
  a.scale = p->softmax_scale;
  a.scale_log2 = p->softmax_scale * 1.4426950408889634f;
  a.seqlen_q = p->seqlen_q;
  a.seqlen_k = p->seqlen_k;
  a.heads_q = p->heads_q;
  a.group = p->heads_q / p->heads_kv;
  a.m_blocks = (int)(sq_pad / BM);
  a.sq_pad = (int)sq_pad;
  a.window_left = p->window_left;
  a.window_right = p->window_right;

  constexpr int ROWS = SM90_BWD_PREPOST_THREADS / (D / 8);
  cd_sm90_bwd_pre<kFp16, D><<<(unsigned)((rows + ROWS - 1) / ROWS), SM90_BWD_PREPOST_THREADS, 0, stream>>>(io);
  const dim3 grid((unsigned)((p->seqlen_k + BN - 1) / BN), (unsigned)p->heads_kv, (unsigned)p->batch);
  cd_sm90_bwd_kernel<D, kFp16, kDet><<<grid, 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv);
  const dim3 post_grid((unsigned)a.m_blocks, (unsigned)p->heads_q, (unsigned)p->batch);
  cd_sm90_bwd_post<kFp16, D><<<post_grid, SM90_BWD_PREPOST_THREADS, 0, stream>>>(io);
  return cudaGetLastError();
}

template <int D>
static cudaError_t cd_sm90_bwd_launch_mode(const cudadent_attn_bwd_params_t *p, void *workspace,
                                           cudaStream_t stream) {
  const bool fp16 = p->dtype == CUDADENT_DTYPE_FP16;
  constexpr int BM = cd_sm90_bwd_tile<D>::BLOCK_M, BN = cd_sm90_bwd_tile<D>::BLOCK_N;
  if (p->deterministic && cd_sm90_bwd_det_rotates(p, (p->seqlen_k + BN - 1) / BN, (p->seqlen_q + BM - 1) / BM))
    return fp16 ? cd_sm90_bwd_launch<D, true, CD_SM90_BWD_DET_ROTATED>(p, workspace, stream)
                : cd_sm90_bwd_launch<D, false, CD_SM90_BWD_DET_ROTATED>(p, workspace, stream);
  if (p->deterministic)
    return fp16 ? cd_sm90_bwd_launch<D, true, CD_SM90_BWD_DET>(p, workspace, stream)
                : cd_sm90_bwd_launch<D, false, CD_SM90_BWD_DET>(p, workspace, stream);
  return fp16 ? cd_sm90_bwd_launch<D, true, CD_SM90_BWD_NONDET>(p, workspace, stream)
              : cd_sm90_bwd_launch<D, false, CD_SM90_BWD_NONDET>(p, workspace, stream);
}

extern "C" cudaError_t cudadent_sm90_bwd(const cudadent_attn_bwd_params_t *p, void *workspace,
                                         cudaStream_t stream) {
  /* api.c has normalized head_dim_v (0 -> head_dim) and supports() bounded both dims */
  if (cd_sm90_bwd_width(p) == SM90_BWD_NARROW)
    return cd_sm90_bwd_launch_mode<SM90_BWD_NARROW>(p, workspace, stream);
  return cd_sm90_bwd_launch_mode<SM90_BWD_WIDE>(p, workspace, stream);
}
