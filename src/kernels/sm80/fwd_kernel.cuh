/*
 * fwd_kernel.cuh - the portable attention forward (FlashAttention-2 style), mma.sync path.
 *
 * Computes, for one (query tile, head, batch) per CTA, with s_ij = scale * Q[i,:] . K[j,:]
 * (softcap c > 0: s_ij = c * tanh(s_ij / c), before the mask),
 *     O[i,:] = sum_j softmax_j(s_ij) V[j,:]   over the visible keys j,
 *     LSE[i] = log sum_j exp(s_ij)             (natural log; -inf if none)
 * with bottom-right aligned causal / sliding-window masking (common/mask_rule.cuh), GQA/MQA (query
 * head h reads KV head h / (heads_q / heads_kv)), any batch/seq/head strides.
 *
 * Width: the kernel is compiled for a width D in {64, (96,) 128, 192, 256} (every tile row holds D
 * columns); Q and K have head_dim <= D columns, V and O head_dim_v <= D. With PAD (a template
 * bool; compiled where head_dim or head_dim_v may be below D) loads zero-fill the 16-byte chunks
 * at columns >= head_dim (Q, K) and >= head_dim_v (V) without reading them, and the O store skips
 * the chunks at columns >= head_dim_v: zero columns add exactly 0 to Q K^T and only produce O
 * columns that are never stored, so nothing else knows about the padding. Without PAD (D <= 128
 * only) head_dim = head_dim_v = D and the loads and stores are unpredicated in columns.
 * SOFTCAP (a template bool): scores are capped right after S = Q K^T as t = tanh(s * scale / c)
 * (cd_softcap_tanh, ptx_sm80.cuh), kept in units of c: the softmax runs on t with scale_log2 = c * log2(e)
 * (log2(e) applied after the tanh) and the LSE is m_t * c + log(l), as flash-attn's kernels do
 * (the launcher sets the args so; without SOFTCAP the same code runs on raw q.k with
 * scale_log2 = scale * log2(e)).
 *
 * Warps: WARPS warps, all alike. Warp w owns query rows [w*ROWS_W, (w+1)*ROWS_W) of the tile
 * (ROWS_W = BLOCK_M / WARPS = 16 * M_TILES); it computes its S = Q K^T slab, its online softmax
 * and its O slab alone, so warps only meet at the pipeline's barriers.
 *
 * Shared memory (dynamic, 16-bit elements, every tile row-major with D contiguous):
 *     sQ [BLOCK_M][D]                 query tile; reused at the end to stage O for 16-byte stores
 *     sK [2][BLOCK_N][D]              key tiles, double buffered
 *     sV [2][BLOCK_N][D]              value tiles, double buffered
 * Rows are split in 16-byte chunks; chunk c of row r sits at position c ^ key(r) of that row
 * (swizzle.cuh: r % 8 inside each group of 8 chunks, 64 columns; D = 96: (r / 2) % 4 inside each
 * group of 4), so the 8 row addresses of each ldmatrix 8x8 matrix (8 consecutive rows, one
 * logical chunk) hit 8 different 16-byte bank groups: conflict-free for every width.
 *
 * Pipeline (cp.async, one commit group per tile load), key tiles visited from the last to the
 * first (the partially masked diagonal / ragged-end tiles first); the body's SINGLE (fwd_single.cuh:
 * K and V single buffered, FA2's two barriers a tile) differs only here, as its header says:
 *     prologue:  {Q, K[n_last]} {V[n_last]}
 *     iteration for tile n (buffer b):
 *         wait K[n], V[n]; barrier                      (also: all warps are done with b^1)
 *         issue {K[n-1]} {V[n-1]} into b^1               (empty groups after the last tile)
 *         S = Q K[n]^T  (ldmatrix Q and K fragments, mma.sync m16n8k16, fp32 accumulators)
 *         SOFTCAP: S = tanh(S * scale / c)
 *         element mask, only if the tile is partially masked (cd_mask_tile_partial)
 *         online softmax in registers (softmax.cuh); P converted to 16-bit A fragments in place
 *         O += P V[n]   (V fragments by ldmatrix.trans)
 * so each load has a whole tile iteration of compute to land in, with one barrier per tile.
 * Key tiles that no row of the
 * query tile sees are never visited (loop bounds from cd_mask_keys_of_rows).
 *
 * Epilogue: O /= rowsum (0 for a row that saw no key), rounded to 16 bits, staged through the
 * warp's own rows of sQ (same swizzle), stored with 16-byte coalesced stores, rows >= seqlen_q
 * (and with PAD chunks at columns >= head_dim_v) skipped; LSE = max * scale + log(sum) written
 * by one thread per row.
 *
 * Grid: 1-D, batch * heads_q * m_blocks CTAs; the (batch, head) index runs fastest and the query
 * tile index runs from the last (heaviest under a causal mask) to the first.
 *
 * Varlen (VARLEN, a template bool of the body; its own kernel, cd_sm80_fwd_varlen_kernel, with the
 * arrays in a second argument, so the dense kernels keep their names and argument; their SASS
 * differs only in the placement of a sign extension, docs/kernels/sm80_fwd.md section 7): batch
 * is the number of sequences and m_blocks counts the
 * tiles of max_seqlen_q (host-known bounds). A CTA first reads its sequence's clamped ranges
 * (cd_sm80_fwd_varlen_seq: cudadent.h's clamping of cu_seqlens_q / cu_seqlens_k / seqused_k),
 * returns at once when its query tile starts at or past the sequence's length, and otherwise
 * runs the dense code with that sequence's seqlen_q / seqlen_k (masks bottom-right aligned per
 * sequence) on pointers moved to the sequence's first query / key token; the LSE goes to
 * lse[h * total_q + token]. Tokens in no sequence are written by the gap fill (kernels/varlen.cu),
 * launched before this kernel.
 */
