/*
 * bwd.cu - attention backward on the portable tensor-core path (mma.sync m16n8k16, sm_80+),
 * FlashAttention-2 style: dQ, dK, dV of O = softmax(scale * Q K^T) V, given dO, O and the
 * forward's LSE. head_dim and head_dim_v: any multiples of 8 in [8, 256]; softcap (flash-attn's).
 *
 * Kernels are templates over the dtype, the width D in {64, 128, 192, 256} (the smallest >=
 * max(head_dim, head_dim_v); 96 too where dispatch.h's CUDADENT_SM80_W96 is 1: every tile row has
 * D elements, columns past the real dims are zero-filled on load and never stored;
 * bwd_parts.cuh's header), PAD (the column bounds are
 * applied; false only for W 64 / 128 with head_dim = head_dim_v = W, the code of before) and
 * SOFTCAP (main kernel only). Instantiations per dtype: main 10 (64 and 128: exact, padded,
 * padded + softcap; 192 and 256: padded, padded + softcap), pre and dq 6 each; W 96 (gated) adds
 * main 3, pre and dq 2 each, as W 128; W 256's 64 x 64 tile (dispatch.h CUDADENT_SM80_BWD_W256_M64,
 * run where the device's opt-in shared memory holds its 209 KiB; bwd_main.cuh) adds main 2 and
 * dq 1 (cd_sm80_bwd_main_large, cd_sm80_bwd_dq_large; trap stubs on sm_80 / sm_86 / sm_89).
 *
 * Three kernels per call, on one stream (1 and 3 in bwd_prepost.cuh; the tile table, layout,
 * warp products and loaders in bwd_parts.cuh; kernel 2 and the launch templates in bwd_main.cuh;
 * the host side here; the varlen instantiations in bwd_varlen.cu):
 *   1. cd_sm80_bwd_pre   delta[b,h,i] = sum_d dO[b,i,h,d] * O[b,i,h,d] (fp32), and zeroes the
 *                        fp32 dQ accumulator rows (every split slice, padded rows too).
 *   2. cd_sm80_bwd_main  one CTA per (key tile, KV head, batch); see below.
 *   3. cd_sm80_bwd_dq    dQ = softmax_scale * (sum of the dQ accumulator slices, in slice order),
 *                        converted to the input dtype; one CTA per (query tile, head, batch).
 *
 * cd_sm80_bwd_main. The CTA keeps K and V of one key tile [BLOCK_N, D] in shared memory and dK, dV
 * in registers, and walks every (query head of its KV group, query tile that sees the key tile):
 *     S  = Q K^T                          [BLOCK_M, BLOCK_N]  (warps SDP_WARPS_M x rest)
 *     P  = exp2(S * scale * log2e - LSE * log2e)   (masked entries 0; LSE = -inf rows: P = 0)
 *          softcap: t = tanh(S * scale / softcap), P = exp2(t * softcap * log2e - LSE * log2e)
 *     dP = dO V^T                         [BLOCK_M, BLOCK_N]  (same warp layout as S)
 *     dS = P * (dP - delta)               softcap: times 1 - t^2 (t recomputed, never stored)
 *     dV += P^T dO                        [BLOCK_N, D]        (warps DKV_WARPS_N x rest)
 *     dK += dS^T Q                        [BLOCK_N, D]        (same layout as dV)
 *     dQacc += dS K                       [BLOCK_M, D]        (warps DQ_WARPS_M x rest), added
 *                                         to the fp32 workspace with red.global.add, in mma
 *                                         fragment order (cd_sm80_bwd_dq_frag): 16-byte
 *                                         vector reds
 * The workspace: dQ accumulator [splits][batch][heads_q][sq_pad][D] fp32 (D the width, not
 * head_dim: the kernels write every column, zeros past head_dim), then delta
 * [batch][heads_q][sq_pad] fp32; each part 256-byte aligned (cudadent_sm80_bwd_workspace_size).
 * GQA/MQA: the query heads sharing a KV head are looped over inside the CTA, so dK/dV are summed
 * in registers: no extra pass over global memory, and dK/dV are deterministic in every mode.
 * Deterministic mode: the grid's x dimension is a fixed number of "splits"; split s handles key
 * tiles s, s + splits, ... one after the other and adds its dQ into its own fp32 slice. Inside a
 * slice each element is added by one thread, in program order, so every sum has a fixed order;
 * kernel 3 adds the slices in slice order. Non-deterministic mode: one key tile per CTA, one
 * shared slice, atomic order left to the hardware.
 * All 8 warps do all the work (no warp specialization); every matrix product is a warp tile of
 * m16n8k16 mma.sync fed by ldmatrix from shared memory.
 *
 * Shared memory (16-bit elements; every tile row-major, its 16-byte chunks XOR-swizzled by
 * row % 8 so that ldmatrix and the fragment stores are free of bank conflicts; sizes per width in
 * the tile table, 136.5 to 162 KiB: one CTA per SM, sm_80 / sm_90 class devices only):
 *     sQ  [2][BLOCK_M][D]   double-buffered query tile
 *     sdO [2][BLOCK_M][D]   double-buffered dO tile
 *     sK  [BLOCK_N][D], sV [BLOCK_N][D]
 *     sP  [BLOCK_M][BLOCK_N], sdS [BLOCK_M][BLOCK_N]   (P and dS in the input dtype)
 *   The epilogue stages dK in sQ and dV in sdO before coalesced 16-byte stores.
 *
 * Varlen (cudadent.h, "features of layout v2"; docs/kernels/sm80_bwd.md "Varlen"): a template
 * bool VARLEN of the main and dQ kernels' bodies, and kernels of their own (cd_sm80_bwd_pre_varlen,
 * cd_sm80_bwd_main_varlen, cd_sm80_bwd_dq_varlen, the arrays in a second argument), so the dense
 * kernels keep their names and argument (their SASS: docs/kernels/sm80_bwd.md). batch is the
 * number of sequences and the grids are those of max_seqlen_q / max_seqlen_k (host-known bounds:
 * graph safe). Every CTA reads its sequence's clamped ranges as the forward does
 * (cd_sm80_bwd_varlen_seq: queries [q0, q0 + sq), keys [k0, k0 + sk) with sk the used keys) and
 * runs the dense code with those lengths (masks bottom-right aligned per sequence) on the
 * sequence's tokens; a CTA past its sequence's keys (main) or queries (dQ) does nothing. The LSE
 * and delta are [heads_q][total_q]; the dQ accumulator has one block of rows per head, sequence b's
 * tiles from row acc0 = (q0 + b BLOCK_M) rounded down to BLOCK_M (total_q + batch BLOCK_M rows a
 * head: tiles of two sequences never share rows). The pre kernel runs over (head, token) and
 * zeroes the whole accumulator. Tokens in no sequence (dQ) and keys in no sequence's used keys
 * (dK, dV) are zeroed by api.c's gap fill (kernels/varlen.cu) launched before these kernels.
 *
 * Pipeline per query tile: wait for its Q/dO (cp.async) + barrier; issue the cp.async of the next
 * tile into the other buffer; S and dP products; P, dS to shared memory; barrier; dV, dK and dQ
 * products (dQ first where the table says DQ_FIRST), dQ reductions to global. Two barriers per
 * query tile.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "device_info.h"
#include "dispatch.h"
#include "kernels/sm80/bwd_main.cuh"

/* ---- host side ---------------------------------------------------------------------------------- */

