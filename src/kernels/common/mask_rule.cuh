/*
 * mask_rule.cuh - which (query row, key column) pairs an attention call sees: the one statement of
 * the mask rule, for every kernel of every architecture. Row level (int64), then block level
 * (tiles of BLOCK_M rows x BLOCK_N keys, int32: see "32-bit" below); the per-element mask of a
 * tile lives with each kernel's accumulator layout (sm80/fwd_kernel.cuh, sm80/bwd.cu,
 * sm90/mask.cuh, sm90/bwd_kernel.cuh), each applying the inequalities below.
 *
 * The rule is the public API's (include/cudadent.h), on params normalized by api.c (causal folded
 * into window_right = 0, -1 = unbounded): with off = seqlen_k - seqlen_q (bottom-right alignment),
 * query row i sees key column j, 0 <= j < seqlen_k, when
 *     (window_left  < 0 || j >= i + off - window_left) &&
 *     (window_right < 0 || j <= i + off + window_right).
 * So row i sees the half-open key range [cd_mask_key_lo(i), cd_mask_key_hi(i)) (empty when
 * lo >= hi). Both ends are non-decreasing in i, so a block of rows sees one contiguous key range
 * and a block of keys is seen by one contiguous row range; every key tile inside that range has
 * at least one visible pair, so loops over those ranges skip exactly the fully masked tiles.
 * Everything is computed in int64 (i + off + window may pass 2^31) and clipped back to int.
 */
#ifndef CUDADENT_MASK_RULE_CUH
#define CUDADENT_MASK_RULE_CUH

#include <stdint.h>

#define CUDADENT_HD __host__ __device__ __forceinline__

typedef struct cd_mask {
  int seqlen_q;
  int seqlen_k;
  int window_left;  /* -1: unbounded */
  int window_right; /* -1: unbounded; 0 for causal */
} cd_mask_t;

CUDADENT_HD int64_t cd_clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : (x > hi ? hi : x);
}

/* First key column row i sees (0 when unbounded on the left); may be >= seqlen_k. */
CUDADENT_HD int cd_mask_key_lo(cd_mask_t m, int i) {
  if (m.window_left < 0) return 0;
  const int64_t lo = (int64_t)i + m.seqlen_k - m.seqlen_q - m.window_left;
  return (int)cd_clamp64(lo, 0, m.seqlen_k);
}

/* One past the last key column row i sees (seqlen_k when unbounded on the right); may be <= 0. */
CUDADENT_HD int cd_mask_key_hi(cd_mask_t m, int i) {
  if (m.window_right < 0) return m.seqlen_k;
  const int64_t hi = (int64_t)i + m.seqlen_k - m.seqlen_q + m.window_right + 1;
  return (int)cd_clamp64(hi, 0, m.seqlen_k);
}

/* 1 if row i sees column j (0 <= j < seqlen_k assumed for a true answer). */
CUDADENT_HD bool cd_mask_visible(cd_mask_t m, int i, int j) {
  return j >= cd_mask_key_lo(m, i) && j < cd_mask_key_hi(m, i) && j < m.seqlen_k;
}

/* Keys seen by any of the rows [row0, row1) (row1 > row0, row1 <= seqlen_q): [*key0, *key1).
 * *key1 <= *key0 means none. */
CUDADENT_HD void cd_mask_keys_of_rows(cd_mask_t m, int row0, int row1, int *key0,
                                      int *key1) {
  *key0 = cd_mask_key_lo(m, row0);
  *key1 = cd_mask_key_hi(m, row1 - 1);
}

/* Rows that see any of the keys [key0, key1) (key1 > key0, key1 <= seqlen_k): [*row0, *row1).
 * *row1 <= *row0 means none. (For the backward: the query range a key tile must visit.) */
