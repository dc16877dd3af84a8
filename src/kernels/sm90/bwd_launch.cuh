/*
 * bwd_launch.cuh - the host side of the Hopper backward shared by its translation units (bwd.cu:
 * the entry points and the narrow rows 64 / 64 and 128 / 128; bwd_wide.cu: the wide rows 192 / 128
 * and 256 / 256, a unit of their own so that a build compiles the two in parallel): which row a
 * call runs at, the workspace's parts, and the launch of the three kernels of a row.
 *
 * Rows (bwd_tiles.cuh): a call runs at the narrowest (D_QK, D_V) covering head_dim and head_dim_v
 * (any multiples of 8): both <= 64: 64 / 64; both <= 96 (config.cuh SM90_BWD_D96; not deterministic
 * softcap calls): 96 / 96; both <= 128: 128 / 128; head_dim <= 192 and
 * head_dim_v <= 128: 192 / 128; else 256 / 256 (the wide rows only where dispatch.h's
 * CUDADENT_SM90_BWD_WIDE is 1; bwd.cu's supports()). Each tensor map's innermost extent is the
 * call's real dim (Q, K: head_dim; V, dO: head_dim_v), so TMA loads the columns past it as zeros,
 * which add nothing to S, dP^T or the dQ / dK / dV products; the stores and the pre kernel's reads
 * of O and dO stop at the real dims (docs/kernels/sm90_bwd.md section 2.2).
 *
 * Workspace (256-byte aligned parts): the fp32 dQ accumulator [batch][heads_q][sq_pad][D_QK] (the
 * row's width, not head_dim), LSE2 and delta [batch][heads_q][sq_pad] fp32, sq_pad = seqlen_q
 * rounded up to BLOCK_M, and in the deterministic mode one int32 semaphore per (batch, head,
 * query block). Tensor maps are encoded at every call (they hold addresses) and passed as
 * __grid_constant__ parameters. api.c has validated and normalized the params. With
 * config.cuh's SM90_BWD_PDL launches the main kernel and the post with programmatic dependent
 * launch (cd_sm90_bwd_launch_pdl).
 */
#ifndef CUDADENT_SM90_BWD_LAUNCH_CUH
#define CUDADENT_SM90_BWD_LAUNCH_CUH

#include <stdlib.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include "device_info.h"
#include "dispatch.h"
#include "kernels/sm90/bwd_prepost.cuh"
#include "kernels/sm90/bwd_wide_kernel.cuh"
#include "kernels/sm90/tensor_map.cuh"
#if SM90_BWD_WIDE3
#include "kernels/sm90/bwd_wide3_kernel.cuh"
#endif
#if SM90_BWD_WIDE5
#include "kernels/sm90/bwd_wide5_kernel.cuh"
#endif
#if SM90_BWD_PERSISTENT
#include "kernels/sm90/bwd_persist.cuh"
#endif

static inline size_t cd_sm90_bwd_align(size_t x) { return (x + 255) / 256 * 256; }

/* The row a call runs at, as its D_QK (64, 96, 128, 192: the 192 / 128 row, 256) */
static inline int cd_sm90_bwd_row(const cudadent_attn_bwd_params_t *p) {
  const int d = p->head_dim, dv = p->head_dim_v != 0 ? p->head_dim_v : p->head_dim; /* 0: probes */
  if (d <= 64 && dv <= 64) return 64;
#if SM90_BWD_D96
  /* deterministic softcap calls: the 128 / 128 row's kernel (bwd.cu cd_sm90_bwd_softcap_det) */
  if (d <= 96 && dv <= 96 && !(p->deterministic && p->softcap > 0.f)) return 96;
#endif
  if (d <= 128 && dv <= 128) return 128;
  if (d <= 192 && dv <= 128) return 192;
  return 256;
}

static inline int cd_sm90_bwd_row_block_m(int row) {
  return row == 64 ? cd_sm90_bwd_tile<64>::BLOCK_M
#if SM90_BWD_D96
       : row == 96 ? cd_sm90_bwd_tile<96>::BLOCK_M
#endif
       : row == 128 ? cd_sm90_bwd_tile<128>::BLOCK_M
       : row == 192 ? cd_sm90_bwd_tile<192, 128>::BLOCK_M
                    : cd_sm90_bwd_tile<256>::BLOCK_M;
}

