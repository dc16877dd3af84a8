/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * tile_scheduler.cuh - which (batch, head, query block) a persistent sm90 CTA works on (which key
 * blocks a query block must visit: common/mask_rule.cuh).
 *
 * The grid is min(#tiles, #SMs) CTAs. In round r, CTA c takes the tile at position r * grid + c
 * of the order (SM90_SCHED_SNAKE: r * grid + grid - 1 - c in odd rounds); producer and consumers
 * walk the same sequence with no communication. Orders:
 *   SM90_SCHED_M_FASTEST   query block fastest, then head, then batch: the CTAs running at one
 *                          time share the K/V of one or a few heads in L2. Equal-work tiles
 *                          (no right window).
 *   SM90_SCHED_M_GROUPED   the same within groups of SM90_SCHED_GROUP query blocks (group, then
 *                          head, then block in group): with long sequences the running CTAs
 *                          spread over ~4 heads instead of all reading the same K/V block of one
 *                          head at once. The default without a right window; measured within
 *                          noise of M_FASTEST (§5.1).
 *   SM90_SCHED_SNAKE       heaviest first (query blocks descending, all heads of one block index
 *                          before the next), snaking across CTAs so the heavy and light halves of
 *                          consecutive rounds pair up: static balance under a right window
 *                          (causal), where work grows with the query block.
 *   SM90_SCHED_HEAD_SNAKE  one (batch, head) after another, its query blocks heaviest first,
 *                          snaking across CTAs as SNAKE. For causal calls with few query blocks
 *                          (short sequences): SNAKE visits a head's query blocks rounds apart, by
 *                          which time its K/V has left L2 (at 512-2k every tile re-read its K/V
 *                          from DRAM: 2.3-7x the unique K/V bytes); here all tiles of a head run
 *                          within about one round, and the snake pairs heavy with light blocks
 *                          (§5.2).
 *   SM90_SCHED_HEAD_GROUPS groups of group_heads (batch, head)s in turn; within a group the
 *                          query blocks of all its heads level by level, heaviest first in the
 *                          last group and in every second one before it, lightest first in the
 *                          others, so the tile costs rise and fall without jumps (a triangle
 *                          wave) and the snake across CTAs still pairs heavy with light. For
 *                          causal calls with many query blocks and more K/V than L2 holds: a
 *                          group's K/V fits in L2 and its tiles share it, where SNAKE re-read
 *                          every key block from DRAM ~7-13 times (tile_order_choice.cuh picks
 *                          group_heads; §5.3).
 */
#ifndef CUDADENT_SM90_TILE_SCHEDULER_CUH
#define CUDADENT_SM90_TILE_SCHEDULER_CUH

#include "kernels/common/mask_rule.cuh"
#include "kernels/sm90/config.cuh"

enum {
  SM90_SCHED_M_FASTEST = 0,
  SM90_SCHED_SNAKE = 1,
  SM90_SCHED_M_GROUPED = 2,
  SM90_SCHED_HEAD_SNAKE = 3,
  SM90_SCHED_HEAD_GROUPS = 4
};

struct cd_sm90_fwd_tile_coord {
  int batch;
  int head;    /* query head */
  int m_block; /* query rows [m_block * BLOCK_M, (m_block + 1) * BLOCK_M) */
};

/* n / d by a multiply-high, an add and a shift, for 0 <= n < 2^31 and 1 <= d < 2^31: with
 * l = ceil(log2 d) and mul = floor(2^32 (2^l - d) / d) + 1, n / d = (umulhi(n, mul) + n) >> l
 * (Granlund and Montgomery, "Division by invariant integers using multiplication", PLDI 1994,
 * theorem 4.2; the sum fits 32 bits since umulhi(n, mul) < n < 2^31). The tile decode runs at
 * every tile, in the producer before the tile's Q load and in every consumer warp between one
 * tile's epilogue and the next tile's first S; a division by a run-time int is ~20 dependent
 * instructions (I2F, MUFU.RCP, F2I, ...): without them short configs ran 1-7% faster
 * (§5.5). */
struct cd_sm90_fwd_divisor {
  unsigned mul, shift;
};

static inline cd_sm90_fwd_divisor cd_sm90_fwd_divisor_make(int d) { /* host, d >= 1 */
  unsigned l = 0;
  while (l < 31 && (1u << l) < (unsigned)d) ++l;
  cd_sm90_fwd_divisor v;
  v.mul = (unsigned)((((1ull << l) - (unsigned long long)d) << 32) / (unsigned long long)d + 1);
  v.shift = l;
  return v;
}

/* also on the host, where tile_order_choice.cuh walks the tile orders */
__host__ __device__ __forceinline__ int cd_sm90_fwd_div(int n, cd_sm90_fwd_divisor v) {
#ifdef __CUDA_ARCH__
  const unsigned hi = __umulhi((unsigned)n, v.mul);
#else
  const unsigned hi = (unsigned)(((unsigned long long)(unsigned)n * v.mul) >> 32);
#endif
  return (int)((hi + (unsigned)n) >> v.shift);
}

/* What cd_sm90_fwd_decode_tile needs: the order and its divisors, set up by
 * cd_sm90_fwd_tile_order_make on the host once per launch. */
struct cd_sm90_fwd_tile_order {
  int order; /* SM90_SCHED_* */
  int m_blocks, heads_q, batch_heads;
  cd_sm90_fwd_divisor by_heads_q;
  /* M_FASTEST, HEAD_SNAKE, SNAKE: pos = outer * inner + rest; the query block is rest (M_FASTEST),
   * m_blocks - 1 - rest (HEAD_SNAKE) or m_blocks - 1 - outer (SNAKE), the (batch, head) the other
   * one: selects, not a switch (a jump table and an indirect branch every tile) */
  int inner;
  cd_sm90_fwd_divisor by_inner;
  bool m_outer, m_reversed;
  cd_sm90_fwd_divisor by_group_tiles; /* M_GROUPED: SM90_SCHED_GROUP * batch_heads; HEAD_GROUPS:
                                  group_tiles */
  cd_sm90_fwd_divisor by_last_group;  /* M_GROUPED: the query blocks of the last, partial group */
  /* HEAD_GROUPS: groups of group_heads (batch, head)s (a divisor of batch_heads), group_tiles =
   * group_heads * m_blocks tiles each; by_inner divides by group_heads */
  int group_heads, groups, group_tiles;
};

/* group_heads: HEAD_GROUPS only, a divisor of batch_heads */
static inline cd_sm90_fwd_tile_order cd_sm90_fwd_tile_order_make(int order, int m_blocks,
                                                                 int heads_q, int batch_heads,
                                                                 int group_heads = 1) {
  cd_sm90_fwd_tile_order o;
  o.order = order;
  o.m_blocks = m_blocks;
  o.heads_q = heads_q;
  o.batch_heads = batch_heads;
  o.by_heads_q = cd_sm90_fwd_divisor_make(heads_q);
  o.m_outer = order == SM90_SCHED_SNAKE;
  o.m_reversed = order == SM90_SCHED_SNAKE || order == SM90_SCHED_HEAD_SNAKE;
  o.inner = o.m_outer ? batch_heads : m_blocks;
  o.by_inner = cd_sm90_fwd_divisor_make(o.inner);
  /* used only when there is a whole group (then SM90_SCHED_GROUP * batch_heads <= #tiles) */
  o.by_group_tiles =
      cd_sm90_fwd_divisor_make(m_blocks >= SM90_SCHED_GROUP ? SM90_SCHED_GROUP * batch_heads : 1);
  const int rest = m_blocks % SM90_SCHED_GROUP;
  o.by_last_group = cd_sm90_fwd_divisor_make(rest > 0 ? rest : 1);
  o.group_heads = group_heads;
  o.groups = batch_heads / group_heads;
  o.group_tiles = group_heads * m_blocks;
  if (order == SM90_SCHED_HEAD_GROUPS) {
    o.inner = group_heads;
    o.by_inner = cd_sm90_fwd_divisor_make(group_heads);
    o.by_group_tiles = cd_sm90_fwd_divisor_make(o.group_tiles);
  }
  return o;
}

/* Position in the order of CTA cta's tile in round r (may be >= num_tiles: skip it).
 * kHeadGroups = false, here and in cd_sm90_fwd_decode_tile, compiles the HEAD_GROUPS order out, for
 * kernels that never take it: their per-tile path is then a test and a branch shorter, which the
 * short d64 causal calls feel (1-2% at 512, §5.3). */
template <bool kHeadGroups = true>
__host__ __device__ __forceinline__ int cd_sm90_fwd_tile_position(int round, int cta, int grid,
                                                                  int order) {
  const bool snake = order == SM90_SCHED_SNAKE || order == SM90_SCHED_HEAD_SNAKE ||
                     (kHeadGroups && order == SM90_SCHED_HEAD_GROUPS);
  return round * grid + ((snake && (round & 1)) ? grid - 1 - cta : cta);
}

/* The tail of a launch's schedule (a __grid_constant__ kernel parameter, filled on the host by
 * tile_order_choice.cuh). Rounds before base_round take the order's round robin
 * (cd_sm90_fwd_tile_position); the tiles from position base_round * grid on are dealt out on the
 * host, heaviest first to the CTA with the least work so far, and each CTA takes its list of them
 * in the rounds from base_round on, up to the round robin's own last round (the host deals each CTA
 * at most one tile a round, so the kernels' loop is the same with a tail or without).
 * Why: the round robin hands every CTA the same number of tiles up to one, and under causal
 * masking the last rounds leave CTAs up to a whole tile apart: at d64 causal 512 (4096 tiles of
 * 1-4 key blocks on 132 CTAs) the busiest CTA had 3.1% more than the mean, and 128 CTAs ran
 * as fast as 132 (§5.4). Without a tail base_round is that round count,
 * ceil(num_tiles / grid). The kernels
 * compiled with it: fwd_kernel.cuh's TAIL (the d128 rows and the LSE d64 M128 row). */
#define SM90_TAIL_MAX_CTAS 160
#define SM90_TAIL_MAX_ROWS 6
#define SM90_TAIL_NONE 0xffffu
struct cd_sm90_fwd_tile_tail {
  int base_round;
  /* the tile of the slot that the round robin gives CTA c in round base_round + i, slot
   * cd_sm90_fwd_tile_position(base_round + i, c, ..) - base_round * grid: an offset from
   * base_round * grid, or SM90_TAIL_NONE. Indexed by that slot, so nothing of the tail stays in
   * registers across the tile loop (per-CTA list bounds did: the d64 M192 rows spilled). */
  unsigned short pos[SM90_TAIL_MAX_ROWS * SM90_TAIL_MAX_CTAS];
};

/* Position of CTA cta's tile in round r under the tail (may be >= num_tiles: skip it).
 * kTail = false compiles the tail out (kernels whose launches never have one). */
template <bool kHeadGroups = true, bool kTail = true>
__host__ __device__ __forceinline__ int cd_sm90_fwd_tile_position_tail(
    int round, int cta, int grid, int order, int num_tiles, const cd_sm90_fwd_tile_tail &tail) {
  const int pos = cd_sm90_fwd_tile_position<kHeadGroups>(round, cta, grid, order);
  if (!kTail || round < tail.base_round) return pos;
  const int first = tail.base_round * grid;
  /* not through a volatile pointer: that compiled to a global load of the parameter's offset
   * (an illegal address, §5.4) */
  const unsigned e = tail.pos[pos - first];
  return e != SM90_TAIL_NONE ? first + (int)e : num_tiles;
}

template <bool kHeadGroups = true>
__host__ __device__ __forceinline__ cd_sm90_fwd_tile_coord
cd_sm90_fwd_decode_tile(int pos, const cd_sm90_fwd_tile_order &o) {
  cd_sm90_fwd_tile_coord t;
  int bh, m;
  if (o.order == SM90_SCHED_M_GROUPED) {
    const int full = o.m_blocks / SM90_SCHED_GROUP; /* whole groups */
    const int in_full = full * SM90_SCHED_GROUP * o.batch_heads;
    if (pos < in_full) {
      const int g = cd_sm90_fwd_div(pos, o.by_group_tiles);
      const int r = pos - g * SM90_SCHED_GROUP * o.batch_heads;
      bh = r / SM90_SCHED_GROUP;
      m = g * SM90_SCHED_GROUP + (r - bh * SM90_SCHED_GROUP);
    } else { /* the last, partial group */
      const int rest = o.m_blocks - full * SM90_SCHED_GROUP, r = pos - in_full;
      bh = cd_sm90_fwd_div(r, o.by_last_group);
      m = full * SM90_SCHED_GROUP + (r - bh * rest);
    }
  } else if (kHeadGroups && o.order == SM90_SCHED_HEAD_GROUPS) {
    const int g = cd_sm90_fwd_div(pos, o.by_group_tiles), r = pos - g * o.group_tiles;
    const int level = cd_sm90_fwd_div(r, o.by_inner);
    bh = g * o.group_heads + (r - level * o.group_heads);
    m = ((o.groups - 1 - g) & 1) ? level : o.m_blocks - 1 - level; /* the last group descends */
  } else {
    const int outer = cd_sm90_fwd_div(pos, o.by_inner), rest = pos - outer * o.inner;
    const int mi = o.m_outer ? outer : rest;
    bh = o.m_outer ? rest : outer;
    m = o.m_reversed ? o.m_blocks - 1 - mi : mi;
  }
  t.m_block = m;
  t.batch = cd_sm90_fwd_div(bh, o.by_heads_q);
  t.head = bh - t.batch * o.heads_q;
  return t;
}

#endif /* CUDADENT_SM90_TILE_SCHEDULER_CUH */
