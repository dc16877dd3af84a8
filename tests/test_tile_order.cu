/*
 * test_tile_order.cu - CPU tests of the sm90 forward's tile orders (kernels/sm90/tile_scheduler.cuh)
 * and of the host's choice among them (kernels/sm90/tile_order_choice.cuh). Host code only: the
 * decode below is the kernel's own (__host__ __device__), walked the way the persistent CTAs
 * walk it. Also the sm90 backward's walks, turns and persistent stride (kernels/sm90/bwd_schedule.cuh), block ranges
 * (kernels/common/mask_rule.cuh), the 80-row tile's dQ layout (kernels/sm90/bwd_dq_layout.cuh) and
 * the pre kernels' rows and zero stores (kernels/sm90/bwd_pre_map.cuh).
 */
#include <stdlib.h>

#include "harness.h"
#include "kernels/common/mask_rule.cuh"
#include "kernels/sm90/bwd_dq_layout.cuh"
#include "kernels/sm90/bwd_pre_map.cuh"
#include "kernels/sm90/bwd_schedule.cuh"
#include "kernels/sm90/tile_order_choice.cuh"

/* cd_sm90_fwd_div against the division, on edges and a pseudo-random sweep */
static int tile_order_divisor(void) {
  const int ds[] = {1, 2, 3, 5, 7, 16, 31, 32, 33, 100, 132, 1000, 65535, 65536, 1 << 20,
                    (1 << 30) + 7, 0x7fffffff};
  unsigned x = 12345u;
  for (int d : ds) {
    const cd_sm90_fwd_divisor v = cd_sm90_fwd_divisor_make(d);
    const long long ns[] = {0, 1, d - 1ll, d, d + 1ll, 2ll * d - 1, 0x7ffffffe, 0x7fffffff};
    for (long long n : ns)
      if (n <= 0x7fffffff)
        T_CHECK(cd_sm90_fwd_div((int)n, v) == (int)n / d, "%lld / %d: %d", n, d,
                cd_sm90_fwd_div((int)n, v));
    for (int i = 0; i < 20000; ++i) {
      x = x * 1664525u + 1013904223u;
      const int n = (int)(x >> 1);
      T_CHECK(cd_sm90_fwd_div(n, v) == n / d, "%d / %d: %d", n, d, cd_sm90_fwd_div(n, v));
    }
  }
  return T_PASS;
}

/* Every (batch, head, query block) exactly once, over the rounds and CTAs of a persistent grid. */
static int covers_once(int order, int m_blocks, int heads_q, int batch, int group_heads,
                       int grid) {
  const int bh = heads_q * batch, tiles = m_blocks * bh;
  const cd_sm90_fwd_tile_order o =
      cd_sm90_fwd_tile_order_make(order, m_blocks, heads_q, bh, group_heads);
  std::vector<int> seen(tiles, 0);
  for (int round = 0; round * grid < tiles; ++round)
    for (int c = 0; c < grid; ++c) {
      const int pos = cd_sm90_fwd_tile_position(round, c, grid, order);
      if (pos >= tiles) continue;
      const cd_sm90_fwd_tile_coord t = cd_sm90_fwd_decode_tile(pos, o);
      if (order != SM90_SCHED_HEAD_GROUPS) { /* the kernels compiled without HEAD_GROUPS agree */
        const cd_sm90_fwd_tile_coord u = cd_sm90_fwd_decode_tile<false>(pos, o);
        if (cd_sm90_fwd_tile_position<false>(round, c, grid, order) != pos || u.batch != t.batch ||
            u.head != t.head || u.m_block != t.m_block) {
          printf("    order %d: kHeadGroups = false decodes pos %d differently\n", order, pos);
          return 0;
        }
      }
      if (t.batch < 0 || t.batch >= batch || t.head < 0 || t.head >= heads_q || t.m_block < 0 ||
          t.m_block >= m_blocks) {
        printf("    order %d M %d H %d B %d G %d: pos %d -> (%d, %d, %d) out of range\n", order,
               m_blocks, heads_q, batch, group_heads, pos, t.batch, t.head, t.m_block);
        return 0;
      }
      ++seen[(t.batch * heads_q + t.head) * m_blocks + t.m_block];
    }
  for (int i = 0; i < tiles; ++i)
    if (seen[i] != 1) {
      printf("    order %d M %d H %d B %d G %d: tile %d seen %d times\n", order, m_blocks,
             heads_q, batch, group_heads, i, seen[i]);
      return 0;
    }
  return 1;
}

static int tile_order_covers_every_tile_once(void) {
  const int shapes[][3] = {{1, 1, 1}, {17, 3, 2}, {32, 16, 4}, {64, 16, 2}, {22, 32, 4},
                           {43, 8, 3}, {5, 7, 5}, {128, 16, 1}, {40, 12, 1}};
  const int grids[] = {1, 7, 132};
  for (const auto &s : shapes)
    for (int grid : grids) {
      for (int order = SM90_SCHED_M_FASTEST; order <= SM90_SCHED_HEAD_SNAKE; ++order)
        T_CHECK(covers_once(order, s[0], s[1], s[2], 1, grid), "order %d", order);
      const int bh = s[1] * s[2];
      for (int g = 1; g <= bh; ++g)
        if (bh % g == 0)
          T_CHECK(covers_once(SM90_SCHED_HEAD_GROUPS, s[0], s[1], s[2], g, grid),
                  "head groups of %d", g);
    }
  return T_PASS;
}