CUDADENT_HD void cd_mask_rows_of_keys(cd_mask_t m, int key0, int key1, int *row0,
                                      int *row1) {
  const int64_t off = (int64_t)m.seqlen_k - m.seqlen_q;
  /* row i sees some j in the block iff key_hi(i) > key0 and key_lo(i) < key1 */
  *row0 = m.window_right < 0 ? 0 : (int)cd_clamp64(key0 - off - m.window_right, 0, m.seqlen_q);
  *row1 = m.window_left < 0 ? m.seqlen_q
                            : (int)cd_clamp64((int64_t)key1 - 1 - off + m.window_left + 1, 0,
                                              m.seqlen_q);
}

/* 1 if the tile rows [row0, row1) x keys [key0, key1) holds any pair that is not visible, or any
 * key >= seqlen_k: such a tile needs the element mask; others are computed unmasked.
 * (Rows >= seqlen_q are not considered: pass row1 <= seqlen_q.) */
CUDADENT_HD bool cd_mask_tile_partial(cd_mask_t m, int row0, int row1, int key0,
                                      int key1) {
  if (key1 > m.seqlen_k) return true;
  /* the right bound is tightest at the first row, the left bound at the last row */
  if (m.window_right >= 0 && key1 > cd_mask_key_hi(m, row0)) return true;
  if (m.window_left >= 0 && key0 < cd_mask_key_lo(m, row1 - 1)) return true;
  return false;
}

/* ---- block level ------------------------------------------------------------------------------
 * 32-bit: the arguments are api.c's normalized params, so every sum below fits int32. seqlen_q,
 * seqlen_k <= CUDADENT_MAX_SEQLEN = 2^30 (include/cudadent.h, checked by src/checks.c
 * check_limits), and normalization (api.c normalize_mask) leaves window_left < seqlen_k and
 * window_right < seqlen_q (or -1). With shift = seqlen_k - seqlen_q, a row m < seqlen_q has
 * m + shift < seqlen_k, so m + shift + window_right + 1 <= seqlen_k + seqlen_q - 1 < 2^31 and
 * m + shift - window_left > -seqlen_q - seqlen_k > -2^31; block edges add less than one block
 * (m0 + BLOCK_M - 1 and (n + 1) BLOCK_N - 1 stay below 2^30 + 256). */

/* Key blocks [*n_lo, *n_hi) that hold any key visible to a query row of the tile (rows
 * m0 .. min(m0 + BLOCK_M, seqlen_q) - 1), under the bottom-right aligned window of cudadent.h.
 * Empty (n_hi <= n_lo) when no row of the tile sees any key. */
template <int BLOCK_M, int BLOCK_N>
__host__ __device__ __forceinline__ void cd_mask_kv_blocks(int m_block, int seqlen_q, int seqlen_k,
                                                           int window_left, int window_right,
                                                           int *n_lo, int *n_hi) {
  const int shift = seqlen_k - seqlen_q;
  const int m0 = m_block * BLOCK_M;
  const int m1 = min(m0 + BLOCK_M, seqlen_q) - 1; /* last real row */
  int k_lo = 0, k_hi = seqlen_k;                   /* keys [k_lo, k_hi) */
  if (window_left >= 0) k_lo = max(0, m0 + shift - window_left);
  if (window_right >= 0) k_hi = min(seqlen_k, m1 + shift + window_right + 1);
  *n_lo = k_lo / BLOCK_N;
  *n_hi = k_hi > k_lo ? (k_hi + BLOCK_N - 1) / BLOCK_N : *n_lo;
}

/* Whether key block n needs the per-element mask for some row of query block m_block: it crosses
 * the end of the keys, or the window's right or left edge of some row in [m0, m0 + BLOCK_M). */
template <int BLOCK_M, int BLOCK_N>
__device__ __forceinline__ int cd_mask_block_partial(int n, int m_block, int seqlen_q,
                                                     int seqlen_k, int window_left,
                                                     int window_right) {
  const int shift = seqlen_k - seqlen_q;
  const int k0 = n * BLOCK_N, k1 = k0 + BLOCK_N - 1;
  const int m0 = m_block * BLOCK_M, m1 = m0 + BLOCK_M - 1;
  return (k1 >= seqlen_k) || (window_right >= 0 && k1 > m0 + shift + window_right) ||
         (window_left >= 0 && k0 < m1 + shift - window_left);
}

