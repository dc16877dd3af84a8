/*
 * bwd_varlen.cu - the Hopper backward on ragged batches (cudadent.h "features of layout v2";
 * docs/kernels/sm90_bwd_varlen.md), a translation unit of its own beside bwd.cu: the workspace
 * size and the launcher of the narrow rows (64 / 64, 128 / 128, and 96 / 96, config.cuh
 * SM90_BWD_D96; head_dim and head_dim_v up to 128)
 * and, where dispatch.h's CUDADENT_SM90_BWD_VARLEN_WIDE is 1, of the wide rows (192 / 128, 256 /
 * 256); fp16 / bf16, not deterministic (bwd.cu's supports()). Four kernels on the call's stream:
 *   cd_sm90_bwd_varlen_plan   one CTA: the unit list (bwd_varlen_plan.cuh);
 *   cd_sm90_bwd_varlen_pre    delta, LSE2, the zeroed dQ accumulator (padded layout);
 *   cd_sm90_bwd_varlen_kernel the dense main kernel's body over the list (bwd_kernel.cuh; softcap
 *                             calls: cd_sm90_bwd_varlen_softcap_kernel; the wide rows'
 *                             cd_sm90_bwd_wide_varlen_kernel / _softcap_kernel of
 *                             bwd_wide_kernel.cuh);
 *   cd_sm90_bwd_varlen_post   dQ of each sequence's rows.
 * api.c has validated and normalized the params, launched the device check where asked and the
 * gap fill (dQ of tokens in no sequence, dK / dV of keys in no sequence's used keys: 0) before
 * this; nothing is checked again. The grids come from host-known bounds only (graph safe); the
 * list's length is read from the workspace by the main kernel.
 *
 * Workspace (256-byte aligned parts): the fp32 dQ accumulator [heads_q][R][D_QK] (tiles of BM rows
 * in fragment order, as dense), LSE2 and delta [heads_q][R] fp32, R = (total_q + batch BM) rounded
 * up to BM (the padded layout: bwd_varlen_plan.cuh), then the list: int count (16 bytes),
 * int4 seqs[cap], int2 blocks[cap], cap = min(batch ceil(max_seqlen_k / BN), ceil(total_k / BN)
 * + batch) (BN: the row's keys a CTA, 128 narrow, 64 wide). With BM <= 128 the accumulator is at
 * most the portable kernel's (total_q + 128 batch rows of the row's width):
 * docs/kernels/sm90_bwd_varlen.md.
 */
#include <cuda_runtime.h>
#include "dispatch.h"
#include "kernels/sm90/bwd_launch.cuh"
#include "kernels/sm90/bwd_varlen_plan.cuh"

