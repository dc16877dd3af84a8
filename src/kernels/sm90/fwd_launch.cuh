/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * fwd_launch.cuh - host side of the sm90 forward: TMA tensor maps, the launch of one tile-table
 * row (cd_sm90_fwd_launch) and the one function that picks a call's row and launches it
 * (cd_sm90_fwd_run). Included by fwd.cu (the library's entry points; dev/ reaches it through
 * kernels/dev.h) and fwd_varlen.cu (the varlen launcher: the same row pick and tensor maps). A
 * forced tile order is config.cuh's dev-only SM90_FWD_FORCED_ORDER.
 *
 * Tensor maps (tensor_map.cuh) are encoded on the host at every call (they hold the tensor's
 * address) and passed by value as __grid_constant__ parameters. Each of Q, K, V, O is 4-d
 * (head_dim or head_dim_v: the call's real one, seqlen, heads, batch) with its real strides, a
 * box of one slab's columns (fwd_tiles.cuh SLAB_COLS: 64, one 128-byte swizzle span; the d96 rows
 * 32, one 64-byte span) by BLOCK_M (Q) / BLOCK_N (K, V) / 16 (O: one warp's rows) rows. Nothing
 * is allocated, copied or synchronized; the return value is cudaGetLastError() after the launch.
 */
#ifndef CUDADENT_SM90_FWD_LAUNCH_CUH
#define CUDADENT_SM90_FWD_LAUNCH_CUH

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include "cudadent.h"
#include "device_info.h"
#include "kernels/sm90/fwd_kernel.cuh"
#include "kernels/sm90/tensor_map.cuh"
#include "kernels/sm90/tile_order_choice.cuh"

#include "kernels/sm90/config.cuh"

#ifdef CUDADENT_DEV
/* config.cuh SM90_FWD_FORCED_ORDER in a dev build: set by cudadent_dev_sm90_fwd (fwd.cu) */
static int cd_sm90_fwd_dev_order = -1;
#endif

/* Launches tile-table row Tile (fwd_tiles.cuh) on the params; kSoftcap: its softcap kernel
 * (p->softcap > 0; cd_sm90_fwd_run_softcap). */
template <class Tile, bool kFp16, bool kSoftcap = false>
static cudaError_t cd_sm90_fwd_launch(const cudadent_attn_fwd_params_t *p, cudaStream_t stream) {
  typedef Tile tile;
  typedef typename cd_sm90_fwd_args_of<kSoftcap>::type args_t;
  constexpr int SMEM = cd_sm90_fwd_smem<Tile>::BYTES;
  constexpr int THREADS = 128 * (1 + tile::CONSUMER_WGS);
  void (*kernel)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const CUtensorMap,
                 const args_t, const cd_sm90_fwd_tile_tail) =
      cd_sm90_fwd_kernel<Tile, kFp16, kSoftcap>;

  /* one-time, per device: the dynamic shared-memory limit; the SM count (device_info.h) */
  static cudadent_device_once_t attr_done;
  int dev = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute((const void *)kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               SMEM);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }
  if ((err = cudadent_device_sm_count(dev, &sms)) != cudaSuccess) return err;

  /* innermost extents: the call's real head dims (up to the row's): the columns past them load
   * as zeros and are not stored (§2.5) */
  CUtensorMap tm_q, tm_k, tm_v, tm_o;
  const int d = p->head_dim, dv = p->head_dim_v;
  constexpr int SC = cd_sm90_fwd_smem<Tile>::SLAB_COLS;
  if ((err = cd_sm90_tensor_map_4d(&tm_q, &p->q, kFp16, d, p->seqlen_q, p->heads_q, p->batch,
                             tile::BLOCK_M, SC)) != cudaSuccess)
    return err;
  if ((err = cd_sm90_tensor_map_4d(&tm_k, &p->k, kFp16, d, p->seqlen_k, p->heads_kv, p->batch,
                             tile::BLOCK_N, SC)) != cudaSuccess)
    return err;
  if ((err = cd_sm90_tensor_map_4d(&tm_v, &p->v, kFp16, dv, p->seqlen_k, p->heads_kv, p->batch,
                             tile::BLOCK_N, SC)) != cudaSuccess)
    return err;
  if ((err = cd_sm90_tensor_map_4d(&tm_o, &p->o, kFp16, dv, p->seqlen_q, p->heads_q, p->batch, 16,
                                   SC)) != cudaSuccess)
    return err;

  args_t a;
  a.lse = p->lse;
  a.scale_log2 = p->softmax_scale * 1.4426950408889634f;
  if constexpr (kSoftcap) { /* scores in units of softcap: t = tanh(q.k softmax_scale / softcap) */
    a.scale_log2 = p->softcap * 1.4426950408889634f;
    a.softcap_pre = p->softmax_scale / p->softcap;
  }
  a.seqlen_q = p->seqlen_q;
  a.seqlen_k = p->seqlen_k;
  a.by_group = cd_sm90_fwd_divisor_make(p->heads_q / p->heads_kv);
  a.window_left = p->window_left;
  a.window_right = p->window_right;
  const int m_blocks = (p->seqlen_q + tile::BLOCK_M - 1) / tile::BLOCK_M;
  const int64_t tiles = (int64_t)m_blocks * p->heads_q * p->batch;
  if (tiles > 0x7fffffff) return cudaErrorInvalidConfiguration;
  a.num_tiles = (int)tiles;
  /* under a right window (causal) work grows with the query block: heaviest first, snaking;
   * heads in turn, alone or in groups, where that keeps K/V in L2; the last rounds' tiles dealt
   * out by the host where that evens the CTAs' work (tile_order_choice.cuh) */
  int grid = (int)(tiles < sms ? tiles : sms);
  if (SM90_GRID_LIMIT > 0 && grid > SM90_GRID_LIMIT) grid = SM90_GRID_LIMIT;
  const int batch_heads = p->heads_q * p->batch;
  cd_sm90_fwd_tile_tail tail;
  cd_sm90_fwd_order_choice oc = cd_sm90_fwd_order_choose<tile::BLOCK_M, tile::BLOCK_N, tile::TAIL>(
      m_blocks, batch_heads, grid, p->seqlen_q, p->seqlen_k, p->window_left, p->window_right,
      (long long)p->seqlen_k * (tile::HEAD_DIM + tile::HEAD_DIM_V) * 2 * p->heads_kv / p->heads_q,
      &tail);
  const int forced_order = SM90_FWD_FORCED_ORDER; /* dev builds only; else -1 */
  if (forced_order >= 0 && forced_order != oc.order) { /* any order, no tail */
    cd_sm90_fwd_tail_none(&tail, a.num_tiles, grid);
    oc.order = forced_order;
    oc.group_heads = 1; /* HEAD_GROUPS: the largest divisor up to a third of the heads */
    for (int g = batch_heads / 3; g > 1; --g)
      if (batch_heads % g == 0) {
        oc.group_heads = g;
        break;
      }
  }
  /* rows compiled without HEAD_GROUPS (reached only where an experiment widens the row's use) */
  if (!tile::HEAD_GROUPS && oc.order == SM90_SCHED_HEAD_GROUPS) {
    oc.order = SM90_SCHED_SNAKE;
    cd_sm90_fwd_tail_none(&tail, a.num_tiles, grid);
  }
  a.sched =
      cd_sm90_fwd_tile_order_make(oc.order, m_blocks, p->heads_q, batch_heads, oc.group_heads);
  kernel<<<grid, THREADS, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_o, a, tail);
  return cudaGetLastError();
}