/* HEAD_GROUPS: a group's tiles are consecutive, its heads only, its query blocks level by
 * level; the last group descends and the direction alternates before it. */
static int tile_order_head_groups_shape(void) {
  const int m_blocks = 6, heads_q = 4, batch = 3, g = 3, bh = heads_q * batch;
  const cd_sm90_fwd_tile_order o =
      cd_sm90_fwd_tile_order_make(SM90_SCHED_HEAD_GROUPS, m_blocks, heads_q, bh, g);
  const int groups = bh / g;
  for (int pos = 0; pos < m_blocks * bh; ++pos) {
    const cd_sm90_fwd_tile_coord t = cd_sm90_fwd_decode_tile(pos, o);
    const int group = pos / (g * m_blocks), level = (pos % (g * m_blocks)) / g;
    const int head = t.batch * heads_q + t.head;
    T_CHECK(head / g == group, "pos %d: head %d outside group %d", pos, head, group);
    const bool descending = (groups - 1 - group) % 2 == 0;
    T_CHECK(t.m_block == (descending ? m_blocks - 1 - level : level), "pos %d: block %d", pos,
            t.m_block);
  }
  return T_PASS;
}

/* The choice: non-causal, few query blocks, K/V that fit in L2, and the FA3 suite's long causal
 * shapes (where HEAD_GROUPS must be taken, its groups within the L2 budget and its balance
 * within 1% of SNAKE's), and the shapes of tests/python's L2 case. */
static int tile_order_choice(void) {
  const long long d128 = 128 * 4, d64 = 64 * 4; /* K and V bytes per key and head */
  cd_sm90_fwd_tile_tail tail;
  cd_sm90_fwd_order_choice c =
      cd_sm90_fwd_order_choose<128, 128>(32, 64, 132, 4096, 4096, -1, -1, 4096 * d128, &tail);
  T_CHECK(c.order == SM90_SCHED_M_GROUPED, "non-causal: order %d", c.order);
  T_CHECK(tail.base_round == 16, "non-causal: tail from round %d of 16", tail.base_round);
  c = cd_sm90_fwd_order_choose<128, 128>(16, 128, 132, 2048, 2048, -1, 0, 2048 * d128, &tail);
  T_CHECK(c.order == SM90_SCHED_HEAD_SNAKE, "causal 2k: order %d", c.order);
  /* a kernel compiled without the tail (the d64 M192 rows, the no-LSE d64 M128 row) never gets one */
  c = cd_sm90_fwd_order_choose<128, 128, false>(4, 1024, 132, 512, 512, -1, 0, 512 * d64, &tail);
  T_CHECK(c.order == SM90_SCHED_HEAD_SNAKE && tail.base_round == 32,
          "d64 causal 512 without the tail: order %d, tail from round %d of 32", c.order,
          tail.base_round);
  c = cd_sm90_fwd_order_choose<192, 128, false>(11, 256, 132, 2048, 2048, -1, 0, 2048 * d64, &tail);
  T_CHECK(tail.base_round == 22, "d64 causal 2k (M192) without the tail: from round %d of 22",
          tail.base_round);
  c = cd_sm90_fwd_order_choose<128, 128>(32, 4, 128, 4096, 4096, -1, 0, 4096 * d128, &tail);
  T_CHECK(c.order == SM90_SCHED_SNAKE, "8 MB of K/V: order %d", c.order);

  struct {
    int block_m, seqlen, batch_heads, heads_ratio;
    long long per_key;
  } const cases[] = {
      {128, 4096, 64, 1, d128},  {128, 8192, 32, 1, d128}, {128, 16384, 16, 1, d128},
      {192, 4096, 128, 1, d64},  {192, 8192, 64, 1, d64},  {192, 16384, 32, 1, d64},
      {128, 4096, 128, 1, d64},  {128, 2176, 64, 2, d128}, {192, 3300, 64, 1, d64},
  };
  for (const auto &s : cases) {
    const int m_blocks = (s.seqlen + s.block_m - 1) / s.block_m;
    const long long kv = s.seqlen * s.per_key / s.heads_ratio;
    const int grid = m_blocks * s.batch_heads < 132 ? m_blocks * s.batch_heads : 132;
    c = s.block_m == 128 ? cd_sm90_fwd_order_choose<128, 128>(m_blocks, s.batch_heads, grid,
                                                              s.seqlen, s.seqlen, -1, 0, kv, &tail)
                         : cd_sm90_fwd_order_choose<192, 128>(m_blocks, s.batch_heads, grid,
                                                              s.seqlen, s.seqlen, -1, 0, kv, &tail);
    T_CHECK(c.order == SM90_SCHED_HEAD_GROUPS, "M %d S %d BH %d: order %d", s.block_m, s.seqlen,
            s.batch_heads, c.order);
    T_CHECK(s.batch_heads % c.group_heads == 0 && c.group_heads < s.batch_heads &&
                c.group_heads * kv <= SM90_L2_GROUP_BYTES,
            "S %d BH %d: group of %d", s.seqlen, s.batch_heads, c.group_heads);
    cd_sm90_fwd_order_key k;
    memset(&k, 0, sizeof k);
    k.m_blocks = m_blocks;
    k.batch_heads = s.batch_heads;
    k.grid = grid;
    std::vector<float> cost(m_blocks);
    for (int m = 0; m < m_blocks; ++m) /* causal, equal lengths: blocks up to the diagonal */
      cost[m] = (float)(((m + 1) * s.block_m + 127) / 128 < (s.seqlen + 127) / 128
                            ? ((m + 1) * s.block_m + 127) / 128
                            : (s.seqlen + 127) / 128) +
                0.35f;
    cd_sm90_fwd_tile_tail none;
    cd_sm90_fwd_tail_none(&none, m_blocks * s.batch_heads, grid);
    const double snake = cd_sm90_fwd_schedule_imbalance(k, cost, SM90_SCHED_SNAKE, 1, none);
    const double groups =
        cd_sm90_fwd_schedule_imbalance(k, cost, SM90_SCHED_HEAD_GROUPS, c.group_heads, none);
    printf("    M %d S %d BH %d: groups of %d, makespan / mean %.4f (SNAKE %.4f)\n", s.block_m,
           s.seqlen, s.batch_heads, c.group_heads, groups, snake);
    T_CHECK(groups <= snake + 0.01, "imbalance %.4f against SNAKE's %.4f", groups, snake);
  }
  return T_PASS;
}