/* The width a call runs: the smallest W in {64, 128, 192, 256} >= max(head_dim, head_dim_v), or
 * 96 where dispatch.h's CUDADENT_SM80_W96 is 1 and that max is in (64, 96]; 0 where either is not
 * a multiple of 8 in [8, 256]. head_dim_v 0 means head_dim (the head-dim queries ask before
 * api.c normalizes it). */
static int cd_sm80_bwd_width(const cudadent_attn_bwd_params_t *p) {
  const int d = p->head_dim, dv = p->head_dim_v ? p->head_dim_v : p->head_dim;
  if (d < 8 || d > 256 || d % 8 != 0 || dv < 8 || dv > 256 || dv % 8 != 0) return 0;
  const int m = d > dv ? d : dv;
#if CUDADENT_SM80_W96
  if (m > 64 && m <= 96) return 96;
#endif
  return (m + 63) / 64 * 64;
}

/* A tile-table or shape constant of width w (64, (96,) 128, 192 or 256). */
#if CUDADENT_SM80_W96
#define CD_SM80_BWD_IF_96(w, T, member) (w) == 96 ? T<96>::member :
#else
#define CD_SM80_BWD_IF_96(w, T, member)
#endif
#define CD_SM80_BWD_OF_WIDTH(w, T, member)                                                         \
  (CD_SM80_BWD_IF_96(w, T, member)(w) == 64 ? T<64>::member : (w) == 128 ? T<128>::member       \
                                            : (w) == 192 ? T<192>::member : T<256>::member)

/* BLOCK_M of width w's tile; where the width has a large tile too (CUDADENT_SM80_BWD_W256_M64), the
 * larger BLOCK_M (a multiple of the other: bwd_parts.cuh), so that the dQ accumulator's padded rows
 * (cd_sm80_bwd_sq_pad) suit either tile: the workspace does not depend on the device's choice. */