/* The row's BLOCK_N: keys a CTA of its tile-table kernel (E3 / E5 calls of the wide rows run their
 * own tiles; neither the dev trace nor the varlen layout takes those) */
static inline int cd_sm90_bwd_row_block_n(int row) {
  return row == 64 ? cd_sm90_bwd_tile<64>::BLOCK_N
#if SM90_BWD_D96
       : row == 96 ? cd_sm90_bwd_tile<96>::BLOCK_N
#endif
       : row == 128 ? cd_sm90_bwd_tile<128>::BLOCK_N
       : row == 192 ? cd_sm90_bwd_tile<192, 128>::BLOCK_N
                    : cd_sm90_bwd_tile<256>::BLOCK_N;
}

/* Whether a call runs on the d128 row's 80-row tile (config.cuh SM90_BWD_D128_BM80, on in the
 * library since session 21): a dense call (never varlen: bwd_varlen.cu's kernels and workspace are laid out in
 * the row's BLOCK_M) of the 128 row, non-deterministic, no mask, seqlen_q >=
 * SM90_BWD_BM80_MIN_SEQLEN. */
static inline int cd_sm90_bwd_takes_bm80(const cudadent_attn_bwd_params_t *p) {
  int min_seqlen = SM90_BWD_BM80_MIN_SEQLEN;
#ifdef CUDADENT_DEV
  /* dev builds: CUDADENT_SM90_BWD_BM80_MIN_SEQLEN=N moves the 64 / 80-row crossover (the 80-row
   * tile with its dQ split, sm90_bwd_next.md section 9) */
  const char *env = getenv("CUDADENT_SM90_BWD_BM80_MIN_SEQLEN");
  if (env != NULL) min_seqlen = atoi(env);
#endif
  return SM90_BWD_D128_BM80 && p->cu_seqlens_q == NULL && p->cu_seqlens_k == NULL &&
         cd_sm90_bwd_row(p) == 128 && !p->deterministic && !p->causal && p->window_left < 0 &&
         p->window_right < 0 && p->seqlen_q >= min_seqlen;
}

/* seqlen_q padded to the row's BLOCK_M (dense calls; varlen ones size their workspace in
 * bwd_varlen.cu); where the 80-row tile is compiled in (SM90_BWD_D128_BM80), the d128 row's dense
 * calls report the larger of the 64- and 80-row paddings (the workspace query), so that either
 * tile fits the workspace; a launch pads to its own tile (cd_sm90_bwd_launch). */
static inline int64_t cd_sm90_bwd_sq_pad(const cudadent_attn_bwd_params_t *p) {
  const int bm = cd_sm90_bwd_row_block_m(cd_sm90_bwd_row(p));
  const int64_t pad = ((int64_t)p->seqlen_q + bm - 1) / bm * bm;
  if (SM90_BWD_D128_BM80 && p->cu_seqlens_q == NULL && cd_sm90_bwd_row(p) == 128) {
    const int64_t pad80 = ((int64_t)p->seqlen_q + 79) / 80 * 80;
    return pad80 > pad ? pad80 : pad;
  }
  return pad;
}

/* Whether a deterministic call takes rotated walks and turns (bwd_parts.cuh cd_sm90_bwd_walk_m):
 * no mask, at most as many key blocks as query blocks (the turn formula's premise), and a chain's
 * key blocks resident at once with room to spare (half the SMs, one CTA per SM: a rotated turn
 * may wait for a CTA launched later, so a chain that did not fit could hang). */
static inline int cd_sm90_bwd_det_rotates(const cudadent_attn_bwd_params_t *p, int n_blocks, int m_blocks) {
  if (!p->deterministic || p->window_left >= 0 || p->window_right >= 0 || n_blocks > m_blocks)
    return 0;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudadent_device_sm_count(dev, &sms) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return 2 * n_blocks <= sms;
}