/* The tail (tile_scheduler.cuh, tile_order_choice.cuh), as the planner makes it for kernels
 * compiled with it (the d128 rows and the LSE d64 M128 row; the M192 shapes test the planner): with
 * it every tile still runs exactly once within the round robin's rounds (the kernels' loop); the FA3 suite's
 * short causal shapes get one, and
 * it brings their busiest CTA within 2% of the mean (3.1% over without); masked calls with a
 * left window and odd lengths too; never a busier CTA than without. */
static int tile_order_tail(void) {
  struct {
    int block_m, seqlen_q, seqlen_k, batch_heads, window_left, grid;
    bool must_have_tail;
  } const cases[] = {
      {128, 512, 512, 1024, -1, 132, true},  /* d64 causal 512 (M128) */
      {128, 1024, 1024, 512, -1, 132, true}, /* d64 causal 1k */
      {128, 512, 512, 512, -1, 132, true},   /* d128 causal 512 (gpu_check.sh sanitizes it at d64) */
      {128, 1024, 1024, 256, -1, 132, true}, /* d128 causal 1k */
      {128, 2048, 2048, 128, -1, 132, true}, /* d128 causal 2k */
      {192, 2048, 2048, 256, -1, 132, false}, {128, 1000, 700, 32, -1, 132, false},
      {128, 700, 1300, 36, 300, 114, false},  {128, 4096, 4096, 64, -1, 132, false},
      {192, 3000, 3000, 7, 500, 132, false},  {128, 130, 200, 8, -1, 7, false},
  };
  for (const auto &s : cases) {
    const int m_blocks = (s.seqlen_q + s.block_m - 1) / s.block_m;
    const int tiles = m_blocks * s.batch_heads;
    const long long kv = (long long)s.seqlen_k * 512;
    cd_sm90_fwd_tile_tail tail;
    const cd_sm90_fwd_order_choice c =
        s.block_m == 128
            ? cd_sm90_fwd_order_choose<128, 128>(m_blocks, s.batch_heads, s.grid, s.seqlen_q,
                                                 s.seqlen_k, s.window_left, 0, kv, &tail)
            : cd_sm90_fwd_order_choose<192, 128>(m_blocks, s.batch_heads, s.grid, s.seqlen_q,
                                                 s.seqlen_k, s.window_left, 0, kv, &tail);
    const int all = (tiles + s.grid - 1) / s.grid;
    T_CHECK(tail.base_round <= all, "tail from round %d of %d", tail.base_round, all);
    const cd_sm90_fwd_tile_order o =
        cd_sm90_fwd_tile_order_make(c.order, m_blocks, 1, s.batch_heads, c.group_heads);
    std::vector<int> seen(tiles, 0);
    /* the kernels loop over the round robin's rounds, with a tail or without */
    for (int round = 0; round < all; ++round)
      for (int cta = 0; cta < s.grid; ++cta) {
        const int pos = cd_sm90_fwd_tile_position_tail(round, cta, s.grid, c.order, tiles, tail);
        if (pos >= tiles) continue;
        T_CHECK(pos >= 0, "round %d cta %d: position %d", round, cta, pos);
        ++seen[pos];
        const cd_sm90_fwd_tile_coord t = cd_sm90_fwd_decode_tile(pos, o);
        T_CHECK(t.m_block >= 0 && t.m_block < m_blocks, "query block %d", t.m_block);
      }
    for (int pos = 0; pos < tiles; ++pos)
      T_CHECK(seen[pos] == 1, "S %d BH %d grid %d: tile %d ran %d times", s.seqlen_q,
              s.batch_heads, s.grid, pos, seen[pos]);
    cd_sm90_fwd_order_key k;
    memset(&k, 0, sizeof k);
    k.m_blocks = m_blocks;
    k.batch_heads = s.batch_heads;
    k.grid = s.grid;
    k.seqlen_q = s.seqlen_q;
    k.seqlen_k = s.seqlen_k;
    k.window_left = s.window_left;
    k.window_right = 0;
    const std::vector<float> cost = s.block_m == 128 ? cd_sm90_fwd_tile_costs<128, 128>(k)
                                                     : cd_sm90_fwd_tile_costs<192, 128>(k);
    cd_sm90_fwd_tile_tail none;
    cd_sm90_fwd_tail_none(&none, tiles, s.grid);
    const double before = cd_sm90_fwd_schedule_imbalance(k, cost, c.order, c.group_heads, none);
    const double after = cd_sm90_fwd_schedule_imbalance(k, cost, c.order, c.group_heads, tail);
    printf("    M %d Sq %d Sk %d BH %d window %d grid %d: order %d, tail from round %d of %d, "
           "busiest / mean %.4f (%.4f without)\n",
           s.block_m, s.seqlen_q, s.seqlen_k, s.batch_heads, s.window_left, s.grid, c.order,
           tail.base_round, all, after, before);
    T_CHECK(after <= before + 1e-9, "the tail made it worse: %.4f against %.4f", after, before);
    if (s.must_have_tail)
      T_CHECK(tail.base_round < all && after < 1.02 && before > 1.03,
              "FA3 short causal shape: tail from round %d of %d, %.4f (%.4f without)",
              tail.base_round, all, after, before);
  }
  return T_PASS;
}

