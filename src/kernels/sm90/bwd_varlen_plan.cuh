/*
 * bwd_varlen_plan.cuh - the device passes of a varlen (ragged batch) call of the Hopper backward
 * (docs/kernels/sm90_bwd_varlen.md), the counterpart of the forward's
 * fwd_varlen_plan.cuh:
 *   cd_sm90_bwd_varlen_plan     one CTA: the unit list of the main kernel (below);
 *   cd_sm90_bwd_varlen_pre      delta, LSE2 and the zeroed dQ accumulator in the padded layout;
 *   cd_sm90_bwd_varlen_post     dQ of each sequence's rows from the padded accumulator.
 * The main kernel is the dense one's body with kVarlen (bwd_kernel.cuh cd_sm90_bwd_body).
 *
 * Sequences: cd_sm90_bwd_varlen_seq clamps sequence b's ranges by the rule of the forward
 * (varlen_plan_common.cuh cd_sm90_varlen_seq, cudadent.h "features of layout v2"): {q0, k0,
 * len_q, len_k}, len_k after seqused_k. The cost bins and the heaviest-first scan of the plan are
 * varlen_plan_common.cuh's too.
 *
 * Units. A unit is a (sequence, key block of BLOCK_N keys); a CTA of the main kernel takes a unit
 * and a KV head in the dense kernel's LPT order (bwd_kernel.cuh: SM90_BWD_LPT_GROUP KV heads at
 * a time, the list's units heaviest first across them). The plan, as the
 * forward's: each thread counts its sequences' units into a shared histogram by cost (the query
 * blocks that see the key block, cd_mask_q_blocks with the sequence's lengths: bottom-right
 * aligned), a block scan from the heaviest bin gives each bin's first slot, and each thread
 * writes its units to their bins' next slots. Units that no query sees (cost 0) come last: their
 * CTAs write dK = dV = 0 (no load, no product). Key blocks at or past len_k are not units.
 * The list's capacity (bwd_varlen.cu) is min(batch * ceil(max_seqlen_k / BLOCK_N),
 * ceil(total_k / BLOCK_N) + batch): every valid array fits. Only invalid arrays whose key ranges
 * overlap (cu_seqlens_k decreasing) can have more units: the ones past the capacity are not
 * listed and this pass writes their dK and dV rows as 0 itself (their keys are in another
 * listed sequence too, whose CTA, later on the stream, overwrites them: unspecified but finite,
 * as the contract says of such arrays). count = the listed units.
 *
 * The padded layout (FA3's): sequence b's query rows start at row pad0 = floor((q0 + b BM) / BM)
 * BM of each head's R = ceil((total_q + batch BM) / BM) BM rows, so its query blocks are whole
 * BM-row tiles no other sequence shares (floor((x + len + BM) / BM) BM >= floor(x / BM) BM +
 * ceil(len / BM) BM), and pad0 is nondecreasing in b for in-order arrays. A padded row's
 * sequence is the last b with pad0(b) <= row (a binary search over cu_seqlens_q: zero-length
 * sequences share their pad0 with the next one, which then wins); rows past that sequence's
 * len_q belong to no token: LSE2 = +inf, delta = 0 there (P = 0, dS = 0 for those rows).
 */
#ifndef CUDADENT_SM90_BWD_VARLEN_PLAN_CUH
#define CUDADENT_SM90_BWD_VARLEN_PLAN_CUH

#include <stdint.h>
#include "kernels/common/mask_rule.cuh"
#include "kernels/sm90/bwd_prepost.cuh"
#include "kernels/sm90/varlen_plan_common.cuh"

/* What the varlen passes and the main kernel read besides cd_sm90_bwd_args (bwd_varlen.cu). */
struct cd_sm90_bwd_varlen_args {
  const int32_t *cu_q, *cu_k, *used; /* used (seqused_k) may be NULL */
  int batch, total_q, total_k, max_q, max_k;
  int *count;     /* workspace: units in the list */
  int4 *seqs;     /* workspace [cap]: {q0, k0, len_q, len_k} of each unit's sequence */
  int2 *blocks;   /* workspace [cap]: {key block, the sequence's first accumulator tile} */
  int cap;        /* the list's capacity */
  int heads_kv;
  /* the plan's zero fill of units past the capacity (invalid arrays only) */
  uint16_t *dk, *dv;
  int64_t dk_ss, dk_sh, dv_ss, dv_sh;
  int head_dim, head_dim_v;
};

/* Sequence b's clamped ranges {q0, k0, len_q, len_k} (varlen_plan_common.cuh, the forward's
 * rule). */