#if SM90_BWD_PDL
/* A launch with programmatic dependent launch (config.cuh SM90_BWD_PDL, on in the library;
 * CUDA runtime cudaLaunchKernelEx, attribute cudaLaunchAttributeProgrammaticStreamSerialization):
 * the kernel may start before the one before it on the stream completes, once every CTA of that
 * one has executed griddepcontrol.launch_dependents (or exited); it must wait (griddepcontrol.wait,
 * ptx_sm90.cuh cd_griddep_wait) before it touches what that kernel writes. Stream capture (CUDA >=
 * 12.3) records the launch as a programmatic edge of the graph, so graphs keep the overlap. The
 * attribute is a permission (the runtime "opportunistically" overlaps): where the overlap cannot
 * happen the kernels run in stream order, and the griddepcontrol instructions of a kernel without
 * a programmatic prerequisite return at once. sm_90 under the CUDA 13 runtime's driver (r580 or
 * later) has it; a runtime that refused the attribute outright (cudaErrorNotSupported, before
 * anything is enqueued; not seen, not tested) gets the same launch without it. */
template <typename... Params, typename... Args>
static cudaError_t cd_sm90_bwd_launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                                          cudaStream_t stream, const Args &...args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, args...);
  if (err == cudaErrorNotSupported) {
    (void)cudaGetLastError();
    cfg.attrs = NULL;
    cfg.numAttrs = 0;
    err = cudaLaunchKernelEx(&cfg, kernel, args...);
  }
  return err;
}
#endif

#if SM90_BWD_PERSISTENT
/* Whether a call of a narrow row's non-deterministic, non-softcap launch runs on persistent CTAs
 * (config.cuh SM90_BWD_PERSISTENT, a dev build's; bwd_persist.cuh): dense, no mask (knob 1; knob
 * 2 takes masks too), no softcap, seqlen_q > 0. CUDADENT_SM90_BWD_PERSISTENT=0 in the
 * environment turns it off at run time (the same build's library grid, for an A/B);
 * CUDADENT_SM90_BWD_PERSIST_MAX_QBLOCKS=N keeps only the calls whose units are short: a unit's
 * mean query blocks, ceil(seqlen_q / BLOCK_M) times the GQA group (a unit walks every query head
 * of its KV head) and half that under a causal mask (windows count the whole length), at most N
 * (session 32: the kernels win on short units and lose on long ones, sm90_bwd_next.md section
 * 11). */
static inline int cd_sm90_bwd_persist_takes(const cudadent_attn_bwd_params_t *p) {
  const char *env = getenv("CUDADENT_SM90_BWD_PERSISTENT");
  if (env != NULL && atoi(env) == 0) return 0;
  const char *max_qblocks = getenv("CUDADENT_SM90_BWD_PERSIST_MAX_QBLOCKS");
  if (max_qblocks != NULL) {
    const int bm = cd_sm90_bwd_takes_bm80(p) ? 80 : cd_sm90_bwd_row_block_m(cd_sm90_bwd_row(p));
    int64_t unit_qblocks = ((int64_t)p->seqlen_q + bm - 1) / bm * (p->heads_q / p->heads_kv);
    if (p->causal) unit_qblocks = (unit_qblocks + 1) / 2;
    if (unit_qblocks > atoi(max_qblocks)) return 0;
  }
#if SM90_BWD_PERSISTENT == 2
  /* the dynamic scheduler: masked calls too (causal, windows: units of unequal work, some with no
   * query block), fetched in the library's launch order; the unit counter is an int (units well
   * below 2^31: at most seqlen_k x heads_kv x batch) */
  return p->cu_seqlens_q == NULL && p->cu_seqlens_k == NULL && !p->deterministic && p->softcap == 0.f &&
         p->seqlen_q > 0 && (int64_t)p->seqlen_k * p->heads_kv * p->batch < ((int64_t)1 << 30);
#else
  return p->cu_seqlens_q == NULL && p->cu_seqlens_k == NULL && !p->deterministic && !p->causal &&
         p->window_left < 0 && p->window_right < 0 && p->softcap == 0.f && p->seqlen_q > 0;
#endif
}

/* The persistent main kernel of row D at tile BM for a call whose library grid is `grid` (key
 * blocks, KV heads, batch): min(units, SMs) CTAs, one a SM, each striding over the units
 * (bwd_schedule.cuh cd_sm90_bwd_persist_grid / _unit) or, at knob 2, fetching them from the
 * workspace's unit counter (cd_sm90_bwd_dyn_unit); shared memory and PDL as the library's kernel. */