#if CUDADENT_SM80_BWD_W256_M64
static int cd_sm80_bwd_block_m(int w) {
  return w == 256 ? cd_sm80_bwd_tile<256, true>::BLOCK_M : CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_tile, BLOCK_M);
}
#else
static int cd_sm80_bwd_block_m(int w) { return CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_tile, BLOCK_M); }
#endif
static int cd_sm80_bwd_block_n(int w) { return CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_tile, BLOCK_N); }
static int cd_sm80_bwd_ctas_per_sm(int w) { return CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_tile, CTAS_PER_SM); }
static int cd_sm80_bwd_smem(int w) { return CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_shape, SMEM); }

/* Number of dQ slices: 1, or in deterministic mode enough splits of the key tiles to fill the
 * device's multiprocessors with (batch * heads_kv * splits) CTAs, CTAS_PER_SM per SM. */
static int cd_sm80_bwd_splits(const cudadent_attn_bwd_params_t *p) {
  if (!p->deterministic) return 1;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudadent_device_sm_count(dev, &sms) != cudaSuccess ||
      sms <= 0) {
    (void)cudaGetLastError(); /* no device: size for a large one; the launch re-checks */
    sms = 132;
  }
  const int w = cd_sm80_bwd_width(p);
  sms *= cd_sm80_bwd_ctas_per_sm(w);
  const int bn = cd_sm80_bwd_block_n(w);
  const int n_blocks = (p->seqlen_k + bn - 1) / bn;
  const long long ctas = (long long)p->batch * p->heads_kv;
  long long s = ctas >= sms ? 1 : sms / ctas;
  if (s > n_blocks) s = n_blocks;
  return s < 1 ? 1 : (int)s;
}

/* The dQ accumulator's rows per (batch, head) block: seqlen_q rounded up to BLOCK_M; varlen (one
 * block per head, the sequences' tiles from their acc0, bwd_parts.cuh cd_sm80_bwd_varlen_acc0):
 * total_q + batch BLOCK_M, rounded up likewise (below 2^31: total_q <= 2^30, batch <= 65535). */
static int64_t cd_sm80_bwd_sq_pad(const cudadent_attn_bwd_params_t *p) {
  const int bm = cd_sm80_bwd_block_m(cd_sm80_bwd_width(p));
  const int64_t rows = p->cu_seqlens_q != NULL ? (int64_t)p->total_q + (int64_t)p->batch * bm
                                               : (int64_t)p->seqlen_q;
  return (rows + bm - 1) / bm * bm;
}

/* (batch, head) blocks of the accumulator: batch * heads_q; varlen heads_q */
static int64_t cd_sm80_bwd_blocks(const cudadent_attn_bwd_params_t *p) {
  return p->cu_seqlens_q != NULL ? (int64_t)p->heads_q : (int64_t)p->batch * p->heads_q;
}

static size_t cd_sm80_bwd_align(size_t x) { return (x + 255) / 256 * 256; }

/* Bytes of one dQ accumulator slice: every (batch, query head, padded query row) has W fp32
 * columns, W the width (the kernels write all of them; columns past head_dim hold zeros). */
static size_t cd_sm80_bwd_acc_bytes(const cudadent_attn_bwd_params_t *p) {
  const int64_t rows = cd_sm80_bwd_blocks(p) * cd_sm80_bwd_sq_pad(p);
  return cd_sm80_bwd_align((size_t)rows * cd_sm80_bwd_width(p) * sizeof(float));
}

/* delta's floats: [batch][heads_q][sq_pad]; varlen [heads_q][total_q], the LSE's layout */
static int64_t cd_sm80_bwd_delta_floats(const cudadent_attn_bwd_params_t *p) {
  return p->cu_seqlens_q != NULL ? (int64_t)p->heads_q * p->total_q
                                 : (int64_t)p->batch * p->heads_q * cd_sm80_bwd_sq_pad(p);
}

/* dtype, head_dim and head_dim_v (multiples of 8 in [8, 256]); and, where a device is present,
 * enough shared memory per block for the width's tile (sm_80 and sm_90 have it; sm_86 / sm_89,
 * at 99 KiB, have it for no width: no backward there yet). */
extern "C" int cudadent_sm80_bwd_supports(const cudadent_attn_bwd_params_t *p) {
  if (p->dtype != CUDADENT_DTYPE_BF16 && p->dtype != CUDADENT_DTYPE_FP16) return 0;
  const int w = cd_sm80_bwd_width(p);
  if (w == 0) return 0;
  const int need = cd_sm80_bwd_smem(w);
  int optin = 0;
  if (cudadent_current_smem_optin(&optin) != cudaSuccess) {
    (void)cudaGetLastError(); /* no device: the call fails later, at the device check */
    return 1;
  }
  return optin >= need;
}