/* The sm90 backward's grouped launch order (bwd_schedule.cuh): every (key block, KV head, batch)
 * exactly once; within a group, key blocks never decrease with the launch index (so a causal
 * call's heaviest CTAs start first); a group holds `group` chains (the last one the rest). */
static int bwd_grouped_order(void) {
  const int shapes[][3] = {{32, 8, 4}, {64, 8, 2}, {1, 1, 1}, {7, 3, 5}, {128, 16, 1}, {3, 13, 2}};
  const int groups[] = {1, 2, 4, 5, 64};
  for (const auto &sh : shapes)
    for (int group : groups) {
      const int nb = sh[0], hkv = sh[1], batch = sh[2];
      const int64_t chains = (int64_t)hkv * batch, total = nb * chains;
      std::vector<int> seen(total, 0);
      int prev_n = -1, prev_group = -1;
      for (int64_t l = 0; l < total; ++l) {
        int n, hk, b;
        cd_sm90_bwd_grouped_work(l, nb, hkv, chains, group, &n, &hk, &b);
        T_CHECK(n >= 0 && n < nb && hk >= 0 && hk < hkv && b >= 0 && b < batch,
                "nb %d hkv %d batch %d group %d: launch %lld -> (%d, %d, %d) out of range", nb, hkv,
                batch, group, (long long)l, n, hk, b);
        const int64_t cell = ((int64_t)b * hkv + hk) * nb + n;
        T_CHECK(++seen[cell] == 1, "(%d, %d, %d) twice", n, hk, b);
        const int g = (int)((((int64_t)b * hkv + hk)) / group);
        T_CHECK(g >= prev_group, "launch %lld: group %d after group %d", (long long)l, g, prev_group);
        if (g != prev_group) prev_n = -1;
        T_CHECK(n >= prev_n, "launch %lld: key block %d after %d in one group", (long long)l, n,
                prev_n);
        prev_n = n;
        prev_group = g;
      }
    }
  return T_PASS;
}

/* The persistent backward's static stride (bwd_schedule.cuh cd_sm90_bwd_persist_grid / _unit, as
 * bwd_persist.cuh walks it): for several (units, SMs) the grid is min(units, SMs); every launch
 * index below `units` is taken by exactly one CTA, each CTA's sequence increases (its k-th unit
 * at launch index cta + k * grid), and the CTAs' unit counts differ by at most one (equal work:
 * balanced). A stride off by one skips or repeats indices; a grid of max(units, SMs) fails the
 * first check. */