template <int D, bool kFp16, int BM>
static cudaError_t cd_sm90_bwd_launch_persist(dim3 grid, const CUtensorMap &tm_q, const CUtensorMap &tm_k,
                                              const CUtensorMap &tm_v, const CUtensorMap &tm_do,
                                              const cd_sm90_bwd_args &a, int d, int dv, cudaStream_t stream) {
  constexpr int SMEM = cd_sm90_bwd_persist_smem<D, BM>::BYTES;
  static cudadent_device_once_t attr_done;
  int dev = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if ((err = cudadent_device_sm_count(dev, &sms)) != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute(cd_sm90_bwd_persist_kernel<D, kFp16, BM>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               SMEM);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }
  const int64_t units = (int64_t)grid.x * grid.y * grid.z;
  const dim3 pgrid((unsigned)cd_sm90_bwd_persist_grid(units, sms > 0 ? sms : 1));
#if SM90_BWD_PDL
  return cd_sm90_bwd_launch_pdl(cd_sm90_bwd_persist_kernel<D, kFp16, BM>, pgrid, dim3(384), SMEM, stream, tm_q, tm_k,
                                tm_v, tm_do, a, d, dv, (int)grid.x, (int)grid.y, (int)grid.z);
#else
  cd_sm90_bwd_persist_kernel<D, kFp16, BM><<<pgrid, 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv, (int)grid.x,
                                                                       (int)grid.y, (int)grid.z);
  return cudaGetLastError();
#endif
}
#endif

/* The main kernel of row (D, DV): bwd_kernel.cuh's for the narrow rows (WIDE 0; D == DV),
 * bwd_wide_kernel.cuh's for the wide ones; its dynamic shared memory. */
template <int D, int DV, int BM, int kDet> static constexpr int cd_sm90_bwd_smem_bytes() {
  if constexpr (cd_sm90_bwd_tile<D, DV>::WIDE != 0) return cd_sm90_bwd_wide_smem<D, DV>::BYTES;
  else return cd_sm90_bwd_smem<D, BM, cd_sm90_bwd_dq_bufs<D, BM, kDet>()>::BYTES;
}
template <int D, int DV, bool kFp16, int kDet, int BM, bool kSoftcap = false>
static const void *cd_sm90_bwd_main_kernel() {
  if constexpr (cd_sm90_bwd_tile<D, DV>::WIDE != 0 && kSoftcap)
    return (const void *)cd_sm90_bwd_wide_softcap_kernel<D, DV, kFp16>;
  else if constexpr (cd_sm90_bwd_tile<D, DV>::WIDE != 0)
    return (const void *)cd_sm90_bwd_wide_kernel<D, DV, kFp16, kDet>;
  else if constexpr (kSoftcap)
    return (const void *)cd_sm90_bwd_softcap_kernel<D, kFp16, kDet>;
  else
    return (const void *)cd_sm90_bwd_kernel<D, kFp16, kDet, BM>;
}

/* The three kernels of row (D, DV) in mode kDet; BM_: the row's BLOCK_M, or 80 (the d128 row's
 * 80-row tile, cd_sm90_bwd_takes_bm80); kSoftcap: the row's softcap kernel (p->softcap > 0; bwd.cu
 * cd_sm90_bwd_softcap, bwd_wide.cu for the wide rows), whose scores are in units of softcap as the
 * portable backward's: scale_log2 = softcap log2(e), softcap_pre = softmax_scale / softcap (scale
 * stays softmax_scale: dK and dQ take it as without softcap). */
template <int D, int DV, bool kFp16, int kDet, int BM_ = cd_sm90_bwd_tile<D, DV>::BLOCK_M,
          bool kSoftcap = false>