#ifndef CUDADENT_SM80_FWD_KERNEL_CUH
#define CUDADENT_SM80_FWD_KERNEL_CUH

#include <stdint.h>
#include <cuda_runtime.h>
#include "cudadent.h"
#include "device_info.h"
#include "kernels/common/mask_rule.cuh"
#include "kernels/sm80/ptx_sm80.cuh"
#include "kernels/sm80/fwd_smem.cuh"
#include "kernels/sm80/softmax.cuh"
#include "kernels/sm80/swizzle.cuh"

/* Everything the kernel needs, by value. Strides in elements. */
typedef struct cd_sm80_fwd_args {
  const void *q, *k, *v;
  void *o;
  float *lse; /* [batch][heads_q][seqlen_q] or NULL */
  int64_t q_sb, q_ss, q_sh;
  int64_t k_sb, k_ss, k_sh;
  int64_t v_sb, v_ss, v_sh;
  int64_t o_sb, o_ss, o_sh;
  int batch, heads_q, group; /* group = heads_q / heads_kv */
  int m_blocks;              /* ceil(seqlen_q / BLOCK_M) */
  cd_mask_t mask;            /* seqlen_q, seqlen_k, windows */
  float scale;               /* softmax_scale; SOFTCAP: softcap (scores are in units of it) */
  float scale_log2;          /* scale * log2(e) */
  /* after the fields above, so that the kernels without PAD and SOFTCAP read their arguments
   * at the offsets they always had */
  int qk_chunks, v_chunks;   /* head_dim / 8, head_dim_v / 8 (16-byte chunks of a real row) */
  float softcap_pre;         /* SOFTCAP: softmax_scale / softcap (t = tanh(q.k * softcap_pre)) */
} cd_sm80_fwd_args_t;

/* The varlen kernel's second argument: device arrays (seqused_k may be NULL) and the token
 * counts (a.mask.seqlen_q / seqlen_k then hold max_seqlen_q / max_seqlen_k). A separate struct,
 * so that the dense kernels' argument is the one they always had. */
typedef struct cd_sm80_fwd_varlen_args {
  const int *cu_seqlens_q, *cu_seqlens_k, *seqused_k;
  int total_q, total_k;
} cd_sm80_fwd_varlen_args_t;

