/*
 * fwd_varlen.cu - the Hopper forward on ragged batches (cudadent.h "features of layout v2";
 * docs/kernels/sm90_fwd.md §2.6), in its own translation unit beside fwd.cu: the launcher of a
 * row (the same row pick as dense calls, fwd_launch.cuh), which launches the plan pre-pass
 * (fwd_varlen_plan.cuh) and then the kernel (fwd_varlen_kernel.cuh) on the call's stream.
 * Instantiated: {fp16, bf16} x the tile table's eight rows besides the d96 ones (those take
 * dense calls only: config.cuh SM90_FWD_D96), and the softcap kernels of the d128 and d256 LSE
 * rows (varlen_run_softcap; 4 more). api.c has validated and normalized the params, launched the
 * device check where asked and the gap fill (tokens in no sequence) before this; nothing is
 * checked again here. Nothing is allocated or synchronized: the
 * list lives in the caller's workspace (cd_sm90_fwd_varlen_workspace bytes).
 */
#include <cuda_runtime.h>
#include "dispatch.h"
#include "kernels/sm90/fwd_launch.cuh"
#include "kernels/sm90/fwd_varlen_kernel.cuh"
#include "kernels/sm90/fwd_varlen_plan.cuh"

namespace {

/* The list's capacity (fwd_varlen_plan.cuh): units of at least SM90_VARLEN_UNIT_ROWS rows. */
int64_t varlen_cap(const cudadent_attn_fwd_params_t *p) {
  const int64_t R = SM90_VARLEN_UNIT_ROWS;
  const int64_t by_max = (int64_t)p->batch * ((p->seqlen_q + R - 1) / R);
  const int64_t by_total = (p->total_q + R - 1) / R + p->batch;
  return by_max < by_total ? by_max : by_total;
}

/* workspace offsets: count, seqs (16-byte aligned), m_blocks */
constexpr size_t SEQS_OFF = 16;

/* The varlen kernel of row Tile, or (kSoftcap: p->softcap > 0, the d128 LSE row) its softcap
 * kernel, with the list's pre-pass before it. */
template <class Tile, bool kFp16, bool kSoftcap>
cudaError_t varlen_launch(const cudadent_attn_fwd_params_t *p, void *workspace, cudaStream_t stream) {
  typedef Tile tile;
  typedef typename cd_sm90_fwd_args_of<kSoftcap>::type args_t;
  constexpr int SMEM = cd_sm90_fwd_smem<Tile>::BYTES;
  constexpr int THREADS = 128 * (1 + tile::CONSUMER_WGS);
  constexpr int BM = tile::BLOCK_M, BN = tile::BLOCK_N;
  void (*kernel)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const CUtensorMap,
                 const args_t, const cd_sm90_fwd_varlen_args);
  if constexpr (kSoftcap) kernel = cd_sm90_fwd_varlen_softcap_kernel<Tile, kFp16>;
  else kernel = cd_sm90_fwd_varlen_kernel<Tile, kFp16>;

  static cudadent_device_once_t attr_done;
  int dev = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute((const void *)kernel,
                               cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }
  if ((err = cudadent_device_sm_count(dev, &sms)) != cudaSuccess) return err;

  /* maps over the packed tensors: (head_dim, total, heads, 1); stride_batch is ignored (0) */
  cudadent_tensor_t q = p->q, k = p->k, v = p->v, o = p->o;
  q.stride_batch = k.stride_batch = v.stride_batch = o.stride_batch = 0;
  CUtensorMap tm_q, tm_k, tm_v, tm_o;
  const int d = p->head_dim, dv = p->head_dim_v;
  constexpr int SC = cd_sm90_fwd_smem<Tile>::SLAB_COLS; /* the boxes' columns: a slab */
  if ((err = cd_sm90_tensor_map_4d(&tm_q, &q, kFp16, d, p->total_q, p->heads_q, 1, BM, SC)) !=
      cudaSuccess)
    return err;
  if ((err = cd_sm90_tensor_map_4d(&tm_k, &k, kFp16, d, p->total_k, p->heads_kv, 1, BN, SC)) !=
      cudaSuccess)
    return err;
  if ((err = cd_sm90_tensor_map_4d(&tm_v, &v, kFp16, dv, p->total_k, p->heads_kv, 1, BN, SC)) !=
      cudaSuccess)
    return err;
  if ((err = cd_sm90_tensor_map_4d(&tm_o, &o, kFp16, dv, p->total_q, p->heads_q, 1, 16, SC)) !=
      cudaSuccess)
    return err;