static cudaError_t cd_sm90_bwd_launch(const cudadent_attn_bwd_params_t *p, void *workspace,
                                      cudaStream_t stream) {
  typedef cd_sm90_bwd_tile<D, DV> tile;
  constexpr bool kWide = tile::WIDE != 0;
#if SM90_BWD_WIDE3
  /* config.cuh SM90_BWD_WIDE3: the 192 / 128 row's dense non-deterministic calls without softcap
   * on bwd_wide3_kernel.cuh (96 keys a CTA; the row's BLOCK_M, workspace, pre and post) */
  constexpr bool kWide3 = D == 192 && DV == 128 && kDet == CD_SM90_BWD_NONDET && !kSoftcap;
  static_assert(!kWide3 || BM_ == cd_sm90_bwd_wide3_tile::BLOCK_M, "E3: the row's BLOCK_M");
  constexpr int BM = BM_, BN_ = kWide3 ? cd_sm90_bwd_wide3_tile::BLOCK_N : tile::BLOCK_N;
#else
  constexpr int BM = BM_, BN_ = tile::BLOCK_N;
#endif
#if SM90_BWD_WIDE5
  /* config.cuh SM90_BWD_WIDE5: the 256 / 256 row's dense non-deterministic calls without softcap
   * on bwd_wide5_kernel.cuh (80 keys a CTA; the row's BLOCK_M, workspace, pre and post) */
  constexpr bool kWide5 = D == 256 && DV == 256 && kDet == CD_SM90_BWD_NONDET && !kSoftcap;
  static_assert(!kWide5 || BM_ == cd_sm90_bwd_wide5_tile::BLOCK_M, "E5: the row's BLOCK_M");
  constexpr int BN = kWide5 ? cd_sm90_bwd_wide5_tile::BLOCK_N : BN_;
#else
  constexpr int BN = BN_;
#endif
  static_assert(BM == tile::BLOCK_M || (BM == 80 && D == 128 && DV == 128 && kDet == CD_SM90_BWD_NONDET),
                "the 80-row tile: the d128 row, non-deterministic");
  static_assert(!kSoftcap || (BM == tile::BLOCK_M && (!kWide || kDet == CD_SM90_BWD_NONDET)),
                "softcap: the rows' own tiles; the wide rows' not deterministic");
#if SM90_BWD_WIDE3
  constexpr int SMEM3 = kWide3 ? cd_sm90_bwd_wide3_smem::BYTES : cd_sm90_bwd_smem_bytes<D, DV, BM, kDet>();
#else
  constexpr int SMEM3 = cd_sm90_bwd_smem_bytes<D, DV, BM, kDet>();
#endif
#if SM90_BWD_WIDE5
  constexpr int SMEM = kWide5 ? cd_sm90_bwd_wide5_smem::BYTES : SMEM3;
#else
  constexpr int SMEM = SMEM3;
#endif
  const void *kernel; /* if constexpr: the other rows' units do not instantiate the E3 / E5 kernels */
#if SM90_BWD_WIDE5
  if constexpr (kWide5) kernel = (const void *)cd_sm90_bwd_wide5_kernel<kFp16>;
  else
#endif
#if SM90_BWD_WIDE3
  if constexpr (kWide3) kernel = (const void *)cd_sm90_bwd_wide3_kernel<kFp16>;
  else
#endif
    kernel = cd_sm90_bwd_main_kernel<D, DV, kFp16, kDet, BM, kSoftcap>();

  /* one-time, per device (the runtime keeps function attributes per device; idempotent, so a
   * race between threads only repeats it) */
  static cudadent_device_once_t attr_done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }

  const int64_t sq_pad = ((int64_t)p->seqlen_q + BM - 1) / BM * BM; /* <= cd_sm90_bwd_sq_pad */
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

  /* innermost extents: the call's real dims (<= D, DV), so the columns past them load as zeros;
   * boxes as wide as the kernel's column blocks (bwd_parts.cuh cd_sm90_bwd_ops: 64 columns but at
   * d96) */
  const int d = p->head_dim, dv = p->head_dim_v;
  constexpr int KC = cd_sm90_bwd_ops<D, BM, BN>::K_COLS, QVC = cd_sm90_bwd_ops<D, BM, BN>::QV_COLS;
  CUtensorMap tm_q, tm_k, tm_v, tm_do;
  if ((err = cd_sm90_tensor_map_4d(&tm_q, &p->q, kFp16, d, p->seqlen_q, p->heads_q, p->batch, BM, QVC)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_do, &p->dout, kFp16, dv, p->seqlen_q, p->heads_q, p->batch, BM, QVC)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_k, &p->k, kFp16, d, p->seqlen_k, p->heads_kv, p->batch, BN, KC)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_v, &p->v, kFp16, dv, p->seqlen_k, p->heads_kv, p->batch, BN, QVC)) != cudaSuccess)
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
  a.scale_log2 = (kSoftcap ? p->softcap : p->softmax_scale) * 1.4426950408889634f;
  a.seqlen_q = p->seqlen_q;
  a.seqlen_k = p->seqlen_k;
  a.heads_q = p->heads_q;
  a.group = p->heads_q / p->heads_kv;
  a.m_blocks = (int)(sq_pad / BM);
  a.sq_pad = (int)sq_pad;
  a.window_left = p->window_left;
  a.window_right = p->window_right;

  constexpr int ROWS = cd_sm90_bwd_pre_cta_rows<DV>();
  cd_sm90_bwd_pre<kFp16, D, DV><<<(unsigned)((rows + ROWS - 1) / ROWS), SM90_BWD_PREPOST_THREADS, 0, stream>>>(io);
  const dim3 grid((unsigned)((p->seqlen_k + BN - 1) / BN), (unsigned)p->heads_kv, (unsigned)p->batch);