__device__ __forceinline__ int4 cd_sm90_bwd_varlen_seq(const cd_sm90_bwd_varlen_args &va, int b) {
  return cd_sm90_varlen_seq(va.cu_q, va.cu_k, va.used, va.total_q, va.total_k, va.max_q, va.max_k,
                            b);
}

/* Sequence b's first padded row (a multiple of BM). */
template <int BM> __device__ __forceinline__ int64_t cd_sm90_bwd_varlen_pad0(int q0, int b) {
  return ((int64_t)q0 + (int64_t)b * BM) / BM * BM;
}

/* The sequence of padded row r: the last b with pad0(b) <= r (0 if none); its {q0, .., len_q}
 * in *s and pad0 in *pad0. */
template <int BM>
__device__ __forceinline__ int cd_sm90_bwd_varlen_seq_of_row(const cd_sm90_bwd_varlen_args &va,
                                                             int64_t r, int4 *s, int64_t *pad0) {
  int lo = 0, hi = va.batch - 1; /* invariant: the answer is in [lo, hi] */
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    const int q0 = min(max(va.cu_q[mid], 0), va.total_q);
    if (cd_sm90_bwd_varlen_pad0<BM>(q0, mid) <= r) lo = mid;
    else hi = mid - 1;
  }
  *s = cd_sm90_bwd_varlen_seq(va, lo);
  *pad0 = cd_sm90_bwd_varlen_pad0<BM>(s->x, lo);
  return lo;
}

/* The plan: one CTA of SM90_VARLEN_PLAN_THREADS (the header comment). */
template <int BM, int BN>
__global__ void __launch_bounds__(SM90_VARLEN_PLAN_THREADS)
    cd_sm90_bwd_varlen_plan(const cd_sm90_bwd_varlen_args va, int window_left, int window_right) {
  __shared__ int slot[SM90_VARLEN_COST_BINS]; /* counts, then each bin's next slot */
  __shared__ long long warp_sum[SM90_VARLEN_PLAN_THREADS / 32];
#if SM90_BWD_PDL
  /* the varlen pre (launched with PDL) may start at once: it reads nothing this pass writes (the
   * list, dK / dV of invalid arrays) and writes nothing it reads; it waits for this grid before
   * it completes, so that the main kernel's wait for the pre covers the list too. This pass is
   * the call's first, launched plainly: it waits for nothing. */
  cd_griddep_launch_dependents();
#endif
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  slot[t] = 0;
  __syncthreads();
  for (int b = t; b < va.batch; b += SM90_VARLEN_PLAN_THREADS) {
    const int4 s = cd_sm90_bwd_varlen_seq(va, b);
    const int nb = (s.w + BN - 1) / BN;
    for (int n = 0; n < nb; ++n) {
      int lo, hi;
      cd_mask_q_blocks(n * BN, min(n * BN + BN, s.w) - 1, s.z, s.w, window_left, window_right, BM,
                       &lo, &hi);
      atomicAdd(&slot[cd_sm90_varlen_cost_bin(lo, hi)], 1);
    }
  }
  __syncthreads();
  long long total;
  const long long first = cd_sm90_varlen_scan_bins(slot, warp_sum, t, lane, w, &total);
  slot[SM90_VARLEN_COST_BINS - 1 - t] = (int)first;
  __syncthreads();
  for (int b = t; b < va.batch; b += SM90_VARLEN_PLAN_THREADS) {
    const int4 s = cd_sm90_bwd_varlen_seq(va, b);
    const int nb = (s.w + BN - 1) / BN;
    const int tile0 = (int)(cd_sm90_bwd_varlen_pad0<BM>(s.x, b) / BM);
    for (int n = 0; n < nb; ++n) {
      int lo, hi;
      cd_mask_q_blocks(n * BN, min(n * BN + BN, s.w) - 1, s.z, s.w, window_left, window_right, BM,
                       &lo, &hi);
      const int at = atomicAdd(&slot[cd_sm90_varlen_cost_bin(lo, hi)], 1);
      if (at < va.cap) {
        va.seqs[at] = s;
        va.blocks[at] = make_int2(n, tile0);
        continue;
      }
      /* past the capacity (overlapping invalid key ranges only): dK = dV = 0 for its keys */
      const int k1 = min(n * BN + BN, s.w);
      for (int key = n * BN; key < k1; ++key)
        for (int h = 0; h < va.heads_kv; ++h) {
          uint16_t *dk = va.dk + (int64_t)(s.y + key) * va.dk_ss + h * va.dk_sh;
          uint16_t *dv = va.dv + (int64_t)(s.y + key) * va.dv_ss + h * va.dv_sh;
          for (int c = 0; c < va.head_dim; ++c) dk[c] = 0;
          for (int c = 0; c < va.head_dim_v; ++c) dv[c] = 0;
        }
    }
  }
  if (t == 0) *va.count = (int)(total < va.cap ? total : va.cap);
}