/* The dense launcher of a row, as the row pick below takes it (fwd_varlen.cu has the varlen one). */
template <class Tile, bool kFp16> struct cd_sm90_fwd_dense_launcher {
  static cudaError_t run(const cudadent_attn_fwd_params_t *p, void *workspace, cudaStream_t s) {
    (void)workspace;
    return cd_sm90_fwd_launch<Tile, kFp16>(p, s);
  }
};

/* The row a call takes, and its launch by Launch<row, kFp16>::run: the one place that selects
 * rows (dense and varlen calls alike; varlen calls see max_seqlen_q as seqlen_q). A call takes the
 * narrowest row whose widths cover its head dims (head_dim <= D, head_dim_v <= DV; §2.5): 64,
 * 128, 192 / 128 (Q/K up to 192 with V up to 128), else 256; where kD96Rows (the dense launcher
 * in a build with config.cuh's SM90_FWD_D96) calls up to 96 take the d96 rows of BLOCK_M 128
 * (SM90_FWD_D96 1) or 192 (2) before the 128 ones. d64 and d96 (at 2): 192 query rows a tile,
 * except short query sequences (config.cuh SM90_D64_MASKED_M192_MIN_SEQLEN, SM90_D96_MASKED_ /
 * _UNMASKED_M192_MIN_SEQLEN), where the row padding, the diagonal tile's waste and the few tiles
 * favour 128 (§2.1, §2.5). Calls without LSE take the row's tensor-core row-sum twin (fwd_tiles.cuh
 * ROWSUM) where it has one; the 192 / 128 and 256 rows run them with fp32 row sums (the
 * epilogue stores no LSE where lse is NULL). cudaErrorNotSupported for a head dim or dtype
 * without rows (reachable only where a caller forces this path). */