namespace {

/* The list's capacity (bwd_varlen_plan.cuh): units of BN keys. */
int64_t varlen_cap(const cudadent_attn_bwd_params_t *p, int bn) {
  const int64_t by_max = (int64_t)p->batch * ((p->seqlen_k + bn - 1) / bn);
  const int64_t by_total = ((int64_t)p->total_k + bn - 1) / bn + p->batch;
  return by_max < by_total ? by_max : by_total;
}

/* R: the padded rows of a head (a multiple of BM). */
int64_t varlen_rows(const cudadent_attn_bwd_params_t *p, int bm) {
  return ((int64_t)p->total_q + (int64_t)p->batch * bm + bm - 1) / bm * bm;
}

struct varlen_parts {
  size_t acc, rows, list, total;
};

varlen_parts varlen_layout(const cudadent_attn_bwd_params_t *p, int d, int bm, int bn) {
  varlen_parts w;
  const int64_t r = (int64_t)p->heads_q * varlen_rows(p, bm);
  w.acc = cd_sm90_bwd_align((size_t)r * d * sizeof(float));
  w.rows = cd_sm90_bwd_align((size_t)r * sizeof(float));
  w.list = 16 + (size_t)varlen_cap(p, bn) * (sizeof(int4) + sizeof(int2));
  w.total = w.acc + 2 * w.rows + w.list;
  return w;
}

typedef void (*varlen_kernel_t)(const CUtensorMap, const CUtensorMap, const CUtensorMap, const CUtensorMap,
                                const cd_sm90_bwd_args, const int, const int, const cd_sm90_bwd_varlen_units);
typedef void (*varlen_softcap_kernel_t)(const CUtensorMap, const CUtensorMap, const CUtensorMap,
                                        const CUtensorMap, const cd_sm90_bwd_args, const int, const int,
                                        const cd_sm90_bwd_varlen_units, const float);

/* Row (D, DV)'s varlen main kernels: the narrow body (bwd_kernel.cuh) or the wide one
 * (bwd_wide_kernel.cuh), and their dynamic shared memory. */
template <int D, int DV, bool kFp16> struct varlen_kernels {
  static constexpr bool WIDE = cd_sm90_bwd_tile<D, DV>::WIDE != 0;
  static constexpr int smem() {
    if constexpr (WIDE) return cd_sm90_bwd_wide_smem<D, DV>::BYTES;
    else return cd_sm90_bwd_smem<D>::BYTES;
  }
  static constexpr int SMEM = smem();
  static varlen_kernel_t plain() {
    if constexpr (WIDE) return cd_sm90_bwd_wide_varlen_kernel<D, DV, kFp16>;
    else return cd_sm90_bwd_varlen_kernel<D, kFp16>;
  }
  static varlen_softcap_kernel_t softcap() {
    if constexpr (WIDE) return cd_sm90_bwd_wide_varlen_softcap_kernel<D, DV, kFp16>;
    else return cd_sm90_bwd_varlen_softcap_kernel<D, kFp16>;
  }
};

/* kSoftcap (p->softcap > 0; the 128 / 128 row, the 64 / 64 row where dispatch.h's
 * CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP is 1, the wide rows where CUDADENT_SM90_BWD_VARLEN_WIDE is):
 * the varlen softcap kernel, whose scores are in units of softcap as the dense softcap kernel's
 * (bwd_launch.cuh cd_sm90_bwd_launch): scale_log2 = softcap log2(e), softcap_pre = softmax_scale /
 * softcap. */
template <int D, int DV, bool kFp16, bool kSoftcap = false>
cudaError_t varlen_launch(const cudadent_attn_bwd_params_t *p, void *workspace, cudaStream_t stream) {
  typedef cd_sm90_bwd_tile<D, DV> tile;
  typedef varlen_kernels<D, DV, kFp16> K;
  static_assert(!K::WIDE || CUDADENT_SM90_BWD_VARLEN_WIDE, "the wide rows behind dispatch.h's gate");
  static_assert(K::WIDE || D == DV, "the narrow rows: D_QK = D_V");
  static_assert(!kSoftcap || D != 64 || CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP,
                "softcap at the 64 / 64 row: behind dispatch.h's gate");
  constexpr int BM = tile::BLOCK_M, BN = tile::BLOCK_N;
  constexpr int SMEM = K::SMEM;
  const varlen_kernel_t kernel = K::plain();
  const void *kernel_used = (const void *)kernel; /* the one launched (its attribute below) */
  if constexpr (kSoftcap) kernel_used = (const void *)K::softcap();

  static cudadent_device_once_t attr_done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute(kernel_used, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }

  const int64_t R = varlen_rows(p, BM), cap = varlen_cap(p, BN);
  if (R > 0x7fffffff || cap * p->heads_kv > 0x7fffffff ||
      (int64_t)p->heads_q * R / (SM90_BWD_PREPOST_THREADS / cd_sm90_bwd_pre_tpr<DV>()) >= 0x7fffffff)
    return cudaErrorInvalidConfiguration;
  const varlen_parts w = varlen_layout(p, D, BM, BN);
  uint8_t *ws = static_cast<uint8_t *>(workspace);

  cd_sm90_bwd_io io;
  io.o = p->o.data;
  io.dout = p->dout.data;
  io.dq = p->dq.data;
  io.lse = p->lse;
  io.o_sb = io.do_sb = io.dq_sb = 0; /* packed: (total, heads, head_dim) */
  io.o_ss = p->o.stride_seq; io.o_sh = p->o.stride_head;
  io.do_ss = p->dout.stride_seq; io.do_sh = p->dout.stride_head;
  io.dq_ss = p->dq.stride_seq; io.dq_sh = p->dq.stride_head;
  io.dq_acc = reinterpret_cast<float *>(ws);
  io.lse2 = reinterpret_cast<float *>(ws + w.acc);
  io.delta = reinterpret_cast<float *>(ws + w.acc + w.rows);
  io.dq_sem = nullptr;
  io.batch = 1;
  io.heads_q = p->heads_q;
  io.seqlen_q = p->seqlen_q; /* unused: the sequences' */
  io.sq_pad = (int)R;
  io.head_dim = p->head_dim;
  io.head_dim_v = p->head_dim_v;
  io.scale = p->softmax_scale;

  uint8_t *list = ws + w.acc + 2 * w.rows;
  cd_sm90_bwd_varlen_args va;
  va.cu_q = p->cu_seqlens_q;
  va.cu_k = p->cu_seqlens_k;
  va.used = p->seqused_k;
  va.batch = p->batch;
  va.total_q = p->total_q;
  va.total_k = p->total_k;
  va.max_q = p->seqlen_q;
  va.max_k = p->seqlen_k;
  va.count = reinterpret_cast<int *>(list);
  va.seqs = reinterpret_cast<int4 *>(list + 16);
  va.blocks = reinterpret_cast<int2 *>(list + 16 + (size_t)cap * sizeof(int4));
  va.cap = (int)cap;
  va.heads_kv = p->heads_kv;
  va.dk = static_cast<uint16_t *>(p->dk.data);
  va.dv = static_cast<uint16_t *>(p->dv.data);
  va.dk_ss = p->dk.stride_seq; va.dk_sh = p->dk.stride_head;
  va.dv_ss = p->dv.stride_seq; va.dv_sh = p->dv.stride_head;
  va.head_dim = p->head_dim;
  va.head_dim_v = p->head_dim_v;

  /* maps over the packed tensors: (head_dim, total, heads, 1); stride_batch is ignored (0) */
  cudadent_tensor_t q = p->q, k = p->k, v = p->v, dout = p->dout;
  q.stride_batch = k.stride_batch = v.stride_batch = dout.stride_batch = 0;
  const int d = p->head_dim, dv = p->head_dim_v;
  CUtensorMap tm_q, tm_k, tm_v, tm_do;
  constexpr int KC = cd_sm90_bwd_ops<D, BM, BN>::K_COLS, QVC = cd_sm90_bwd_ops<D, BM, BN>::QV_COLS; /* boxes */
  if ((err = cd_sm90_tensor_map_4d(&tm_q, &q, kFp16, d, p->total_q, p->heads_q, 1, BM, QVC)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_do, &dout, kFp16, dv, p->total_q, p->heads_q, 1, BM, QVC)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_k, &k, kFp16, d, p->total_k, p->heads_kv, 1, BN, KC)) != cudaSuccess ||
      (err = cd_sm90_tensor_map_4d(&tm_v, &v, kFp16, dv, p->total_k, p->heads_kv, 1, BN, QVC)) != cudaSuccess)
    return err;

  cd_sm90_bwd_args a;
  a.lse2 = io.lse2;
  a.delta = io.delta;
  a.dq_acc = io.dq_acc;
  a.dk = p->dk.data;
  a.dv = p->dv.data;
  a.dk_sb = a.dv_sb = 0;
  a.dk_ss = p->dk.stride_seq; a.dk_sh = p->dk.stride_head;
  a.dv_ss = p->dv.stride_seq; a.dv_sh = p->dv.stride_head;
  a.scale = p->softmax_scale;
  a.scale_log2 = (kSoftcap ? p->softcap : p->softmax_scale) * 1.4426950408889634f;
  const float softcap_pre = kSoftcap ? p->softmax_scale / p->softcap : 0.f;
  a.seqlen_q = p->seqlen_q; /* replaced per unit by the sequence's */
  a.seqlen_k = p->seqlen_k;
  a.heads_q = p->heads_q;
  a.group = p->heads_q / p->heads_kv;
  a.m_blocks = (int)(R / BM);
  a.sq_pad = (int)R;
  a.window_left = p->window_left;
  a.window_right = p->window_right;

  cd_sm90_bwd_varlen_units vu;
  vu.count = va.count;
  vu.seqs = va.seqs;
  vu.blocks = va.blocks;
  vu.heads_kv = p->heads_kv;

  cd_sm90_bwd_varlen_plan<BM, BN><<<1, SM90_VARLEN_PLAN_THREADS, 0, stream>>>(
      va, p->window_left, p->window_right);
  constexpr int ROWS = SM90_BWD_PREPOST_THREADS / cd_sm90_bwd_pre_tpr<DV>();
  const int64_t rows = (int64_t)p->heads_q * R;
