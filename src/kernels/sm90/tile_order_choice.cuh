/*
 * tile_order_choice.cuh - host side: the tile order (tile_scheduler.cuh) a launch of the sm90
 * forward takes.
 *
 *   no right window (non-causal)           M_GROUPED: all tiles of a head cost alike
 *   at most SM90_HEAD_ORDER_MAX_MBLOCKS    HEAD_SNAKE (dev/sm90_fwd/NOTES.md step 7)
 *     query blocks
 *   more, and the K/V of all heads more    HEAD_GROUPS, where some group size keeps the static
 *     than twice SM90_L2_GROUP_BYTES       schedule within 1% of SNAKE's balance (step 43)
 *   otherwise                              SNAKE
 *
 * Why: under causal masking SNAKE runs all heads' query block M-1, then all heads' M-2, ...: the
 * 132 running tiles span every head, and a head's K/V has left the L2 by the time its next
 * query block runs (ncu, d128 causal 4k: 1.11 GB read from DRAM against cuDNN's 0.20 GB).
 * HEAD_GROUPS keeps the running tiles within a group of heads whose K/V (at most
 * SM90_L2_GROUP_BYTES; two groups meet at each turn of the order) stays in L2.
 *
 * Balance: a persistent CTA takes its tiles statically (sm90_tile_position), so its time is the
 * sum of its tiles' costs; a tile costs its key blocks plus 0.35 of one (the once-a-tile work,
 * NOTES.md step 42's trace). That sum is computed exactly, with the kernel's own tile decode,
 * for SNAKE and each candidate group size: O(tiles) host work per candidate, so the choice is
 * cached per shape (SM90_ORDER_CACHE entries under a mutex; training repeats its shapes).
 */
#ifndef CUDADENT_SM90_TILE_ORDER_CHOICE_CUH
#define CUDADENT_SM90_TILE_ORDER_CHOICE_CUH

#include <stdint.h>
#include <string.h>
#include <mutex>
#include <vector>
#include "kernels/sm90/tile_scheduler.cuh"

/* Masked calls with at most this many query blocks take the tiles head by head (HEAD_SNAKE).
 * Experiments override it from the command line (0: never). */
#ifndef SM90_HEAD_ORDER_MAX_MBLOCKS
#define SM90_HEAD_ORDER_MAX_MBLOCKS 16
#endif

/* The K/V bytes of one group of HEAD_GROUPS at most (H100 has 50 MB of L2, H200 60 MB).
 * Experiments override it (0: never HEAD_GROUPS). */
#ifndef SM90_L2_GROUP_BYTES
#define SM90_L2_GROUP_BYTES (16ll << 20)
#endif

#define SM90_ORDER_CACHE 8
#define SM90_GROUP_CANDIDATES 8

struct sm90_order_choice {
  int order, group_heads;
};

/* What the choice depends on besides the tile shape (each sm90_order_choose<BLOCK_M, BLOCK_N>
 * has its own cache); compared bytewise, so no padding: `zero` fills the last 8 bytes. */
struct sm90_order_key {
  long long kv_bytes_per_head; /* K and V bytes per query head (a GQA group shares them) */
  int m_blocks, batch_heads, grid, seqlen_q, seqlen_k, window_left, window_right, zero;
};
static_assert(sizeof(sm90_order_key) == 8 + 8 * sizeof(int), "sm90_order_key has padding");

/* The largest per-CTA sum of tile costs over the mean, for an order. */
static double sm90_order_imbalance(const sm90_order_key &k, const std::vector<float> &cost,
                                   int order, int group_heads) {
  const int heads_q = 1; /* the decode's (batch, head) split does not change the cost */
  const sm90_tile_order o =
      sm90_tile_order_make(order, k.m_blocks, heads_q, k.batch_heads, group_heads);
  const int tiles = k.m_blocks * k.batch_heads;
  std::vector<double> per_cta(k.grid, 0.0);
  double total = 0.0;
  for (int round = 0; round * k.grid < tiles; ++round)
    for (int c = 0; c < k.grid; ++c) {
      const int pos = sm90_tile_position(round, c, k.grid, order);
      if (pos >= tiles) continue;
      const double w = cost[sm90_decode_tile(pos, o).m_block];
      per_cta[c] += w;
      total += w;
    }
  double worst = 0.0;
  for (int c = 0; c < k.grid; ++c) worst = per_cta[c] > worst ? per_cta[c] : worst;
  return total > 0.0 ? worst * k.grid / total : 1.0;
}