/* delta, LSE2 and the zeroed accumulator of every padded row [heads_q][R] (R = io.sq_pad): the
 * dense pre (bwd_prepost.cuh cd_sm90_bwd_pre) with each row's token found by its sequence
 * (cd_sm90_bwd_varlen_seq_of_row); LSE read at lse[h * total_q + token]. */
template <bool kFp16, int D, int DV = D>
__global__ void __launch_bounds__(SM90_BWD_PREPOST_THREADS)
    cd_sm90_bwd_varlen_pre(const cd_sm90_bwd_io io, const cd_sm90_bwd_varlen_args va) {
#if SM90_BWD_PDL
  cd_griddep_launch_dependents(); /* as the dense pre (bwd_prepost.cuh): the main kernel waits */
#endif
  constexpr int BM = cd_sm90_bwd_tile<D, DV>::BLOCK_M;
  constexpr int TPR = cd_sm90_bwd_pre_tpr<DV>(), CH = DV / 8 / TPR; /* cd_sm90_bwd_pre's */
  constexpr int ZERO = D / TPR, ROWS = SM90_BWD_PREPOST_THREADS / TPR;
  static_assert((TPR & (TPR - 1)) == 0 && TPR <= 32 && ZERO % 4 == 0, "rows of whole warp parts");
  const int64_t row = (int64_t)blockIdx.x * ROWS + threadIdx.x / TPR; /* over heads_q * R */
  const int c = threadIdx.x % TPR;
  const int64_t total = (int64_t)io.heads_q * io.sq_pad;
#if SM90_BWD_PRE_FAST
  /* config.cuh SM90_BWD_PRE_FAST 1: the dense pre's order (bwd_prepost.cuh cd_sm90_bwd_pre_fast),
   * one row a thread (its sequence's search is per row). The CTA's accumulator zeroed first, by
   * whole sectors, before the search's loads (stores placed after a load wait for it: they may
   * alias); the plan touches none of it, and the wait below orders only this grid's completion. */
  typedef cd_sm90_bwd_pre_map<D, TPR, 1, SM90_BWD_PREPOST_THREADS> M;
  static_assert(M::CTA_ROWS == ROWS, "the grid of bwd_varlen.cu: ROWS rows a CTA");
  cd_sm90_bwd_zero_cta<M>(io.dq_acc, blockIdx.x, total);
#endif
  const bool in = row < total;
  const int h = in ? (int)(row / io.sq_pad) : 0;
  const int64_t r = in ? row - (int64_t)h * io.sq_pad : 0;
  int4 s;
  int64_t pad0;
  cd_sm90_bwd_varlen_seq_of_row<BM>(va, r, &s, &pad0);
  const int64_t i = r - pad0;
  const bool valid = in && i >= 0 && i < s.z; /* i < 0: rows before the first sequence */
  const int64_t tok = s.x + i;
#if SM90_BWD_PRE_FAST
  /* O, dO and LSE read together (the caller's tensors), the wait, then the row's sum */
  const bool live = valid && c * CH * 8 < io.head_dim_v;
  uint4 ov[CH], dv[CH];
  cd_sm90_bwd_row_load<CH>(ov, (const uint16_t *)io.o + tok * io.o_ss + h * io.o_sh, c, io.head_dim_v, live);
  cd_sm90_bwd_row_load<CH>(dv, (const uint16_t *)io.dout + tok * io.do_ss + h * io.do_sh, c, io.head_dim_v, live);
  const float lse = valid && c == 0 ? io.lse[(int64_t)h * va.total_q + tok] : -INFINITY;
#if SM90_BWD_PDL
  cd_griddep_wait(); /* as at 0 (below) */
#endif
  const float sum = cd_sm90_bwd_row_sum<TPR>(live ? cd_sm90_bwd_row_dot<kFp16, CH>(ov, dv, c, io.head_dim_v) : 0.f);
  if (!in || c != 0) return;
  io.delta[row] = sum;
  io.lse2[row] = cd_sm90_bwd_lse2(lse);
#else
  float sum = 0.f;
  if (valid && c * CH * 8 < io.head_dim_v) {
    if constexpr (CH == 1) {
      const uint4 ov = *(const uint4 *)((const uint16_t *)io.o + tok * io.o_ss + h * io.o_sh + c * 8);
      const uint4 dv = *(const uint4 *)((const uint16_t *)io.dout + tok * io.do_ss + h * io.do_sh + c * 8);
      sum = cd_sm90_bwd_dot8<kFp16>(ov, dv);
    } else {
      sum = cd_sm90_bwd_row_part<kFp16, CH>((const uint16_t *)io.o + tok * io.o_ss + h * io.o_sh,
                                            (const uint16_t *)io.dout + tok * io.do_ss + h * io.do_sh, c,
                                            io.head_dim_v);
    }
  }
  sum = cd_sm90_bwd_row_sum<TPR>(sum);
#if SM90_BWD_PDL
  /* launched with PDL after the plan: nothing here depends on it (the reads above are the
   * caller's tensors and cu_seqlens_q; the writes below touch none of the plan's memory), but
   * griddepcontrol.wait covers only a grid's direct prerequisite: this grid must not complete
   * before the plan, or the main kernel, which waits for this grid only, could read a list still
   * being written. Every thread waits, before the writes (after the loads, which overlap the plan). */
  cd_griddep_wait();
#endif
  if (!in) return;
  if (c == 0) {
    io.delta[row] = sum;
    const float lse = valid ? io.lse[(int64_t)h * va.total_q + tok] : -INFINITY;
    io.lse2[row] = cd_sm90_bwd_lse2(lse);
  }
  cd_sm90_bwd_zero_acc<D, ZERO>(io.dq_acc, row, c);
#endif
}