/* Sequence b's clamped ranges (cudadent.h, "features of layout v2"): queries [*q0, *q0 + *len_q)
 * with q0 = clamp(cu_seqlens_q[b], 0, total_q), end clamp(cu_seqlens_q[b+1], q0,
 * min(total_q, q0 + max_seqlen_q)); keys likewise from *k0, of which the first *len_k are used
 * (seqused_k[b] clamped to [0, its key count], or all). All in int64 before the clamps, so no
 * entry can wrap. */
CUDADENT_DEVICE void cd_sm80_fwd_varlen_q(const cd_sm80_fwd_args_t &a,
                                          const cd_sm80_fwd_varlen_args_t &v, int b, int *q0,
                                          int *len_q) {
  const int64_t lo = min(max((int64_t)v.cu_seqlens_q[b], (int64_t)0), (int64_t)v.total_q);
  const int64_t end = min((int64_t)v.total_q, lo + a.mask.seqlen_q);
  const int64_t hi = min(max((int64_t)v.cu_seqlens_q[b + 1], lo), end);
  *q0 = (int)lo;
  *len_q = (int)(hi - lo);
}
CUDADENT_DEVICE void cd_sm80_fwd_varlen_k(const cd_sm80_fwd_args_t &a,
                                          const cd_sm80_fwd_varlen_args_t &v, int b, int *k0,
                                          int *len_k) {
  const int64_t lo = min(max((int64_t)v.cu_seqlens_k[b], (int64_t)0), (int64_t)v.total_k);
  const int64_t end = min((int64_t)v.total_k, lo + a.mask.seqlen_k);
  const int64_t hi = min(max((int64_t)v.cu_seqlens_k[b + 1], lo), end);
  int len = (int)(hi - lo);
  if (v.seqused_k != NULL) len = min(max(v.seqused_k[b], 0), len);
  *k0 = (int)lo;
  *len_k = len;
}

/* The kernel's body (the __global__ kernels below: dense and varlen). SINGLE: K and V single
 * buffered with FA2's two-barrier pipeline (fwd_single.cuh's kernels; its header comment);
 * else the double-buffered one-barrier pipeline of this file's header. HEAD_MAJOR: the grid
 * runs the query tiles of one (batch, head) consecutively (fwd_single.cuh), else the header's
 * order. */
template <typename T, int D, int BLOCK_M, int BLOCK_N, int WARPS, bool PAD, bool SOFTCAP,
          bool VARLEN, bool SINGLE = false, bool HEAD_MAJOR = false>