/* The split of a query block's key blocks into masked and unmasked ones: the blocks that need no
 * mask for any row of the tile are [*n_left, *n_right) (possibly empty), exactly those for which
 * cd_mask_block_partial is false: below *n_right no block crosses the end of the keys or the
 * right window's edge, from *n_left on none crosses the left window's edge. */
template <int BLOCK_M, int BLOCK_N>
__device__ __forceinline__ void cd_mask_unmasked_blocks(int m_block, int seqlen_q, int seqlen_k,
                                                        int window_left, int window_right,
                                                        int *n_left, int *n_right) {
  const int shift = seqlen_k - seqlen_q;
  const int m0 = m_block * BLOCK_M, m1 = m0 + BLOCK_M - 1;
  /* right: block n is clean iff its last key (n + 1) BLOCK_N - 1 <= lim */
  int lim = seqlen_k - 1;
  if (window_right >= 0) lim = min(lim, m0 + shift + window_right);
  *n_right = lim >= 0 ? (lim + 1) / BLOCK_N : 0;
  /* left: block n is clean iff its first key n BLOCK_N >= m1 + shift - window_left */
  *n_left = 0;
  if (window_left >= 0) {
    const int first = m1 + shift - window_left;
    *n_left = first > 0 ? (first + BLOCK_N - 1) / BLOCK_N : 0;
  }
}

/* ---- for a backward: the query side of a key block (int64: no overflow for any size the API
 * accepts) ---- */

/* The query blocks [*m_lo, *m_hi) whose rows see some key of [k0, k1] (k1 inclusive; rows
 * i + shift - wl <= j <= i + shift + wr, as cd_mask_rows_of_keys). */
__host__ __device__ __forceinline__ void cd_mask_q_blocks(int k0, int k1, int seqlen_q,
                                                          int seqlen_k, int wl, int wr, int bm,
                                                          int *m_lo, int *m_hi) {
  const int64_t shift = (int64_t)seqlen_k - seqlen_q;
  int64_t lo = 0, hi = (int64_t)seqlen_q - 1;
  if (wr >= 0 && k0 - shift - wr > lo) lo = k0 - shift - wr;
  if (wl >= 0 && k1 - shift + wl < hi) hi = k1 - shift + wl;
  if (lo > hi) {
    *m_lo = *m_hi = 0;
    return;
  }
  *m_lo = (int)(lo / bm);
  *m_hi = (int)(hi / bm) + 1;
}

/* The first key block (of bn keys) any row of query block m (of bm rows) sees: the left window's
 * edge of the block's first row (cd_mask_q_blocks read the other way). */
__host__ __device__ __forceinline__ int cd_mask_first_key_block(int m, int bm, int bn, int seqlen_q,
                                                                int seqlen_k, int window_left) {
  if (window_left < 0) return 0;
  const int64_t k_lo = (int64_t)m * bm + ((int64_t)seqlen_k - seqlen_q) - window_left;
  return k_lo <= 0 ? 0 : (int)(k_lo / bn);
}

/* The last key block (of bn keys, n_blocks of them) any row of query block m (of bm rows) sees:
 * the right window's edge of the block's last row, m * bm + bm - 1 unclamped as cd_mask_q_blocks'
 * m_lo (cd_mask_q_blocks read the other way); -1 where no row of the block sees a key. */
__host__ __device__ __forceinline__ int cd_mask_last_key_block(int m, int bm, int bn, int seqlen_q,
                                                               int seqlen_k, int window_right,
                                                               int n_blocks) {
  if (window_right < 0) return n_blocks - 1;
  const int64_t k_hi = (int64_t)m * bm + bm - 1 + ((int64_t)seqlen_k - seqlen_q) + window_right;
  if (k_hi < 0) return -1;
  return k_hi / bn < n_blocks ? (int)(k_hi / bn) : n_blocks - 1;
}

#endif /* CUDADENT_MASK_RULE_CUH */