/* dQ of padded tile blockIdx.x of head blockIdx.y: the dense post (cd_sm90_bwd_post) for the rows
 * of the tile's sequence; a tile with no such row returns at once. */
template <bool kFp16, int D, int DV = D>
__global__ void __launch_bounds__(SM90_BWD_PREPOST_THREADS)
    cd_sm90_bwd_varlen_post(const cd_sm90_bwd_io io, const cd_sm90_bwd_varlen_args va) {
  constexpr int BM = cd_sm90_bwd_tile<D, DV>::BLOCK_M, THREADS = SM90_BWD_PREPOST_THREADS;
  constexpr int F4 = BM * D / 4 / THREADS;
  constexpr int ROW_BYTES = D * 2 + 16;
  __shared__ __align__(16) uint8_t tile[BM * ROW_BYTES];
  const int m = blockIdx.x, h = blockIdx.y;
  int4 s;
  int64_t pad0;
  cd_sm90_bwd_varlen_seq_of_row<BM>(va, (int64_t)m * BM, &s, &pad0);
#if SM90_BWD_PDL
  /* launched with PDL after the main kernel: every thread waits for it (the accumulator's
   * reduce-adds visible) before reading the accumulator, and before the early exit, so that this
   * grid completes only after the main kernel (and, through its waits, the pre and the plan). The
   * search above reads only cu_seqlens_q. No launch_dependents: as the dense post. */
  cd_griddep_wait();
#endif
  const int64_t i0 = (int64_t)m * BM - pad0; /* the tile's first row in its sequence */
  if (i0 >= s.z) return; /* the whole CTA: no barrier was passed */
  const float4 *src = (const float4 *)(io.dq_acc + ((int64_t)h * (io.sq_pad / BM) + m) * (BM * D));
#pragma unroll
  for (int k = 0; k < F4; ++k) {
    const int f = threadIdx.x + k * THREADS;
    const float4 a = src[f];
    int row, col;
    cd_sm90_bwd_dq_frag<BM, cd_sm90_bwd_tile<D, DV>::DQ_N>(f, row, col);
    *(uint32_t *)(tile + row * ROW_BYTES + col * 2) = cd_pack2<kFp16>(a.x * io.scale, a.y * io.scale);
    *(uint32_t *)(tile + (row + 8) * ROW_BYTES + col * 2) =
        cd_pack2<kFp16>(a.z * io.scale, a.w * io.scale);
  }
  __syncthreads();
  constexpr int CPR = D / 8;
  for (int idx = threadIdx.x; idx < BM * CPR; idx += THREADS) {
    const int row = idx / CPR, c = idx % CPR;
    if (i0 + row < 0 || i0 + row >= s.z || c >= io.head_dim / 8) continue; /* the sequence's rows, dQ's columns */
    const int64_t tok = s.x + i0 + row;
    *(uint4 *)((uint16_t *)io.dq + tok * io.dq_ss + h * io.dq_sh + c * 8) =
        *(const uint4 *)(tile + row * ROW_BYTES + c * 16);
  }
}

#endif /* CUDADENT_SM90_BWD_VARLEN_PLAN_CUH */