__device__ __forceinline__ void cd_sm80_fwd_body(const cd_sm80_fwd_args_t a,
                                                 const cd_sm80_fwd_varlen_args_t v) {
  constexpr int THREADS = WARPS * 32;
  constexpr int ROWS_W = BLOCK_M / WARPS;   // query rows per warp
  constexpr int M_TILES = ROWS_W / 16;      // m16 tiles per warp
  constexpr int S_TILES = BLOCK_N / 8;      // n8 tiles of S per warp row slab
  constexpr int O_TILES = D / 8;            // n8 tiles of O
  constexpr int CHUNKS = D / 8;             // 16-byte chunks per row
  constexpr int LC = cd_sm80_fwd_ld_chunks<D>::VALUE; // chunks per thread-row of a tile load
  constexpr int ROW_BYTES = D * 2;
  static_assert(ROWS_W % 16 == 0 && D % 32 == 0 && BLOCK_N % 16 == 0, "bad tile shape");

  extern __shared__ __align__(1024) unsigned char cd_smem[];
  const uint32_t sQ = cd_smem_addr(cd_smem);                         // [BLOCK_M][D]
  const uint32_t sK = sQ + BLOCK_M * D * 2;                          // [2][BLOCK_N][D]
  const uint32_t sV = sK + (SINGLE ? 1 : 2) * BLOCK_N * D * 2;       // [2][BLOCK_N][D]
                                                                     // (SINGLE: [1] both)
  constexpr uint32_t KV_TILE_BYTES = BLOCK_N * D * 2;

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int g = lane / 4; // row within an m16 half
  const int t = lane % 4; // column pair

  /* ---- which tile: (batch, head) fastest, query tiles from the last. The launcher keeps
   * batch * heads_q * m_blocks below 2^31, so 32-bit unsigned division is exact. ---- */
  const unsigned bh_count = (unsigned)a.batch * (unsigned)a.heads_q;
  const unsigned bh = HEAD_MAJOR ? blockIdx.x / (unsigned)a.m_blocks : blockIdx.x % bh_count;
  const int m_block = a.m_blocks - 1 - (int)(HEAD_MAJOR ? blockIdx.x % (unsigned)a.m_blocks
                                                        : blockIdx.x / bh_count);
  const int b = (int)(bh / (unsigned)a.heads_q);
  const int h = (int)(bh % (unsigned)a.heads_q);
  const int hk = (int)((unsigned)h / (unsigned)a.group);
  /* varlen: this sequence's lengths and first tokens (dense: the call's, and batch offsets) */
  cd_mask_t vmask = a.mask;         /* VARLEN: the sequence's lengths, windows as given */
  int64_t q_first = 0, k_first = 0; /* VARLEN: the sequence's first query / key token */
  if (VARLEN) {
    int q0, k0;
    cd_sm80_fwd_varlen_q(a, v, b, &q0, &vmask.seqlen_q);
    if (m_block * BLOCK_M >= vmask.seqlen_q) return; /* the whole CTA: past the sequence's end */
    cd_sm80_fwd_varlen_k(a, v, b, &k0, &vmask.seqlen_k);
    q_first = q0;
    k_first = k0;
  }
  const cd_mask_t &mask = VARLEN ? vmask : a.mask; /* dense: the argument itself */
  const int seqlen_q = mask.seqlen_q;
  const int seqlen_k = mask.seqlen_k;
  const int m0 = m_block * BLOCK_M;
  const int rows_valid = min(BLOCK_M, seqlen_q - m0);

  const T *gQ = VARLEN ? (const T *)a.q + (int64_t)h * a.q_sh + (q_first + m0) * a.q_ss
                       : (const T *)a.q + (int64_t)b * a.q_sb + (int64_t)h * a.q_sh +
                             (int64_t)m0 * a.q_ss;
  const T *gK = VARLEN ? (const T *)a.k + (int64_t)hk * a.k_sh + k_first * a.k_ss
                       : (const T *)a.k + (int64_t)b * a.k_sb + (int64_t)hk * a.k_sh;
  const T *gV = VARLEN ? (const T *)a.v + (int64_t)hk * a.v_sh + k_first * a.v_ss
                       : (const T *)a.v + (int64_t)b * a.v_sb + (int64_t)hk * a.v_sh;

  int key0, key1;
  cd_mask_keys_of_rows(mask, m0, m0 + rows_valid, &key0, &key1);
  const int n_first = key0 / BLOCK_N;
  const int n_last = key1 > key0 ? (key1 - 1) / BLOCK_N : n_first - 1; // n_last < n_first: none

  float o[M_TILES][O_TILES][4];
  float row_max[2 * M_TILES], row_sum[2 * M_TILES];
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
    for (int ot = 0; ot < O_TILES; ++ot)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][ot][e] = 0.f;
    row_max[2 * mt] = row_max[2 * mt + 1] = CD_NEG_INF;
    row_sum[2 * mt] = row_sum[2 * mt + 1] = 0.f;
  }

  if (n_last >= n_first) {
    /* ---- prologue: {Q, K[n_last]} {V[n_last]} (SINGLE: {Q, K[n_last]}) ---- */
    /* this thread's chunk of every tile load: row ld_r (+ passes), chunk ld_c; K/V pointers walk
     * down one tile per iteration */
    const int ld_r = tid / LC, ld_c = tid % LC;
    const uint32_t ld_off = cd_sm80_fwd_swz<CHUNKS>(ld_r, ld_c);
    const T *kp = gK + (int64_t)(n_last * BLOCK_N + ld_r) * a.k_ss + ld_c * 8;
    const T *vp = gV + (int64_t)(n_last * BLOCK_N + ld_r) * a.v_ss + ld_c * 8;
    /* PAD: real chunks of a row left from this thread's chunk (Q, K: head_dim; V: head_dim_v) */
    const int qk_col_left = PAD ? a.qk_chunks - ld_c : 0;
    const int v_col_left = PAD ? a.v_chunks - ld_c : 0;
    cd_sm80_fwd_load_tile<T, BLOCK_M, D, THREADS, true, PAD>(sQ + ld_off, gQ + (int64_t)ld_r * a.q_ss + ld_c * 8,
                                         a.q_ss, rows_valid - ld_r, qk_col_left, a.q);
    cd_sm80_fwd_load_tile<T, BLOCK_N, D, THREADS, true, PAD>(sK + ld_off, kp, a.k_ss,
                                         seqlen_k - n_last * BLOCK_N - ld_r, qk_col_left, a.k);
    cd_cp_async_commit();
    if constexpr (!SINGLE) {
      cd_sm80_fwd_load_tile<T, BLOCK_N, D, THREADS, true, PAD>(sV + ld_off, vp, a.v_ss,
                                           seqlen_k - n_last * BLOCK_N - ld_r, v_col_left, a.v);
      cd_cp_async_commit();
    }

    /* Per-lane ldmatrix base addresses. A tile row is ROW_BYTES (a multiple of the swizzle
     * group's G * 16 bytes) and tiles start 128-byte aligned, so the swizzled chunk
     * (2*kk + c) ^ key(row) of k-step kk becomes
     * (base ^ ((kk % (G/2)) * 32)) + (kk / (G/2)) * G * 16
     * with the lane's own (c ^ key(row)) in base: one LOP3 per k-step and immediate offsets for
     * everything else (cd_sm80_fwd_ldsm_addr). */
    const int x = lane & 7; // row % 8 of the lane's ldmatrix row (row bases are multiples of 8)
    const int xk = cd_sm80_swz_key<CHUNKS>(x); // its swizzle key
    const uint32_t q_base = sQ + (warp * ROWS_W + x + ((lane >> 3) & 1) * 8) * ROW_BYTES +
                            (((lane >> 4) ^ xk) * 16);          // A: m0-7,m8-15 | k0-7,k8-15
    const uint32_t k_base = sK + (x + (lane >> 4) * 8) * ROW_BYTES +
                            ((((lane >> 3) & 1) ^ xk) * 16);    // B (K): n0-7,n8-15 | k0-7,k8-15
    const uint32_t v_base = sV + (x + ((lane >> 3) & 1) * 8) * ROW_BYTES +
                            (((lane >> 4) ^ xk) * 16);          // B (V^T): k0-7,k8-15 | n0-7,n8-15

    int buf = 0;
    for (int n = n_last; n >= n_first; --n, buf ^= SINGLE ? 0 : 1) {
      cd_cp_async_wait<0>(); // K[n], V[n] (and Q) landed; SINGLE: K[n] (and Q)
      __syncthreads();       // ...for every thread; and all warps left buffer buf^1 (SINGLE: V)
      if constexpr (SINGLE) {
        /* V[n] into the one V buffer, under S = Q K^T; only the ragged last tile (n_last) has
         * rows past seqlen_k: predicated there (zero-filled), as in the other pipeline's
         * prologue, and not below it */
        if (n == n_last)
          cd_sm80_fwd_load_tile<T, BLOCK_N, D, THREADS, true, PAD>(sV + ld_off, vp, a.v_ss,
                                               seqlen_k - n * BLOCK_N - ld_r, v_col_left, a.v);
        else
          cd_sm80_fwd_load_tile<T, BLOCK_N, D, THREADS, false, PAD>(sV + ld_off, vp, a.v_ss, 0,
                                                                    v_col_left, a.v);
        cd_cp_async_commit();
      } else if (n > n_first) {
        /* tiles below n_last end before seqlen_k (the ragged last tile is >= n_last): no
         * predicates */
        kp -= (int64_t)BLOCK_N * a.k_ss;
        vp -= (int64_t)BLOCK_N * a.v_ss;
        cd_sm80_fwd_load_tile<T, BLOCK_N, D, THREADS, false, PAD>(sK + (buf ^ 1) * KV_TILE_BYTES + ld_off, kp,
                                                                  a.k_ss, 0, qk_col_left, a.k);
        cd_cp_async_commit();
        cd_sm80_fwd_load_tile<T, BLOCK_N, D, THREADS, false, PAD>(sV + (buf ^ 1) * KV_TILE_BYTES + ld_off, vp,
                                                                  a.v_ss, 0, v_col_left, a.v);
        cd_cp_async_commit();
      } else {
        cd_cp_async_commit(); // empty groups keep the wait counts uniform
        cd_cp_async_commit();
      }

      /* ---- S = Q K^T  [ROWS_W, BLOCK_N] per warp ---- */
      float s[M_TILES][S_TILES][4];
#pragma unroll
      for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
        for (int nt = 0; nt < S_TILES; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.f;
      const uint32_t k_buf = k_base + buf * KV_TILE_BYTES;
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        uint32_t qa[M_TILES][4];
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt)
          cd_ldmatrix_x4(qa[mt], cd_sm80_fwd_ldsm_addr<CHUNKS>(q_base, mt * 16 * ROW_BYTES, kk));
#pragma unroll
        for (int np = 0; np < S_TILES / 2; ++np) {
          uint32_t kb[4];
          cd_ldmatrix_x4(kb, cd_sm80_fwd_ldsm_addr<CHUNKS>(k_buf, np * 16 * ROW_BYTES, kk));
#pragma unroll
          for (int mt = 0; mt < M_TILES; ++mt) {
            cd_mma_m16n8k16<T>(s[mt][2 * np], qa[mt], &kb[0]);
            cd_mma_m16n8k16<T>(s[mt][2 * np + 1], qa[mt], &kb[2]);
          }
        }
      }

      /* ---- softcap: t = tanh(q.k * scale / softcap), in units of softcap (a.scale) ---- */
      if (SOFTCAP) {
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt)
#pragma unroll
          for (int nt = 0; nt < S_TILES; ++nt)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[mt][nt][e] = cd_softcap_tanh(s[mt][nt][e] * a.softcap_pre);
      }

      /* ---- element mask on partially masked tiles only ---- */
      const int n0 = n * BLOCK_N;
      if (cd_mask_tile_partial(mask, m0, m0 + rows_valid, n0, n0 + BLOCK_N)) {
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int i = m0 + warp * ROWS_W + mt * 16 + half * 8 + g;
            const int lo = cd_mask_key_lo(mask, i) - n0; // tile-local visible [lo, hi)
            const int hi = cd_mask_key_hi(mask, i) - n0;
#pragma unroll
            for (int nt = 0; nt < S_TILES; ++nt) {
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const int j = nt * 8 + 2 * t + e;
                if (j < lo || j >= hi) s[mt][nt][2 * half + e] = CD_NEG_INF;
              }
            }
          }
        }
      }

      if constexpr (SINGLE) {
        cd_cp_async_wait<0>(); // V[n] landed
        __syncthreads();       // ...for every thread; and all warps left K[n]
        if (n > n_first) {     // K[n-1] into the one K buffer, under the softmax and P V
          kp -= (int64_t)BLOCK_N * a.k_ss;
          vp -= (int64_t)BLOCK_N * a.v_ss;
          cd_sm80_fwd_load_tile<T, BLOCK_N, D, THREADS, false, PAD>(sK + ld_off, kp, a.k_ss, 0,
                                                                    qk_col_left, a.k);
          cd_cp_async_commit();
        }
      }

      /* ---- online softmax: s becomes P (fp32), O and row_sum rescaled ---- */
      cd_sm80_fwd_softmax_online_step<M_TILES, S_TILES, O_TILES>(s, o, row_max, row_sum, a.scale_log2);


      /* ---- O += P V  [ROWS_W, D] per warp; P's C fragments are V's A fragments ---- */
      const uint32_t v_buf = v_base + buf * KV_TILE_BYTES;
