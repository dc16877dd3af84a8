/*
 * mask.cuh - which (query row, key column) pairs an attention call sees, for any kernel.
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
#ifndef CUDADENT_MASK_CUH
#define CUDADENT_MASK_CUH

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

#endif /* CUDADENT_MASK_CUH */