#if SM90_BWD_PDL
  /* the plan plainly (the call's first), the pre, the main kernel and the post with PDL
   * (bwd_launch.cuh cd_sm90_bwd_launch_pdl; their waits: bwd_varlen_plan.cuh, bwd_kernel.cuh) */
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if ((err = cd_sm90_bwd_launch_pdl(cd_sm90_bwd_varlen_pre<kFp16, D, DV>, dim3((unsigned)((rows + ROWS - 1) / ROWS)),
                                    dim3(SM90_BWD_PREPOST_THREADS), 0, stream, io, va)) != cudaSuccess)
    return err;
  if constexpr (kSoftcap)
    err = cd_sm90_bwd_launch_pdl(K::softcap(), dim3((unsigned)(cap * p->heads_kv)),
                                 dim3(384), SMEM, stream, tm_q, tm_k, tm_v, tm_do, a, d, dv, vu, softcap_pre);
  else
    err = cd_sm90_bwd_launch_pdl(kernel, dim3((unsigned)(cap * p->heads_kv)), dim3(384), SMEM, stream, tm_q, tm_k,
                                 tm_v, tm_do, a, d, dv, vu);
  if (err != cudaSuccess) return err;
  return cd_sm90_bwd_launch_pdl(cd_sm90_bwd_varlen_post<kFp16, D, DV>, dim3((unsigned)(R / BM), (unsigned)p->heads_q),
                                dim3(SM90_BWD_PREPOST_THREADS), 0, stream, io, va);