#pragma unroll
      for (int kk = 0; kk < BLOCK_N / 16; ++kk) {
        uint32_t pa[M_TILES][4];
#pragma unroll
        for (int mt = 0; mt < M_TILES; ++mt) {
          pa[mt][0] = cd_pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);         // row g,   k 2t
          pa[mt][1] = cd_pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);         // row g+8, k 2t
          pa[mt][2] = cd_pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]); // row g, k 2t+8
          pa[mt][3] = cd_pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]); // row g+8,k 2t+8
        }
#pragma unroll
        for (int dp = 0; dp < O_TILES / 2; ++dp) {
          uint32_t vb[4];
          cd_ldmatrix_x4_trans(vb, cd_sm80_fwd_ldsm_addr<CHUNKS>(v_buf, kk * 16 * ROW_BYTES, dp));
#pragma unroll
          for (int mt = 0; mt < M_TILES; ++mt) {
            cd_mma_m16n8k16<T>(o[mt][2 * dp], pa[mt], &vb[0]);
            cd_mma_m16n8k16<T>(o[mt][2 * dp + 1], pa[mt], &vb[2]);
          }
        }
      }
    }
    cd_cp_async_wait<0>(); // nothing may still write sQ when O is staged there
  }

  /* ---- epilogue: normalize, LSE, stage O in the warp's rows of sQ, 16-byte stores ---- */
  {
  /* (batch, head) again from blockIdx: cheaper than keeping them live across the loop */
  const unsigned bh_e = HEAD_MAJOR ? blockIdx.x / (unsigned)a.m_blocks : blockIdx.x % bh_count;
  const int b_e = (int)(bh_e / (unsigned)a.heads_q), h_e = (int)(bh_e % (unsigned)a.heads_q);
  int seqlen_q_e = seqlen_q;
  int64_t q_first_e = 0;
  if (VARLEN) { /* re-read (L1/L2 hits) rather than kept live across the loop */
    int q0;
    cd_sm80_fwd_varlen_q(a, v, b_e, &q0, &seqlen_q_e);
    q_first_e = q0;
  }
  T *gO = VARLEN ? (T *)a.o + (int64_t)h_e * a.o_sh + (q_first_e + m0) * a.o_ss
                 : (T *)a.o + (int64_t)b_e * a.o_sb + (int64_t)h_e * a.o_sh + (int64_t)m0 * a.o_ss;
  /* dense [batch][heads_q][seqlen_q]; varlen [heads_q][total_q] */
  float *lse_row = VARLEN ? a.lse + ((int64_t)h_e * v.total_q + q_first_e + m0)
                          : a.lse + ((int64_t)bh_e * seqlen_q + m0);
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = 2 * mt + half;
      const float l = cd_sm80_fwd_quad_sum(row_sum[r]);
      const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
      for (int ot = 0; ot < O_TILES; ++ot) {
        o[mt][ot][2 * half] *= inv;
        o[mt][ot][2 * half + 1] *= inv;
      }
      const int i = warp * ROWS_W + mt * 16 + half * 8 + g; // tile row
      if (a.lse != NULL && t == 0 && m0 + i < seqlen_q_e)
        lse_row[i] = l > 0.f ? row_max[r] * a.scale + logf(l) : CD_NEG_INF;
    }
  }
  unsigned char *sO = cd_smem; // the warp's own Q rows: only this warp ever read them
  __syncwarp(); // every lane's last ldmatrix of these rows is done before any lane writes them