static int bwd_persist_stride(void) {
  const long long unit_counts[] = {1, 2, 7, 131, 132, 133, 263, 264, 2048, 4096, 4224, 65537};
  const int sms_list[] = {1, 2, 3, 66, 114, 132, 144};
  for (long long units : unit_counts)
    for (int sms : sms_list) {
      const int grid = cd_sm90_bwd_persist_grid(units, sms);
      T_CHECK(grid >= 1 && grid == (units < sms ? units : sms), "units %lld SMs %d: grid %d", units, sms, grid);
      std::vector<int> seen((size_t)units, 0);
      long long min_count = units + 1, max_count = -1;
      for (int c = 0; c < grid; ++c) {
        long long prev = -1, count = 0;
        for (int k = 0;; ++k) {
          const int64_t l = cd_sm90_bwd_persist_unit(c, k, grid);
          if (l >= units) break;
          T_CHECK(l >= 0 && l > prev, "units %lld SMs %d: CTA %d unit %d at launch index %lld after %lld", units,
                  sms, c, k, (long long)l, prev);
          T_CHECK(++seen[(size_t)l] == 1, "units %lld SMs %d: launch index %lld taken twice", units, sms,
                  (long long)l);
          prev = l;
          T_CHECK(++count <= units, "units %lld SMs %d: CTA %d does not stop", units, sms, c);
        }
        if (count < min_count) min_count = count;
        if (count > max_count) max_count = count;
      }
      for (long long l = 0; l < units; ++l)
        T_CHECK(seen[(size_t)l] == 1, "units %lld SMs %d: launch index %lld taken %d times", units, sms, l,
                seen[(size_t)l]);
      T_CHECK(max_count - min_count <= 1 && min_count >= 1, "units %lld SMs %d: %lld .. %lld units a CTA", units,
              sms, min_count, max_count);
    }
  return T_PASS;
}

/* The backward's block ranges against a brute force over rows: which key blocks n and query
 * blocks m hold a visible (row, key) pair (row i sees key j iff j in [i + shift - wl, i + shift +
 * wr] and j < seqlen_k, a negative window side unbounded). A K/V-stationary CTA walks the query
 * blocks cd_mask_q_blocks gives it; a dQ tile's contributors, ordered by the deterministic turns,
 * are the key blocks cd_mask_kv_blocks gives it; both must be exactly the pairs that interact, for every length and
 * window and the backward's tiles (BM x BN: 128 x 128 d64, 64 x 128 d96 / d128, 80 x 128 the
 * 80-row tile, 64 x 64 the wide rows, 64 x 96 E3, 64 x 80 E5). And the query blocks with no
 * contributor are the prefix [0, m_lo of key block 0) (the fused post of sm90_bwd_next.md
 * experiment 8, rejected, relied on it; any design that writes those rows at key block 0 does). */
template <int BM, int BN>
static int bwd_block_ranges_one(int sq, int sk, int wl, int wr) {
  const int nm = (sq + BM - 1) / BM, nb = (sk + BN - 1) / BN;
  const int64_t shift = (int64_t)sk - sq;
  std::vector<char> hit((size_t)nm * nb, 0);
  for (int i = 0; i < sq; ++i) {
    const int64_t a = wl < 0 ? 0 : (i + shift - wl < 0 ? 0 : i + shift - wl);
    const int64_t z = wr < 0 ? sk - 1 : (i + shift + wr > sk - 1 ? sk - 1 : i + shift + wr);
    for (int64_t n = a / BN; a <= z && n <= z / BN; ++n) hit[(size_t)(i / BM) * nb + n] = 1;
  }
  int first_hit = nm; /* the first query block with a contributor */
  for (int m = 0; m < nm; ++m) {
    int n_lo, n_hi;
    cd_mask_kv_blocks<BM, BN>(m, sq, sk, wl, wr, &n_lo, &n_hi);
    for (int n = 0; n < nb; ++n)
      T_CHECK(hit[(size_t)m * nb + n] == (n >= n_lo && n < n_hi),
              "BM %d BN %d sq %d sk %d wl %d wr %d: query block %d, key block %d: interacts %d, kv_blocks [%d, %d)",
              BM, BN, sq, sk, wl, wr, m, n, hit[(size_t)m * nb + n], n_lo, n_hi);
    if (n_hi > n_lo && first_hit == nm) first_hit = m;
    if (n_hi <= n_lo)
      T_CHECK(first_hit == nm, "BM %d BN %d sq %d sk %d wl %d wr %d: query block %d sees no key after %d did",
                 BM, BN, sq, sk, wl, wr, m, first_hit);
  }
  for (int n = 0; n < nb; ++n) {
    int m_lo, m_hi;
    const int k0 = n * BN, k1 = (k0 + BN < sk ? k0 + BN : sk) - 1;
    cd_mask_q_blocks(k0, k1, sq, sk, wl, wr, BM, &m_lo, &m_hi);
    for (int m = 0; m < nm; ++m)
      T_CHECK(hit[(size_t)m * nb + n] == (m >= m_lo && m < m_hi),
              "BM %d BN %d sq %d sk %d wl %d wr %d: key block %d, query block %d: interacts %d, q_blocks [%d, %d)",
              BM, BN, sq, sk, wl, wr, n, m, hit[(size_t)m * nb + n], m_lo, m_hi);
    if (n == 0) T_CHECK(m_lo == (first_hit == nm ? 0 : first_hit) || (m_lo == m_hi && first_hit == nm),
                        "BM %d BN %d sq %d sk %d wl %d wr %d: no-key prefix [0, %d), key block 0 from %d",
                        BM, BN, sq, sk, wl, wr, first_hit, m_lo);
  }
  return T_PASS;
}