#else
  cd_sm90_bwd_varlen_pre<kFp16, D, DV><<<(unsigned)((rows + ROWS - 1) / ROWS), SM90_BWD_PREPOST_THREADS, 0, stream>>>(io, va);
  if ((err = cudaGetLastError()) != cudaSuccess) return err;
  if constexpr (kSoftcap) {
    const varlen_softcap_kernel_t softcap_kernel = K::softcap();
    softcap_kernel<<<(unsigned)(cap * p->heads_kv), 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv, vu,
                                                                          softcap_pre);
  }
  else
    kernel<<<(unsigned)(cap * p->heads_kv), 384, SMEM, stream>>>(tm_q, tm_k, tm_v, tm_do, a, d, dv, vu);
  const dim3 post_grid((unsigned)(R / BM), (unsigned)p->heads_q);
  cd_sm90_bwd_varlen_post<kFp16, D, DV><<<post_grid, SM90_BWD_PREPOST_THREADS, 0, stream>>>(io, va);
  return cudaGetLastError();
#endif
}

}  // namespace

size_t cd_sm90_bwd_varlen_workspace(const cudadent_attn_bwd_params_t *p) {
  const int row = cd_sm90_bwd_row(p); /* the accumulator is D_QK = row wide */
  const int bn = cd_sm90_bwd_row_block_n(row);
  return varlen_layout(p, row, cd_sm90_bwd_row_block_m(row), bn).total;
}

cudaError_t cd_sm90_bwd_varlen_run(const cudadent_attn_bwd_params_t *p, void *workspace,
                                   cudaStream_t stream) {
  const bool fp16 = p->dtype == CUDADENT_DTYPE_FP16, softcap = p->softcap > 0.f;
  const int row = cd_sm90_bwd_row(p);
#if CUDADENT_SM90_BWD_VARLEN_WIDE
  /* bwd.cu's supports(): softcap ones only where CUDADENT_SM90_BWD_WIDE_SOFTCAP is 1 */
  if (row == 192)
    return softcap ? (fp16 ? varlen_launch<192, 128, true, true>(p, workspace, stream)
                           : varlen_launch<192, 128, false, true>(p, workspace, stream))
                   : (fp16 ? varlen_launch<192, 128, true>(p, workspace, stream)
                           : varlen_launch<192, 128, false>(p, workspace, stream));
  if (row == 256)
    return softcap ? (fp16 ? varlen_launch<256, 256, true, true>(p, workspace, stream)
                           : varlen_launch<256, 256, false, true>(p, workspace, stream))
                   : (fp16 ? varlen_launch<256, 256, true>(p, workspace, stream)
                           : varlen_launch<256, 256, false>(p, workspace, stream));
#endif
#if CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP
  if (softcap && row == 64)
    return fp16 ? varlen_launch<64, 64, true, true>(p, workspace, stream)
                : varlen_launch<64, 64, false, true>(p, workspace, stream);
#endif
#if SM90_BWD_D96
  if (row == 96) /* config.cuh SM90_BWD_D96 */
    return softcap ? (fp16 ? varlen_launch<96, 96, true, true>(p, workspace, stream)
                           : varlen_launch<96, 96, false, true>(p, workspace, stream))
                   : (fp16 ? varlen_launch<96, 96, true>(p, workspace, stream)
                           : varlen_launch<96, 96, false>(p, workspace, stream));
#endif
  if (softcap) /* bwd.cu's supports(): the 128 / 128 row (and the rows above) */
    return fp16 ? varlen_launch<128, 128, true, true>(p, workspace, stream)
                : varlen_launch<128, 128, false, true>(p, workspace, stream);
  if (row == 64)
    return fp16 ? varlen_launch<64, 64, true>(p, workspace, stream) : varlen_launch<64, 64, false>(p, workspace, stream);
  return fp16 ? varlen_launch<128, 128, true>(p, workspace, stream) : varlen_launch<128, 128, false>(p, workspace, stream);
}