#pragma unroll
  for (int mt = 0; mt < M_TILES; ++mt) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = warp * ROWS_W + mt * 16 + half * 8 + g;
#pragma unroll
      for (int ot = 0; ot < O_TILES; ++ot) {
        const uint32_t v = cd_pack2<T>(o[mt][ot][2 * half], o[mt][ot][2 * half + 1]);
        *(uint32_t *)(sO + cd_sm80_fwd_swz<CHUNKS>(r, ot) + t * 4) = v;
      }
    }
  }
  __syncwarp(); // the warp's staged rows are complete
#pragma unroll
  for (int it = 0; it < ROWS_W * CHUNKS / 32; ++it) {
    const int idx = lane + it * 32;
    const int r = warp * ROWS_W + idx / CHUNKS;
    const int c = idx % CHUNKS;
    if (m0 + r < seqlen_q_e && (!PAD || c < a.v_chunks)) { // PAD: columns < head_dim_v only
      const uint4 v = *(const uint4 *)(sO + cd_sm80_fwd_swz<CHUNKS>(r, c));
      *(uint4 *)(gO + (int64_t)r * a.o_ss + c * 8) = v;
    }
  }
  }
}

/* Dynamic shared memory of one CTA. */
template <int D, int BLOCK_M, int BLOCK_N, bool SINGLE = false>
constexpr int cd_sm80_fwd_smem_bytes() {
  return (BLOCK_M + (SINGLE ? 2 : 4) * BLOCK_N) * D * 2;
}