template <template <class, bool> class Launch, bool kFp16, bool kD96Rows>
static cudaError_t cd_sm90_fwd_run_dtype(const cudadent_attn_fwd_params_t *p, void *ws,
                                         cudaStream_t s) {
  const bool lse = p->lse != nullptr;
  const bool masked = p->window_left >= 0 || p->window_right >= 0;
  const int d = p->head_dim, dv = p->head_dim_v;
  if (d > 256 || dv > 256) return cudaErrorNotSupported;
  if (d <= 64 && dv <= 64) {
    if (masked && p->seqlen_q < SM90_D64_MASKED_M192_MIN_SEQLEN)
      return lse ? Launch<cd_sm90_fwd_tile<64, 64, 128, true>, kFp16>::run(p, ws, s)
                 : Launch<cd_sm90_fwd_tile<64, 64, 128, false>, kFp16>::run(p, ws, s);
    return lse ? Launch<cd_sm90_fwd_tile<64, 64, 192, true>, kFp16>::run(p, ws, s)
               : Launch<cd_sm90_fwd_tile<64, 64, 192, false>, kFp16>::run(p, ws, s);
  }
  if constexpr (kD96Rows && SM90_FWD_D96 != 0) {
    constexpr int BM = SM90_FWD_D96 == 2 ? 192 : 128;
    if (d <= 96 && dv <= 96) {
      if constexpr (BM == 192) /* config.cuh: the 128-row d96 tile for short calls */
        if (p->seqlen_q < (masked ? SM90_D96_MASKED_M192_MIN_SEQLEN : SM90_D96_UNMASKED_M192_MIN_SEQLEN))
          return lse ? Launch<cd_sm90_fwd_tile<96, 96, 128, true>, kFp16>::run(p, ws, s)
                     : Launch<cd_sm90_fwd_tile<96, 96, 128, false>, kFp16>::run(p, ws, s);
      return lse ? Launch<cd_sm90_fwd_tile<96, 96, BM, true>, kFp16>::run(p, ws, s)
                 : Launch<cd_sm90_fwd_tile<96, 96, BM, false>, kFp16>::run(p, ws, s);
    }
  }
  if (d <= 128 && dv <= 128)
    return lse ? Launch<cd_sm90_fwd_tile<128, 128, 128, true>, kFp16>::run(p, ws, s)
               : Launch<cd_sm90_fwd_tile<128, 128, 128, false>, kFp16>::run(p, ws, s);
  if (d <= 192 && dv <= 128)
    return Launch<cd_sm90_fwd_tile<192, 128, 128, true>, kFp16>::run(p, ws, s);
  return Launch<cd_sm90_fwd_tile<256, 256, 128, true>, kFp16>::run(p, ws, s);
}

/* kD96Rows: whether the launcher may take the d96 rows (the dense one; varlen calls keep the d128
 * rows) */
template <template <class, bool> class Launch, bool kD96Rows = false>
static cudaError_t cd_sm90_fwd_run(const cudadent_attn_fwd_params_t *p, void *ws, cudaStream_t s) {
  switch (p->dtype) {
    case CUDADENT_DTYPE_FP16: return cd_sm90_fwd_run_dtype<Launch, true, kD96Rows>(p, ws, s);
    case CUDADENT_DTYPE_BF16: return cd_sm90_fwd_run_dtype<Launch, false, kD96Rows>(p, ws, s);
    default: return cudaErrorNotSupported;
  }
}

#endif /* CUDADENT_SM90_FWD_LAUNCH_CUH */