  const int64_t cap = varlen_cap(p);
  if (cap * p->heads_q > 0x7fffffff) return cudaErrorInvalidConfiguration; /* as dense calls */
  args_t a;
  a.lse = p->lse;
  a.scale_log2 = p->softmax_scale * 1.4426950408889634f;
  if constexpr (kSoftcap) { /* as the dense launch (fwd_launch.cuh): scores in units of softcap */
    a.scale_log2 = p->softcap * 1.4426950408889634f;
    a.softcap_pre = p->softmax_scale / p->softcap;
  }
  a.seqlen_q = p->seqlen_q; /* replaced per tile by the sequence's */
  a.seqlen_k = p->seqlen_k;
  a.by_group = cd_sm90_fwd_divisor_make(p->heads_q / p->heads_kv);
  a.window_left = p->window_left;
  a.window_right = p->window_right;
  a.num_tiles = 0; /* from the workspace */
  a.sched = cd_sm90_fwd_tile_order_make(SM90_SCHED_SNAKE, 1, p->heads_q, p->heads_q);

  cd_sm90_fwd_varlen_args va;
  uint8_t *ws = static_cast<uint8_t *>(workspace);
  va.cu_q = p->cu_seqlens_q;
  va.cu_k = p->cu_seqlens_k;
  va.used = p->seqused_k;
  va.total_q = p->total_q;
  va.total_k = p->total_k;
  va.max_q = p->seqlen_q;
  va.max_k = p->seqlen_k;
  va.count = reinterpret_cast<int *>(ws);
  va.seqs = reinterpret_cast<int4 *>(ws + SEQS_OFF);
  va.m_blocks = reinterpret_cast<int *>(ws + SEQS_OFF + (size_t)cap * sizeof(int4));
  va.cap = (int)cap;
  va.mb_max = (p->seqlen_q + BM - 1) / BM;
  const int64_t fb = (int64_t)p->batch * va.mb_max, fb_limit = 0x7fffffff / p->heads_q;
  va.fallback_units = (int)(fb < fb_limit ? fb : fb_limit); /* docs §2.6: the limit */
  va.o = static_cast<uint16_t *>(p->o.data);
  va.o_ss = p->o.stride_seq;
  va.o_sh = p->o.stride_head;
  va.dv = dv;

  cd_sm90_fwd_varlen_plan<BM, BN><<<1, SM90_VARLEN_PLAN_THREADS, 0, stream>>>(
      va, p->batch, p->window_left, p->window_right);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  /* a bound of the tiles (the list's capacity, or the fallback order's) */
  const int64_t bound = (cap > va.fallback_units ? cap : va.fallback_units) * p->heads_q;
  int grid = (int)(bound < sms ? bound : sms);
  if (SM90_GRID_LIMIT > 0 && grid > SM90_GRID_LIMIT) grid = SM90_GRID_LIMIT;
  kernel<<<grid, THREADS, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_o, a, va);
  return cudaGetLastError();
}

template <class Tile, bool kFp16> struct varlen_launcher {
  static cudaError_t run(const cudadent_attn_fwd_params_t *p, void *workspace, cudaStream_t stream) {
    return varlen_launch<Tile, kFp16, false>(p, workspace, stream);
  }
};

/* A varlen softcap call (fwd.cu's supports(): a head dim over 64): the softcap kernel of the LSE
 * row of width 128 or 256, the narrowest that covers the call's head dims, as dense softcap calls
 * (fwd.cu cd_sm90_fwd_run_softcap; calls without LSE take them too). */
template <bool kFp16>
cudaError_t varlen_run_softcap(const cudadent_attn_fwd_params_t *p, void *workspace, cudaStream_t stream) {
  if (p->head_dim > 256 || p->head_dim_v > 256) return cudaErrorNotSupported;
  if (p->head_dim <= 128 && p->head_dim_v <= 128)
    return varlen_launch<cd_sm90_fwd_tile<128, 128, 128, true>, kFp16, true>(p, workspace, stream);
  return varlen_launch<cd_sm90_fwd_tile<256, 256, 128, true>, kFp16, true>(p, workspace, stream);
}

}  // namespace

size_t cd_sm90_fwd_varlen_workspace(const cudadent_attn_fwd_params_t *p) {
  return SEQS_OFF + (size_t)varlen_cap(p) * (sizeof(int4) + sizeof(int));
}

cudaError_t cd_sm90_fwd_varlen_run(const cudadent_attn_fwd_params_t *p, void *workspace,
                                   cudaStream_t stream) {
  if (p->softcap > 0.f) {
    switch (p->dtype) {
      case CUDADENT_DTYPE_FP16: return varlen_run_softcap<true>(p, workspace, stream);
      case CUDADENT_DTYPE_BF16: return varlen_run_softcap<false>(p, workspace, stream);
      default: return cudaErrorNotSupported;
    }
  }
  return cd_sm90_fwd_run<varlen_launcher>(p, workspace, stream);
}