/* The opt-in shared memory per block of the architecture being compiled (device code only):
 * sm_86 / sm_89 99 KiB, sm_80 / sm_87 163 KiB, else (sm_90, and newer through compute_90's PTX)
 * 227 KiB. A kernel whose tile needs more (CUDADENT_SM80_FWD_WIDE8's 8-warp tiles: W 192 and 256
 * on sm_86 / sm_89, W 256 on sm_80) is never launched there (cd_sm80_fwd_large_fits), so its
 * body is not compiled for it: a trap, should it ever be launched. */
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 890)
#define CD_SM80_FWD_ARCH_SMEM (99 * 1024)
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 870)
#define CD_SM80_FWD_ARCH_SMEM (163 * 1024)
#else
#define CD_SM80_FWD_ARCH_SMEM (227 * 1024)
#endif

/* CTAs an SM the kernel is compiled for (__launch_bounds__'s second figure): 4 warps two (255
 * registers a thread either way), 8 warps (dispatch.h CUDADENT_SM80_FWD_WIDE8's W 192 / 256 rows)
 * one, so that 256 threads keep 255 registers. */
template <int WARPS> constexpr int cd_sm80_fwd_min_ctas() { return WARPS <= 4 ? 2 : 1; }

template <typename T, int D, int BLOCK_M, int BLOCK_N, int WARPS, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(WARPS * 32, cd_sm80_fwd_min_ctas<WARPS>())
    cd_sm80_fwd_kernel(const cd_sm80_fwd_args_t a) {
  const cd_sm80_fwd_varlen_args_t none = {NULL, NULL, NULL, 0, 0}; /* never read */
  if constexpr (cd_sm80_fwd_smem_bytes<D, BLOCK_M, BLOCK_N>() <= CD_SM80_FWD_ARCH_SMEM)
    cd_sm80_fwd_body<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP, false>(a, none);
  else
    __trap(); /* a tile this architecture cannot hold: never launched on it */
}

/* varlen: the same body on ragged batches (see the header comment) */
template <typename T, int D, int BLOCK_M, int BLOCK_N, int WARPS, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(WARPS * 32, cd_sm80_fwd_min_ctas<WARPS>())
    cd_sm80_fwd_varlen_kernel(const cd_sm80_fwd_args_t a, const cd_sm80_fwd_varlen_args_t v) {
  if constexpr (cd_sm80_fwd_smem_bytes<D, BLOCK_M, BLOCK_N>() <= CD_SM80_FWD_ARCH_SMEM)
    cd_sm80_fwd_body<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP, true>(a, v);
  else
    __trap(); /* as above */
}

#endif /* CUDADENT_SM80_FWD_KERNEL_CUH */
