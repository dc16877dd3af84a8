/*
 * fwd_order.cuh - the grid order and switches of dispatch.h CUDADENT_SM80_FWD_WIDE8_SHORT (the
 * portable forward's 8-warp dense kernels at short lengths; docs/kernels/sm80_fwd.md section 10),
 * included by fwd_kernel.cuh where the gate is 1: the CTA -> (batch, head, query tile) map (host
 * and device, for dev/sm80_fwd/check_layout.cu part 5) and the launcher's group size and dev
 * switches.
 */
#ifndef CUDADENT_SM80_FWD_ORDER_CUH
#define CUDADENT_SM80_FWD_ORDER_CUH

#include <stdint.h>
#include "cudadent.h"
#ifdef CUDADENT_DEV
#include <stdlib.h> /* the dev builds' switches of cd_sm80_fwd_order_group / cd_sm80_fwd_dev_on */
#include <string.h>
#endif

/* The grid order of dispatch.h CUDADENT_SM80_FWD_WIDE8_SHORT: CTA x of bh_count (batch, head)s x
 * m_blocks query tiles takes group x / (g m_blocks) of g (batch, head)s (the last group may be
 * smaller), and within it query tiles level by level, (batch, head) fastest; so the tiles of a
 * group, whose K / V the host sized to stay in L2, run together. The last group walks the levels
 * from the last query tile (the heaviest under a causal mask) down, the one before it up, and so
 * on alternately (a snake: under a causal mask the tile costs form a triangle wave that ends on
 * the lightest tiles, as today's order ends; one direction for every group left a heavy tile for
 * the end: +1.2-2.2% of tail over today's order in a model of d256 causal 512-2k, against +0.3-0.8%
 * for the snake: dev/sm80_fwd/short_model.py). g = bh_count is one group, descending: exactly
 * today's order. A bijection onto (bh, m_block) for 1 <= g <= bh_count (dev/sm80_fwd/
 * check_layout.cu part 5); a host function too, for that check. Everything fits 32 bits: the
 * launcher keeps bh_count * m_blocks below 2^31. */
__host__ __device__ __forceinline__ void cd_sm80_fwd_grouped_tile(unsigned x, unsigned bh_count,
                                                                  unsigned m_blocks, unsigned g,
                                                                  unsigned *bh, int *m_block) {
  const unsigned per = g * m_blocks;            /* CTAs of a whole group */
  const unsigned grp = x / per;
  const unsigned r = x - grp * per;             /* within the group */
  const unsigned first = grp * g;               /* its first (batch, head) */
  const unsigned gs = bh_count - first < g ? bh_count - first : g; /* its size */
  const unsigned level = r / gs;
  const unsigned groups = (bh_count + g - 1) / g;
  const bool descending = (groups - 1 - grp) % 2 == 0; /* the last group, and every other one */
  *bh = first + (r - level * gs);
  *m_block = (int)(descending ? m_blocks - 1 - level : level);
}

/* dispatch.h CUDADENT_SM80_FWD_WIDE8_SHORT's grid order: the (batch, head)s a group (today's order:
 * bh_count). Calls of at most CD_SM80_FWD_GROUP_MAX_MBLOCKS query tiles take groups whose K / V
 * (the bytes the loads read: seqlen_k x (head_dim + head_dim_v) x 2 a KV head, shared by the
 * heads_q / heads_kv consecutive query heads of a GQA group) fill at most CD_SM80_FWD_L2_GROUP_BYTES
 * of the L2 (16 MiB, the sm90 forward's SM90_L2_GROUP_BYTES; H100 / H200: 50 MiB): at d256 the
 * group is then ~128 CTAs, one wave of the one-CTA-per-SM tile, and its query tiles read the K /
 * V from DRAM once, not once a wave. Longer calls keep today's order (a wave holds several query
 * tiles of each head, which share the K / V as they walk it together: DRAM traffic is already
 * low, and grouping would put 64-128 CTAs on the same K / V lines at once). Dev builds:
 * CUDADENT_SM80_FWD_GROUP=0 today's order, N groups of N. */
#define CD_SM80_FWD_GROUP_MAX_MBLOCKS 16
#define CD_SM80_FWD_L2_GROUP_BYTES (16ll << 20)
static inline int cd_sm80_fwd_order_group(const cudadent_attn_fwd_params_t *p, int m_blocks) {
  const int64_t bh_count = (int64_t)p->batch * p->heads_q;
  int64_t g = bh_count;
  if (m_blocks <= CD_SM80_FWD_GROUP_MAX_MBLOCKS) {
    const int dv = p->head_dim_v != 0 ? p->head_dim_v : p->head_dim;
    const int64_t kv = (int64_t)p->seqlen_k * (p->head_dim + dv) * 2; /* one KV head's K and V */
    g = CD_SM80_FWD_L2_GROUP_BYTES * (p->heads_q / p->heads_kv) / (kv > 0 ? kv : 1);
  }
#ifdef CUDADENT_DEV
  const char *env = getenv("CUDADENT_SM80_FWD_GROUP");
  if (env != NULL) g = atoll(env) > 0 ? atoll(env) : bh_count;
#endif
  return (int)(g < 1 ? 1 : g > bh_count ? bh_count : g);
}

/* 1 unless a dev build's environment variable NAME is "0" */
static inline int cd_sm80_fwd_dev_on(const char *name) {
#ifdef CUDADENT_DEV
  const char *env = getenv(name);
  return env == NULL || strcmp(env, "0") != 0;
#else
  (void)name;
  return 1;
#endif
}

#endif /* CUDADENT_SM80_FWD_ORDER_CUH */