#if SM90_BWD_PDL
  /* the pre plainly (the call's first: after whatever came before on the stream), the main kernel
   * and the post with PDL (their waits: bwd_kernel.cuh, bwd_wide_kernel.cuh, bwd_prepost.cuh) */
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
#if SM90_BWD_WIDE5
  if constexpr (kWide5)
    err = cd_sm90_bwd_launch_pdl(cd_sm90_bwd_wide5_kernel<kFp16>, grid, dim3(cd_sm90_bwd_wide5_tile::THREADS), SMEM,
                                 stream, tm_q, tm_k, tm_v, tm_do, a, d, dv);
  else
#endif
#if SM90_BWD_WIDE3
  if constexpr (kWide3)
    err = cd_sm90_bwd_launch_pdl(cd_sm90_bwd_wide3_kernel<kFp16>, grid, dim3(cd_sm90_bwd_wide3_tile::THREADS), SMEM,
                                 stream, tm_q, tm_k, tm_v, tm_do, a, d, dv);
  else
#endif
  if constexpr (kWide && kSoftcap)
    err = cd_sm90_bwd_launch_pdl(cd_sm90_bwd_wide_softcap_kernel<D, DV, kFp16>, grid, dim3(384), SMEM, stream,
                                 tm_q, tm_k, tm_v, tm_do, a, d, dv, p->softmax_scale / p->softcap);
  else if constexpr (kWide)
    err = cd_sm90_bwd_launch_pdl(cd_sm90_bwd_wide_kernel<D, DV, kFp16, kDet>, grid, dim3(384), SMEM, stream,
                                 tm_q, tm_k, tm_v, tm_do, a, d, dv);
  else if constexpr (kSoftcap)
    err = cd_sm90_bwd_launch_pdl(cd_sm90_bwd_softcap_kernel<D, kFp16, kDet>, grid, dim3(384), SMEM, stream,
                                 tm_q, tm_k, tm_v, tm_do, a, d, dv, p->softmax_scale / p->softcap);
  else
#if SM90_BWD_PERSISTENT
  if constexpr (kDet == CD_SM90_BWD_NONDET) { /* config.cuh SM90_BWD_PERSISTENT (dev) */
    if (cd_sm90_bwd_persist_takes(p))
      err = cd_sm90_bwd_launch_persist<D, kFp16, BM>(grid, tm_q, tm_k, tm_v, tm_do, a, d, dv, stream);
    else
      err = cd_sm90_bwd_launch_pdl(cd_sm90_bwd_kernel<D, kFp16, kDet, BM>, grid, dim3(384), SMEM, stream,
                                   tm_q, tm_k, tm_v, tm_do, a, d, dv);
  } else
#endif
    err = cd_sm90_bwd_launch_pdl(cd_sm90_bwd_kernel<D, kFp16, kDet, BM>, grid, dim3(384), SMEM, stream,
                                 tm_q, tm_k, tm_v, tm_do, a, d, dv);
  if (err != cudaSuccess) return err;
  const dim3 post_grid((unsigned)a.m_blocks, (unsigned)p->heads_q, (unsigned)p->batch);
  return cd_sm90_bwd_launch_pdl(cd_sm90_bwd_post<kFp16, D, DV, BM>, post_grid, dim3(SM90_BWD_PREPOST_THREADS), 0,
                                stream, io);
#else
#if SM90_BWD_WIDE5
  if constexpr (kWide5)
    cd_sm90_bwd_wide5_kernel<kFp16><<<grid, cd_sm90_bwd_wide5_tile::THREADS, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do,
                                                                                           a, d, dv);
  else
#endif
#if SM90_BWD_WIDE3
  if constexpr (kWide3)
    cd_sm90_bwd_wide3_kernel<kFp16><<<grid, cd_sm90_bwd_wide3_tile::THREADS, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do,
                                                                                           a, d, dv);
  else