/* splits x the dQ accumulator slice (above), then delta (cd_sm80_bwd_delta_floats). Varlen: from
 * total_q and batch (the accumulator) and max_seqlen_k (the deterministic splits). */
extern "C" size_t cudadent_sm80_bwd_workspace_size(const cudadent_attn_bwd_params_t *p) {
  return (size_t)cd_sm80_bwd_splits(p) * cd_sm80_bwd_acc_bytes(p) +
         cd_sm80_bwd_align((size_t)cd_sm80_bwd_delta_floats(p) * sizeof(float));
}

extern "C" cudaError_t cudadent_sm80_bwd(const cudadent_attn_bwd_params_t *p, void *workspace,
                                         cudaStream_t stream) {
  const int w = cd_sm80_bwd_width(p);
  cd_sm80_bwd_args_t a;
  a.q = p->q.data; a.k = p->k.data; a.v = p->v.data; a.o = p->o.data; a.dout = p->dout.data;
  a.dq = p->dq.data; a.dk = p->dk.data; a.dv = p->dv.data;
  a.q_sb = p->q.stride_batch; a.q_ss = p->q.stride_seq; a.q_sh = p->q.stride_head;
  a.k_sb = p->k.stride_batch; a.k_ss = p->k.stride_seq; a.k_sh = p->k.stride_head;
  a.v_sb = p->v.stride_batch; a.v_ss = p->v.stride_seq; a.v_sh = p->v.stride_head;
  a.o_sb = p->o.stride_batch; a.o_ss = p->o.stride_seq; a.o_sh = p->o.stride_head;
  a.do_sb = p->dout.stride_batch; a.do_ss = p->dout.stride_seq; a.do_sh = p->dout.stride_head;
  a.dq_sb = p->dq.stride_batch; a.dq_ss = p->dq.stride_seq; a.dq_sh = p->dq.stride_head;
  a.dk_sb = p->dk.stride_batch; a.dk_ss = p->dk.stride_seq; a.dk_sh = p->dk.stride_head;
  a.dv_sb = p->dv.stride_batch; a.dv_ss = p->dv.stride_seq; a.dv_sh = p->dv.stride_head;
  a.lse = p->lse;
  a.batch = p->batch; a.sq = p->seqlen_q; a.sk = p->seqlen_k;
  a.hq = p->heads_q; a.hkv = p->heads_kv; a.group = p->heads_q / p->heads_kv;
  a.sq_pad = (int)cd_sm80_bwd_sq_pad(p);
  a.n_blocks = (p->seqlen_k + cd_sm80_bwd_block_n(w) - 1) / cd_sm80_bwd_block_n(w);
  a.scale = p->softmax_scale;
  a.scale_log2 = p->softmax_scale * SM80_BWD_LOG2E;
  a.wl = p->window_left;
  a.wr = p->window_right;
  a.det = p->deterministic != 0;
  a.splits = cd_sm80_bwd_splits(p);
  const size_t acc_bytes = cd_sm80_bwd_acc_bytes(p);
  a.slice = (int64_t)(acc_bytes / sizeof(float));
  a.dq_acc = (float *)workspace;
  a.delta = (float *)((char *)workspace + (size_t)a.splits * acc_bytes);
  a.dim_qk = p->head_dim;
  a.dim_v = p->head_dim_v ? p->head_dim_v : p->head_dim;
  const bool softcap = p->softcap > 0.f;
  a.cap_in = softcap ? p->softmax_scale / p->softcap : 0.f;
  a.cap_out = softcap ? p->softcap * SM80_BWD_LOG2E : 0.f;
  const bool exact = a.dim_qk == w && a.dim_v == w;

  const bool bf16 = p->dtype == CUDADENT_DTYPE_BF16;
  if (p->cu_seqlens_q != NULL) {
    /* varlen: batch = sequences, sq / sk = max_seqlen_q / max_seqlen_k, sq_pad = the accumulator's
     * rows per head; stride_batch is 0 after api.c (a (1, total, heads, dim) tensor), never read */
    cd_sm80_bwd_varlen_args_t v;
    v.cu_seqlens_q = p->cu_seqlens_q;
    v.cu_seqlens_k = p->cu_seqlens_k;
    v.seqused_k = p->seqused_k;
    v.total_q = p->total_q;
    v.total_k = p->total_k;
    return cd_sm80_bwd_varlen_launch(a, v, bf16, w, exact, softcap, stream);
  }
  const cd_sm80_bwd_varlen_args_t none = {NULL, NULL, NULL, 0, 0};
  if (bf16) return cd_sm80_bwd_launch_dtype<__nv_bfloat16, false>(a, none, w, exact, softcap, stream);
  return cd_sm80_bwd_launch_dtype<__half, false>(a, none, w, exact, softcap, stream);
}