template <int BLOCK_M, int BLOCK_N>
static sm90_order_choice sm90_order_choose_uncached(const sm90_order_key &k) {
  sm90_order_choice snake = {SM90_SCHED_SNAKE, 1};
  const long long kv_total = k.kv_bytes_per_head * k.batch_heads;
  if (SM90_L2_GROUP_BYTES <= 0 || kv_total <= 2 * (long long)SM90_L2_GROUP_BYTES) return snake;
  long long g_max = SM90_L2_GROUP_BYTES / (k.kv_bytes_per_head > 0 ? k.kv_bytes_per_head : 1);
  if (g_max < 1) g_max = 1;
  if (g_max > k.batch_heads - 1) g_max = k.batch_heads - 1;

  std::vector<float> cost(k.m_blocks);
  for (int m = 0; m < k.m_blocks; ++m) {
    int n_lo, n_hi;
    sm90_kv_range<BLOCK_M, BLOCK_N>(m, k.seqlen_q, k.seqlen_k, k.window_left, k.window_right,
                                    &n_lo, &n_hi);
    cost[m] = (n_hi > n_lo ? (float)(n_hi - n_lo) : 0.f) + 0.35f;
  }
  double best = sm90_order_imbalance(k, cost, SM90_SCHED_SNAKE, 1) + 0.01;
  sm90_order_choice choice = snake;
  int tried = 0;
  for (int g = (int)g_max; g >= 1 && tried < SM90_GROUP_CANDIDATES; --g) {
    if (k.batch_heads % g != 0) continue;
    ++tried;
    const double imb = sm90_order_imbalance(k, cost, SM90_SCHED_HEAD_GROUPS, g);
    if (imb < best - 1e-9) {
      best = imb;
      choice.order = SM90_SCHED_HEAD_GROUPS;
      choice.group_heads = g;
    }
  }
  return choice;
}

/* The order of a masked (right window) launch; kv_bytes_per_head as in sm90_order_key. */
template <int BLOCK_M, int BLOCK_N>
static sm90_order_choice sm90_order_choose(int m_blocks, int batch_heads, int grid, int seqlen_q,
                                           int seqlen_k, int window_left, int window_right,
                                           long long kv_bytes_per_head) {
  if (window_right < 0) return sm90_order_choice{SM90_SCHED_M_GROUPED, 1};
  if (m_blocks <= SM90_HEAD_ORDER_MAX_MBLOCKS) return sm90_order_choice{SM90_SCHED_HEAD_SNAKE, 1};
  sm90_order_key k;
  memset(&k, 0, sizeof k);
  k.m_blocks = m_blocks;
  k.batch_heads = batch_heads;
  k.grid = grid;
  k.seqlen_q = seqlen_q;
  k.seqlen_k = seqlen_k;
  k.window_left = window_left;
  k.window_right = window_right;
  k.kv_bytes_per_head = kv_bytes_per_head;

  static std::mutex lock;
  static sm90_order_key keys[SM90_ORDER_CACHE];
  static sm90_order_choice choices[SM90_ORDER_CACHE];
  static int used = 0, next = 0;
  {
    std::lock_guard<std::mutex> guard(lock);
    for (int i = 0; i < used; ++i)
      if (memcmp(&keys[i], &k, sizeof k) == 0) return choices[i];
  }
  const sm90_order_choice c = sm90_order_choose_uncached<BLOCK_M, BLOCK_N>(k);
  std::lock_guard<std::mutex> guard(lock);
  keys[next] = k;
  choices[next] = c;
  next = (next + 1) % SM90_ORDER_CACHE;
  if (used < SM90_ORDER_CACHE) ++used;
  return c;
}

#endif /* CUDADENT_SM90_TILE_ORDER_CHOICE_CUH */
