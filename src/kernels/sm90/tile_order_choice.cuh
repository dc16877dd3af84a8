/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * tile_order_choice.cuh - host side: the tile order (tile_scheduler.cuh) a launch of the sm90
 * forward takes.
 *
 *   no right window (non-causal)           M_GROUPED: all tiles of a head cost alike
 *   at most SM90_HEAD_ORDER_MAX_MBLOCKS    HEAD_SNAKE (§5.2)
 *     query blocks
 *   more, and the K/V of all heads more    HEAD_GROUPS, where some group size keeps the static
 *     than twice SM90_L2_GROUP_BYTES       schedule within 1% of SNAKE's balance (§5.3)
 *   otherwise                              SNAKE
 *
 * Why: under causal masking SNAKE runs all heads' query block M-1, then all heads' M-2, ...: the
 * 132 running tiles span every head, and a head's K/V has left the L2 by the time its next
 * query block runs (ncu, d128 causal 4k: 1.11 GB read from DRAM against cuDNN's 0.20 GB).
 * HEAD_GROUPS keeps the running tiles within a group of heads whose K/V (at most
 * SM90_L2_GROUP_BYTES; two groups meet at each turn of the order) stays in L2.
 *
 * Balance: a persistent CTA takes its tiles statically (cd_sm90_fwd_tile_position), so its time is
 * the sum of its tiles' costs; a tile costs its key blocks plus 0.35 of one (the once-a-tile work,
 * §5.4's trace). That sum is computed exactly, with the kernel's own tile decode,
 * for SNAKE and each candidate group size: O(tiles) host work per candidate.
 *
 * Tail (masked calls, kernels compiled with it): the round robin gives every CTA the same number
 * of tiles up to one, so it cannot even out the last rounds; the tiles of the last 2-4 rounds are
 * instead dealt out heaviest first, each to the CTA with the least work so far
 * (cd_sm90_fwd_tile_tail; §5.4). The order, its group size and the tail are cached per shape
 * (SM90_ORDER_CACHE entries under a mutex; training repeats its shapes).
 */
#ifndef CUDADENT_SM90_TILE_ORDER_CHOICE_CUH
#define CUDADENT_SM90_TILE_ORDER_CHOICE_CUH

#include <stdint.h>
#include <string.h>
#include <mutex>
#include <vector>
#include "kernels/sm90/config.cuh"
#include "kernels/sm90/tile_scheduler.cuh"

#define SM90_ORDER_CACHE 8
#define SM90_GROUP_CANDIDATES 8

struct cd_sm90_fwd_order_choice {
  int order, group_heads;
};

/* What the choice depends on besides the tile shape (each cd_sm90_fwd_order_choose<BLOCK_M,
 * BLOCK_N> has its own cache); compared bytewise, so no padding: `zero` fills the last 8 bytes. */
struct cd_sm90_fwd_order_key {
  long long kv_bytes_per_head; /* K and V bytes per query head (a GQA group shares them) */
  int m_blocks, batch_heads, grid, seqlen_q, seqlen_k, window_left, window_right, zero;
};
static_assert(sizeof(cd_sm90_fwd_order_key) == 8 + 8 * sizeof(int),
              "cd_sm90_fwd_order_key has padding");

/* Each tile's cost by query block: its key blocks plus the once-a-tile work. */
template <int BLOCK_M, int BLOCK_N>
static std::vector<float> cd_sm90_fwd_tile_costs(const cd_sm90_fwd_order_key &k) {
  std::vector<float> cost(k.m_blocks);
  for (int m = 0; m < k.m_blocks; ++m) {
    int n_lo, n_hi;
    cd_mask_kv_blocks<BLOCK_M, BLOCK_N>(m, k.seqlen_q, k.seqlen_k, k.window_left, k.window_right,
                                    &n_lo, &n_hi);
    cost[m] = (n_hi > n_lo ? (float)(n_hi - n_lo) : 0.f) + 0.35f;
  }
  return cost;
}

/* No tail: every round by the order's round robin. */
static inline void cd_sm90_fwd_tail_none(cd_sm90_fwd_tile_tail *tail, int tiles, int grid) {
  tail->base_round = (tiles + grid - 1) / grid;
}

/* Per-CTA sums of tile costs for an order, its rounds before `tail` dealt out as the tail says;
 * returns the largest sum over the mean. */
static double cd_sm90_fwd_schedule_imbalance(const cd_sm90_fwd_order_key &k,
                                             const std::vector<float> &cost, int order,
                                             int group_heads, const cd_sm90_fwd_tile_tail &tail) {
  const int heads_q = 1; /* the decode's (batch, head) split does not change the cost */
  const cd_sm90_fwd_tile_order o =
      cd_sm90_fwd_tile_order_make(order, k.m_blocks, heads_q, k.batch_heads, group_heads);
  const int tiles = k.m_blocks * k.batch_heads;
  std::vector<double> per_cta(k.grid, 0.0);
  double total = 0.0;
  for (int round = 0; round * k.grid < tiles; ++round)
    for (int c = 0; c < k.grid; ++c) {
      const int pos = cd_sm90_fwd_tile_position_tail(round, c, k.grid, order, tiles, tail);
      if (pos >= tiles) continue;
      const double w = cost[cd_sm90_fwd_decode_tile(pos, o).m_block];
      per_cta[c] += w;
      total += w;
    }
  double worst = 0.0;
  for (int c = 0; c < k.grid; ++c) worst = per_cta[c] > worst ? per_cta[c] : worst;
  return total > 0.0 ? worst * k.grid / total : 1.0;
}

/* The tail of the last `rounds` rounds: their tiles heaviest first (ties: in the order), each to
 * the CTA with the least work so far among those with fewer than `rounds` of them (ties: the
 * lowest index), after the round robin of the rounds before. At most `rounds` a CTA, so the
 * kernels loop over the round robin's rounds as without a tail (a longer loop bound in the
 * consumers tipped the d64 M128 row into ptxas's C7511, §5.4). False where the
 * table has fewer rows than `rounds`. */
static bool cd_sm90_fwd_tail_deal(cd_sm90_fwd_tile_tail *tail, const cd_sm90_fwd_order_key &k,
                                  const std::vector<float> &cost, const cd_sm90_fwd_tile_order &o,
                                  int order, int rounds) {
  if (rounds > SM90_TAIL_MAX_ROWS) return false;
  const int tiles = k.m_blocks * k.batch_heads, all = (tiles + k.grid - 1) / k.grid;
  const int base = all - rounds, first = base * k.grid;
  std::vector<double> load(k.grid, 0.0);
  for (int round = 0; round < base; ++round)
    for (int c = 0; c < k.grid; ++c) {
      const int pos = cd_sm90_fwd_tile_position(round, c, k.grid, order);
      if (pos < tiles) load[c] += cost[cd_sm90_fwd_decode_tile(pos, o).m_block];
    }
  /* the tail's tiles by cost, heaviest first, stable (insertion sort: a few rounds' tiles) */
  std::vector<int> rest;
  std::vector<float> w;
  for (int pos = first; pos < tiles; ++pos) {
    const float x = cost[cd_sm90_fwd_decode_tile(pos, o).m_block];
    size_t i = rest.size();
    rest.push_back(pos);
    w.push_back(x);
    for (; i > 0 && w[i - 1] < x; --i) {
      rest[i] = rest[i - 1];
      w[i] = w[i - 1];
    }
    rest[i] = pos;
    w[i] = x;
  }
  std::vector<std::vector<int>> list(k.grid);
  for (size_t i = 0; i < rest.size(); ++i) {
    int best = -1;
    for (int c = 0; c < k.grid; ++c)
      if ((int)list[c].size() < rounds && (best < 0 || load[c] < load[best])) best = c;
    load[best] += w[i]; /* some CTA has room: rest.size() <= rounds * grid */
    list[best].push_back(rest[i] - first);
  }
  for (int i = 0; i < rounds; ++i)
    for (int c = 0; c < k.grid; ++c)
      tail->pos[cd_sm90_fwd_tile_position(base + i, c, k.grid, order) - first] =
          i < (int)list[c].size() ? (unsigned short)list[c][i] : (unsigned short)SM90_TAIL_NONE;
  tail->base_round = base;
  return true;
}

/* The tail for an order: the fewest dealt rounds (2 .. SM90_TAIL_ROUNDS, each CTA at most one
 * tile a round) whose busiest CTA is within 0.2% of the least loaded one, where
 * that beats the round robin by more than 0.2%. Fewest: the dealt tiles run heaviest first
 * across heads, so the more rounds, the more heads whose K/V must stay in L2 at once (d128
 * causal 512, nearly bound by DRAM, gained nothing from 4 rounds; §5.4). */
static void cd_sm90_fwd_tail_choose(cd_sm90_fwd_tile_tail *tail, const cd_sm90_fwd_order_key &k,
                                const std::vector<float> &cost, int order, int group_heads) {
  const int tiles = k.m_blocks * k.batch_heads, all = (tiles + k.grid - 1) / k.grid;
  cd_sm90_fwd_tail_none(tail, tiles, k.grid);
  if (k.grid > SM90_TAIL_MAX_CTAS) return;
  double best = cd_sm90_fwd_schedule_imbalance(k, cost, order, group_heads, *tail) * (1.0 - 0.002);
  const int heads_q = 1;
  const cd_sm90_fwd_tile_order o =
      cd_sm90_fwd_tile_order_make(order, k.m_blocks, heads_q, k.batch_heads, group_heads);
  cd_sm90_fwd_tile_tail trial;
  for (int rounds = 2; rounds <= SM90_TAIL_ROUNDS && rounds <= all; ++rounds) {
    if (!cd_sm90_fwd_tail_deal(&trial, k, cost, o, order, rounds)) continue;
    const double imb = cd_sm90_fwd_schedule_imbalance(k, cost, order, group_heads, trial);
    if (imb < best) {
      best = imb * (1.0 - 0.002);
      *tail = trial;
    }
  }
}

template <int BLOCK_M, int BLOCK_N>
static cd_sm90_fwd_order_choice cd_sm90_fwd_order_choose_uncached(const cd_sm90_fwd_order_key &k,
                                                          const std::vector<float> &cost) {
  if (k.m_blocks <= SM90_HEAD_ORDER_MAX_MBLOCKS)
    return cd_sm90_fwd_order_choice{SM90_SCHED_HEAD_SNAKE, 1};
  cd_sm90_fwd_order_choice snake = {SM90_SCHED_SNAKE, 1};
  const long long kv_total = k.kv_bytes_per_head * k.batch_heads;
  if (SM90_L2_GROUP_BYTES <= 0 || kv_total <= 2 * (long long)SM90_L2_GROUP_BYTES) return snake;
  long long g_max = SM90_L2_GROUP_BYTES / (k.kv_bytes_per_head > 0 ? k.kv_bytes_per_head : 1);
  if (g_max < 1) g_max = 1;
  if (g_max > k.batch_heads - 1) g_max = k.batch_heads - 1;

  const int tiles = k.m_blocks * k.batch_heads;
  cd_sm90_fwd_tile_tail none;
  cd_sm90_fwd_tail_none(&none, tiles, k.grid);
  double best = cd_sm90_fwd_schedule_imbalance(k, cost, SM90_SCHED_SNAKE, 1, none) + 0.01;
  cd_sm90_fwd_order_choice choice = snake;
  int tried = 0;
  for (int g = (int)g_max; g >= 1 && tried < SM90_GROUP_CANDIDATES; --g) {
    if (k.batch_heads % g != 0) continue;
    ++tried;
    const double imb = cd_sm90_fwd_schedule_imbalance(k, cost, SM90_SCHED_HEAD_GROUPS, g, none);
    if (imb < best - 1e-9) {
      best = imb;
      choice.order = SM90_SCHED_HEAD_GROUPS;
      choice.group_heads = g;
    }
  }
  return choice;
}

/* The order of a launch and its tail (tile_scheduler.cuh; none where kTail is false: kernels
 * compiled without it); kv_bytes_per_head as in cd_sm90_fwd_order_key. */
template <int BLOCK_M, int BLOCK_N, bool kTail = true>
static cd_sm90_fwd_order_choice cd_sm90_fwd_order_choose(int m_blocks, int batch_heads, int grid,
                                                         int seqlen_q, int seqlen_k,
                                                         int window_left, int window_right,
                                                         long long kv_bytes_per_head,
                                                         cd_sm90_fwd_tile_tail *tail) {
  if (window_right < 0) { /* equal tiles: the round robin is as even as whole tiles get */
    cd_sm90_fwd_tail_none(tail, m_blocks * batch_heads, grid);
    return cd_sm90_fwd_order_choice{SM90_SCHED_M_GROUPED, 1};
  }
  if (!kTail && m_blocks <= SM90_HEAD_ORDER_MAX_MBLOCKS) { /* nothing to compute: no cache */
    cd_sm90_fwd_tail_none(tail, m_blocks * batch_heads, grid);
    return cd_sm90_fwd_order_choice{SM90_SCHED_HEAD_SNAKE, 1};
  }
  cd_sm90_fwd_order_key k;
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
  static cd_sm90_fwd_order_key keys[SM90_ORDER_CACHE];
  static cd_sm90_fwd_order_choice choices[SM90_ORDER_CACHE];
  static cd_sm90_fwd_tile_tail tails[SM90_ORDER_CACHE];
  static int used = 0, next = 0;
  {
    std::lock_guard<std::mutex> guard(lock);
    for (int i = 0; i < used; ++i)
      if (memcmp(&keys[i], &k, sizeof k) == 0) {
        *tail = tails[i];
        return choices[i];
      }
  }
  const std::vector<float> cost = cd_sm90_fwd_tile_costs<BLOCK_M, BLOCK_N>(k);
  const cd_sm90_fwd_order_choice c = cd_sm90_fwd_order_choose_uncached<BLOCK_M, BLOCK_N>(k, cost);
  if (kTail) cd_sm90_fwd_tail_choose(tail, k, cost, c.order, c.group_heads);
  else cd_sm90_fwd_tail_none(tail, m_blocks * batch_heads, grid);
  std::lock_guard<std::mutex> guard(lock);
  keys[next] = k;
  choices[next] = c;
  tails[next] = *tail;
  next = (next + 1) % SM90_ORDER_CACHE;
  if (used < SM90_ORDER_CACHE) ++used;
  return c;
}

#endif /* CUDADENT_SM90_TILE_ORDER_CHOICE_CUH */