static int bwd_block_ranges(void) {
  unsigned x = 2024u;
  auto rnd = [&](int n) { x = x * 1664525u + 1013904223u; return (int)((x >> 8) % (unsigned)n); };
  for (int c = 0; c < 1500; ++c) {
    const int sq = 1 + rnd(c % 3 == 0 ? 70 : 900), sk = 1 + rnd(c % 4 == 1 ? 70 : 900);
    const int kind = rnd(5); /* none, causal, sliding, random sides, one side */
    int wl = -1, wr = -1;
    if (kind == 1) wr = 0;
    if (kind == 2) { wl = rnd(200); wr = 0; }
    if (kind == 3) { wl = rnd(3) ? rnd(sk) : -1; wr = rnd(3) ? rnd(sq) : -1; }
    if (kind == 4) { if (rnd(2)) wl = rnd(sk); else wr = rnd(sq); }
    /* api.c's normalization: window_left < seqlen_k, window_right < seqlen_q (mask_rule.cuh) */
    if (wl >= sk) wl = sk - 1;
    if (wr >= sq) wr = sq - 1;
    int r = T_PASS;
    r |= bwd_block_ranges_one<128, 128>(sq, sk, wl, wr);
    r |= bwd_block_ranges_one<64, 128>(sq, sk, wl, wr);
    r |= bwd_block_ranges_one<80, 128>(sq, sk, wl, wr);
    r |= bwd_block_ranges_one<64, 64>(sq, sk, wl, wr);
    r |= bwd_block_ranges_one<64, 96>(sq, sk, wl, wr);
    r |= bwd_block_ranges_one<64, 80>(sq, sk, wl, wr);
    if (r != T_PASS) return r;
  }
  return T_PASS;
}

/* The sm90 deterministic backward's rotated walks (bwd_schedule.cuh), nb <= nm: each key block's
 * walk visits every query block once; at each query block the turns of the nb key blocks are
 * 0 .. nb - 1 in the order of the steps at which they reach it; and a lockstep run (all key blocks
 * at step j together) never finds a block whose turn has not come, so none waits. */
static int bwd_rotated_turns(void) {
  for (int nm = 1; nm <= 40; ++nm)
    for (int nb = 1; nb <= nm; ++nb) {
      std::vector<int> step_at(nb * nm, -1), done(nm, 0);
      for (int n = 0; n < nb; ++n)
        for (int j = 0; j < nm; ++j) {
          const int m = cd_sm90_bwd_rotated_m(j, 0, nm, n);
          T_CHECK(m >= 0 && m < nm && step_at[n * nm + m] < 0, "nm %d nb %d: block %d step %d -> %d",
                  nm, nb, n, j, m);
          step_at[n * nm + m] = j;
        }
      for (int m = 0; m < nm; ++m)
        for (int n = 0; n < nb; ++n) {
          int earlier = 0;
          for (int o = 0; o < nb; ++o) earlier += step_at[o * nm + m] < step_at[n * nm + m];
          const int turn = cd_sm90_bwd_rotated_turn(n, m, nb);
          T_CHECK(turn == earlier, "nm %d nb %d: block %d at query block %d: turn %d, %d reach it first",
                  nm, nb, n, m, turn, earlier);
        }
      for (int j = 0; j < nm; ++j) { /* lockstep: every block's turn has come when it arrives */
        for (int n = 0; n < nb; ++n) {
          const int m = cd_sm90_bwd_rotated_m(j, 0, nm, n);
          T_CHECK(done[m] == cd_sm90_bwd_rotated_turn(n, m, nb),
                  "nm %d nb %d step %d: block %d waits at query block %d (%d done, turn %d)", nm, nb,
                  j, n, m, done[m], cd_sm90_bwd_rotated_turn(n, m, nb));
        }
        for (int n = 0; n < nb; ++n) ++done[cd_sm90_bwd_rotated_m(j, 0, nm, n)];
      }
    }
  return T_PASS;
}

/* The 80-row tile's dQ split (config.cuh SM90_BWD_BM80_DQ_SPLIT, bwd_dq_layout.cuh): consumer 0's
 * lane of warp w adds its register 4i + c at float cd_sm90_bwd_dq80_lane_off(w, lane) + 128 i + c of
 * the query block's accumulator tile (bwd_parts.cuh cd_sm90_bwd_reduce_dq, whose loop steps 128
 * floats), consumer 1's warp w bulk-reduces chunk 4 + w whole (its staging, in the same order).
 * Every float of the 80 x 128 tile is added exactly once, and the post's reading of each red-added
 * float (cd_sm90_bwd_dq_frag_t: components x, y, z, w at (row, col), (row + 1, col), (row, col + 8),
 * (row + 1, col + 8)) is the dQ element the register holds: dQ^T fragment element 4j + 2r + e of
 * consumer cw's warp is D column 64 cw + 16 warp + lane / 4 + 8r, query row 8j + 2 (lane % 4) + e
 * (bwd_kernel.cuh). And the post's map takes the tile's float4s to every element exactly once. */