#endif
  if constexpr (kWide && kSoftcap)
    cd_sm90_bwd_wide_softcap_kernel<D, DV, kFp16><<<grid, 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv,
                                                                             p->softmax_scale / p->softcap);
  else if constexpr (kWide)
    cd_sm90_bwd_wide_kernel<D, DV, kFp16, kDet><<<grid, 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv);
  else if constexpr (kSoftcap)
    cd_sm90_bwd_softcap_kernel<D, kFp16, kDet><<<grid, 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv,
                                                                          p->softmax_scale / p->softcap);
  else
#if SM90_BWD_PERSISTENT
  if constexpr (kDet == CD_SM90_BWD_NONDET) { /* config.cuh SM90_BWD_PERSISTENT (dev) */
    if (cd_sm90_bwd_persist_takes(p)) {
      const cudaError_t perr = cd_sm90_bwd_launch_persist<D, kFp16, BM>(grid, tm_q, tm_k, tm_v, tm_do, a, d, dv, stream);
      if (perr != cudaSuccess) return perr;
    } else {
      cd_sm90_bwd_kernel<D, kFp16, kDet, BM><<<grid, 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv);
    }
  } else
#endif
    cd_sm90_bwd_kernel<D, kFp16, kDet, BM><<<grid, 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv);
  const dim3 post_grid((unsigned)a.m_blocks, (unsigned)p->heads_q, (unsigned)p->batch);
  cd_sm90_bwd_post<kFp16, D, DV, BM><<<post_grid, SM90_BWD_PREPOST_THREADS, 0, stream>>>(io);
  return cudaGetLastError();
#endif
}

/* Row (D, DV) in the call's mode and dtype. */
template <int D, int DV>
static cudaError_t cd_sm90_bwd_launch_mode(const cudadent_attn_bwd_params_t *p, void *workspace,
                                           cudaStream_t stream) {
  const bool fp16 = p->dtype == CUDADENT_DTYPE_FP16;
  constexpr int BM = cd_sm90_bwd_tile<D, DV>::BLOCK_M, BN = cd_sm90_bwd_tile<D, DV>::BLOCK_N;
  if (p->deterministic && cd_sm90_bwd_det_rotates(p, (p->seqlen_k + BN - 1) / BN, (p->seqlen_q + BM - 1) / BM))
    return fp16 ? cd_sm90_bwd_launch<D, DV, true, CD_SM90_BWD_DET_ROTATED>(p, workspace, stream)
                : cd_sm90_bwd_launch<D, DV, false, CD_SM90_BWD_DET_ROTATED>(p, workspace, stream);
  if (p->deterministic)
    return fp16 ? cd_sm90_bwd_launch<D, DV, true, CD_SM90_BWD_DET>(p, workspace, stream)
                : cd_sm90_bwd_launch<D, DV, false, CD_SM90_BWD_DET>(p, workspace, stream);
  return fp16 ? cd_sm90_bwd_launch<D, DV, true, CD_SM90_BWD_NONDET>(p, workspace, stream)
              : cd_sm90_bwd_launch<D, DV, false, CD_SM90_BWD_NONDET>(p, workspace, stream);
}

/* The wide rows (bwd_wide.cu): a call whose cd_sm90_bwd_row is 192 or 256 (softcap ones too). */
cudaError_t cd_sm90_bwd_wide(const cudadent_attn_bwd_params_t *p, void *workspace, cudaStream_t stream);
#if defined(CUDADENT_DEV) && SM90_BWD_TRACE
/* bwd_wide.cu's copy of the trace state (bwd_trace.cuh: one a translation unit), set by bwd.cu's
 * cudadent_dev_sm90_bwd_trace_set */
cudaError_t cd_sm90_bwd_wide_trace_state_set(const cd_sm90_bwd_trace_state *st);
#endif

/* Varlen calls (bwd_varlen.cu; the narrow rows, not deterministic: bwd.cu's supports()): the
 * workspace they need and their launch. */
size_t cd_sm90_bwd_varlen_workspace(const cudadent_attn_bwd_params_t *p);
cudaError_t cd_sm90_bwd_varlen_run(const cudadent_attn_bwd_params_t *p, void *workspace, cudaStream_t stream);

#endif /* CUDADENT_SM90_BWD_LAUNCH_CUH */