static int bwd_dq_split80(void) {
  const int PART = CD_SM90_BWD_DQ80_PART_FLOATS, TILE = 8 * PART, ROWS = 80, COLS = 128;
  T_CHECK(TILE == ROWS * COLS, "8 parts of %d floats for an 80 x 128 tile", PART);
  std::vector<int> added(TILE, 0), seen(TILE, 0);
  for (int warp = 0; warp < 4; ++warp)
    for (int lane = 0; lane < 32; ++lane)
      for (int i = 0; i < ROWS / 8; ++i)
        for (int c = 0; c < 4; ++c) {
          const uint32_t f = cd_sm90_bwd_dq80_lane_off(warp, lane) + 128u * i + c;
          T_CHECK(f < (uint32_t)TILE, "warp %d lane %d register %d: float %u past the tile", warp, lane,
                  4 * i + c, f);
          ++added[f];
          int row, col;
          cd_sm90_bwd_dq_frag_t((int)(f / 4), row, col);
          row += f % 2;
          col += 8 * ((f / 2) % 2);
          const int want_col = 16 * warp + lane / 4 + 8 * (c / 2), want_row = 8 * i + 2 * (lane % 4) + c % 2;
          T_CHECK(row == want_row && col == want_col,
                  "warp %d lane %d register %d: the post reads it as (row %d, col %d), it holds (%d, %d)", warp,
                  lane, 4 * i + c, row, col, want_row, want_col);
        }
  for (int f = 4 * PART; f < TILE; ++f) ++added[f]; /* consumer 1: chunks 4 .. 7, bulk */
  for (int f = 0; f < TILE; ++f) T_CHECK(added[f] == 1, "float %d of the tile added %d times", f, added[f]);
  for (int f4 = 0; f4 < TILE / 4; ++f4) {
    int row, col;
    cd_sm90_bwd_dq_frag_t(f4, row, col);
    T_CHECK(row >= 0 && row + 1 < ROWS && col >= 0 && col + 8 < COLS, "float4 %d at (%d, %d)", f4, row, col);
    for (int q = 0; q < 4; ++q) ++seen[(row + q % 2) * COLS + col + 8 * (q / 2)];
  }
  for (int e = 0; e < TILE; ++e)
    T_CHECK(seen[e] == 1, "dQ element (%d, %d) read %d times by the post", e / COLS, e % COLS, seen[e]);
  return T_PASS;
}

/* The pre kernels' CTAs (bwd_prepost.cuh SM90_BWD_PREPOST_THREADS) */
static const int kPreThreads = 256;

/* One call's pre at SM90_BWD_PRE_FAST 1 (bwd_pre_map.cuh) over batch x heads x sq_pad rows of the
 * D-wide accumulator, RPT rows a thread, the launch's grid (ceil(rows / CTA_ROWS) CTAs): each
 * (row, thread part c < TPR) taken by exactly one thread, the row's TPR threads consecutive in one
 * warp (the shuffle sum); the (batch, head, query row) that cd_sm90_bwd_pre_next_row steps to from
 * row 0's is the division's; every float4 of the rows zeroed exactly once and none past them, by the
 * CTA that owns its row, each warp store 32 consecutive float4s from a multiple of 32 (four whole
 * 128-byte lines). */
template <int D, int DV, int RPT>
static int pre_map_case(int batch, int heads, int sq_pad) {
  constexpr int TPR = cd_sm90_bwd_pre_tpr<DV>();
  typedef cd_sm90_bwd_pre_map<D, TPR, RPT, kPreThreads> M;
  const int64_t total = (int64_t)batch * heads * sq_pad, f4 = total * (D / 4);
  const int64_t grid = (total + M::CTA_ROWS - 1) / M::CTA_ROWS;
  std::vector<int> part(total * TPR, 0), warp_of(total, -1), zeroed(f4, 0);
  for (int64_t cta = 0; cta < grid; ++cta)
    for (int t = 0; t < kPreThreads; ++t) {
      const int64_t row0 = M::row(cta, t, 0), bh0 = row0 / sq_pad;
      int b = (int)(bh0 / heads), h = (int)(bh0 % heads), i = (int)(row0 % sq_pad);
      for (int j = 0; j < RPT; ++j) {
        const int64_t row = M::row(cta, t, j);
        if (row < total) {
          T_CHECK(row >= 0, "D %d DV %d: CTA %lld thread %d row %d: %lld", D, DV, (long long)cta, t, j, (long long)row);
          ++part[row * TPR + t % TPR];
          T_CHECK(warp_of[row] < 0 || warp_of[row] == t / 32, "D %d DV %d: row %lld in warps %d and %d", D, DV,
                  (long long)row, warp_of[row], t / 32);
          warp_of[row] = t / 32;
          T_CHECK(b == row / ((int64_t)heads * sq_pad) && h == (row / sq_pad) % heads && i == row % sq_pad,
                  "D %d DV %d B %d H %d sq_pad %d: row %lld stepped to (%d, %d, %d)", D, DV, batch, heads, sq_pad,
                  (long long)row, b, h, i);
        }
        cd_sm90_bwd_pre_next_row(b, h, i, M::ROWS, sq_pad, heads);
      }
      for (int k = 0; k < M::ZERO4; ++k) {
        const int z = M::zero4(t, k);
        T_CHECK(z >= 0 && z < M::CTA_F4, "D %d DV %d: thread %d store %d at %d of the CTA's %d", D, DV, t, k, z,
                M::CTA_F4);
        if (z >= M::zero4_end(cta, total)) continue;
        const int64_t f = cta * M::CTA_F4 + z;
        T_CHECK(f < f4, "D %d DV %d: CTA %lld zeroes float4 %lld of %lld", D, DV, (long long)cta, (long long)f,
                (long long)f4);
        T_CHECK(f / (D / 4) / M::CTA_ROWS == cta, "D %d DV %d: CTA %lld zeroes row %lld", D, DV, (long long)cta,
                (long long)(f / (D / 4)));
        ++zeroed[f];
        const int lane = t % 32;
        T_CHECK(z - lane == M::zero4(t - lane, k) && (z - lane) % 32 == 0,
                "D %d DV %d: warp %d store %d: lane %d at float4 %d, lane 0 at %d (want lane 0's + lane, lane 0's "
                "a multiple of 32)", D, DV, t / 32, k, lane, z, M::zero4(t - lane, k));
      }
    }
  for (int64_t e = 0; e < total * TPR; ++e)
    T_CHECK(part[e] == 1, "D %d DV %d B %d H %d sq_pad %d: row %lld part %lld taken %d times", D, DV, batch, heads,
            sq_pad, (long long)(e / TPR), (long long)(e % TPR), part[e]);
  for (int64_t f = 0; f < f4; ++f)
    T_CHECK(zeroed[f] == 1, "D %d DV %d B %d H %d sq_pad %d: float4 %lld zeroed %d times", D, DV, batch, heads, sq_pad,
            (long long)f, zeroed[f]);
  return T_PASS;
}

/* Every row width of the pre (bwd_tiles.cuh: D / DV 64, 96, 128, 192 / 128, 256; TPR 8, 4, 16,
 * 16, 32), the dense pre's rows a thread (cd_sm90_bwd_pre_rpt) and the varlen pre's one, over
 * shapes whose last CTA is partial, sq_pad at the smallest BLOCK_M (64: d96's 64 rows a pass
 * carry at every step), 80 (the 80-row tile) and a few heads and batches. */
template <int D, int DV> static int pre_map_row(void) {
  constexpr int RPT = cd_sm90_bwd_pre_rpt(DV / 8 / cd_sm90_bwd_pre_tpr<DV>());
  const int shapes[][3] = {{1, 1, 64}, {1, 3, 64}, {2, 3, 128}, {3, 5, 80}, {1, 7, 320}, {2, 1, 1280}, {5, 2, 192}};
  for (const auto &s : shapes) {
    if (pre_map_case<D, DV, RPT>(s[0], s[1], s[2]) != T_PASS) return T_FAIL;
    if (pre_map_case<D, DV, 1>(s[0], s[1], s[2]) != T_PASS) return T_FAIL;
  }
  return T_PASS;
}

static int bwd_pre_map(void) {
  T_CHECK(cd_sm90_bwd_pre_rpt(1) == 2 && cd_sm90_bwd_pre_rpt(3) == 1, "rows a thread: %d (one chunk), %d (three)",
          cd_sm90_bwd_pre_rpt(1), cd_sm90_bwd_pre_rpt(3));
  if (pre_map_row<64, 64>() != T_PASS || pre_map_row<96, 96>() != T_PASS || pre_map_row<128, 128>() != T_PASS ||
      pre_map_row<192, 128>() != T_PASS || pre_map_row<256, 256>() != T_PASS)
    return T_FAIL;
  return T_PASS;
}

extern "C" void register_tile_order_tests(void) {
  t_register("tile_order/bwd_pre_map", bwd_pre_map);
  t_register("tile_order/bwd_dq_split80", bwd_dq_split80);
  t_register("tile_order/bwd_rotated_turns", bwd_rotated_turns);
  t_register("tile_order/bwd_block_ranges", bwd_block_ranges);
  t_register("tile_order/bwd_grouped_order", bwd_grouped_order);
  t_register("tile_order/bwd_persist_stride", bwd_persist_stride);
  t_register("tile_order/divisor", tile_order_divisor);
  t_register("tile_order/covers_every_tile_once", tile_order_covers_every_tile_once);
  t_register("tile_order/head_groups_shape", tile_order_head_groups_shape);
  t_register("tile_order/choice", tile_order_choice);
  t_register("tile_order/tail", tile_order_tail);
}
