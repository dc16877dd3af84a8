/*
 * test_bwd_persist.cu - CPU tests of the sm90 backward's dynamic persistent scheduler (config.cuh
 * SM90_BWD_PERSISTENT 2, kernels/sm90/bwd_persist.cuh): the order its fetches hand out and the
 * index decode (kernels/sm90/bwd_schedule.cuh, the kernel's own __host__ __device__ functions), and
 * a model of its barrier protocol. The static stride of knob 1 is test_tile_order.cu's. Host code
 * only; the tests hold at every knob value (the functions are compiled at all of them).
 */
#include <stdlib.h>

#include <vector>

#include "harness.h"
#include "kernels/common/mask_rule.cuh"
#include "kernels/sm90/bwd_schedule.cuh"

/* The persistent backward's dynamic scheduler (config.cuh SM90_BWD_PERSISTENT 2, bwd_persist.cuh):
 * a list-scheduling simulation of its fetches. G = min(units, SMs) CTAs start at launch indices
 * 0 .. G - 1; whichever CTA frees first (ties: the lower CTA) fetches the shared counter's next value
 * and takes launch index cd_sm90_bwd_dyn_unit(G, value), stopping at an index >= units. A unit's
 * cost: 1 (prologue, epilogue) + its query blocks x the KV head's query heads (the block loop).
 * Checked for causal (seqlen_q = seqlen_k, <, >), windows (with units of no query block: a bounded
 * left side and seqlen_k - seqlen_q past it) and no mask: every launch index taken
 * exactly once, each CTA's first its own index and its sequence increasing, the makespan within
 * list scheduling's bound (total / G + the largest unit); and the kernel's decode of an index
 * (bwd_schedule.cuh cd_sm90_bwd_order_work<int>, the group of cd_sm90_bwd_order_group) equals the
 * library's launch order (cd_sm90_bwd_work_of_block: cd_sm90_bwd_grouped_work in 64 bits with
 * group SM90_BWD_LPT_GROUP where window_right >= 0, else 1), a bijection onto (key block, KV head,
 * batch). Mutant: a first fetched index G - 1 instead of G takes index G - 1 twice. */
static int bwd_persist_dynamic(void) {
  struct shape {
    int sq, sk, wl, wr, hkv, batch, group, bm, bn;
  };
  const shape shapes[] = {
      {512, 512, -1, 0, 16, 32, 1, 64, 128},    /* d128 h16 causal b32 512 */
      {4096, 4096, -1, 0, 16, 4, 1, 64, 128},   /* causal b4 4k */
      {4096, 4096, -1, 0, 8, 4, 4, 64, 128},    /* GQA 32 / 8 causal 4k */
      {133, 1000, -1, 0, 2, 12, 4, 64, 128},    /* causal, seqlen_q < seqlen_k (no empty unit: bottom-right) */
      {1000, 133, -1, 0, 3, 5, 2, 64, 128},     /* causal, seqlen_q > seqlen_k */
      {2048, 2048, 256, 0, 16, 2, 1, 64, 128},  /* sliding window (left 256, causal) */
      {700, 1500, 100, 50, 4, 3, 1, 64, 128},   /* two-sided window: key blocks 0-4 empty, first in the order */
      {256, 4096, 64, 64, 4, 2, 1, 128, 128},   /* d64, window: 29 of 32 key blocks empty, runs of them */
      {1000, 1000, 300, -1, 4, 3, 1, 128, 128}, /* left window only (group 1 order) */
      {512, 512, -1, 0, 32, 32, 1, 128, 128},   /* d64 h32 causal b32 512 */
      {2048, 2048, -1, -1, 16, 8, 1, 64, 128},  /* no mask */
      {100, 300, -1, -1, 1, 1, 1, 64, 128},     /* fewer units than SMs */
  };
  const int sms_list[] = {1, 3, 132};
  int empty_seen = 0;
  for (const shape &sh : shapes) {
    const int nb = (sh.sk + sh.bn - 1) / sh.bn, chains = sh.hkv * sh.batch, units = nb * chains;
    /* the decode: the kernel's (32-bit, the group from cd_sm90_bwd_order_group) against the
     * library's launch order (cd_sm90_bwd_work_of_block's expression, 64-bit) */
    const int lib_group = sh.wr >= 0 ? SM90_BWD_LPT_GROUP : 1;
    T_CHECK(SM90_BWD_LPT_GROUP <= 0 || cd_sm90_bwd_order_group(sh.wr) == lib_group, "group %d, library's %d",
            cd_sm90_bwd_order_group(sh.wr), lib_group);
    std::vector<int> cost((size_t)units), hit((size_t)units, 0);
    for (int i = 0; i < units; ++i) {
      int n, hk, b, n2, hk2, b2, m_lo, m_hi;
      cd_sm90_bwd_order_work<int>(i, nb, sh.hkv, chains, sh.wr, &n, &hk, &b);
      cd_sm90_bwd_grouped_work(i, nb, sh.hkv, (int64_t)chains, lib_group, &n2, &hk2, &b2);
      T_CHECK(n == n2 && hk == hk2 && b == b2, "sq %d sk %d: index %d decodes to (%d, %d, %d), library (%d, %d, %d)",
              sh.sq, sh.sk, i, n, hk, b, n2, hk2, b2);
      T_CHECK(n >= 0 && n < nb && hk >= 0 && hk < sh.hkv && b >= 0 && b < sh.batch, "index %d out of range", i);
      const int u = (b * sh.hkv + hk) * nb + n;
      T_CHECK(++hit[(size_t)u] == 1, "sq %d sk %d: unit (%d, %d, %d) decoded twice", sh.sq, sh.sk, n, hk, b);
      const int k0 = n * sh.bn, k1 = (k0 + sh.bn < sh.sk ? k0 + sh.bn : sh.sk) - 1;
      cd_mask_q_blocks(k0, k1, sh.sq, sh.sk, sh.wl, sh.wr, sh.bm, &m_lo, &m_hi);
      T_CHECK(m_hi >= m_lo, "negative query range");
      empty_seen += m_hi == m_lo;
      cost[(size_t)i] = 1 + (m_hi - m_lo) * sh.group;
    }
    long long total = 0;
    int max_cost = 0;
    for (int c : cost) {
      total += c;
      if (c > max_cost) max_cost = c;
    }
    for (int sms : sms_list) {
      const int grid = cd_sm90_bwd_persist_grid(units, sms);
      std::vector<long long> free_at((size_t)grid);
      std::vector<int> last((size_t)grid), taken((size_t)units, 0);
      std::vector<char> done((size_t)grid, 0);
      for (int c = 0; c < grid; ++c) { /* first units: launch index c, no fetch */
        last[(size_t)c] = c;
        ++taken[(size_t)c];
        free_at[(size_t)c] = cost[(size_t)c];
      }
      int counter = 0, active = grid;
      long long makespan = 0;
      while (active > 0) {
        int c = -1;
        for (int j = 0; j < grid; ++j)
          if (!done[(size_t)j] && (c < 0 || free_at[(size_t)j] < free_at[(size_t)c])) c = j;
        const int64_t l = cd_sm90_bwd_dyn_unit(grid, counter++);
        if (l >= units) {
          done[(size_t)c] = 1;
          --active;
          if (free_at[(size_t)c] > makespan) makespan = free_at[(size_t)c];
          continue;
        }
        T_CHECK(l >= 0, "negative launch index %lld", (long long)l);
        T_CHECK(l > last[(size_t)c], "sq %d sk %d SMs %d: CTA %d takes %lld after %d", sh.sq, sh.sk, sms, c,
                (long long)l, last[(size_t)c]);
        T_CHECK(++taken[(size_t)l] == 1, "sq %d sk %d SMs %d: launch index %lld taken twice", sh.sq, sh.sk, sms,
                (long long)l);
        last[(size_t)c] = (int)l;
        free_at[(size_t)c] += cost[(size_t)l];
      }
      for (int l = 0; l < units; ++l)
        T_CHECK(taken[(size_t)l] == 1, "sq %d sk %d SMs %d: launch index %d taken %d times", sh.sq, sh.sk, sms, l,
                taken[(size_t)l]);
      T_CHECK(counter == units, "sq %d sk %d SMs %d: %d fetches for %d units on %d CTAs", sh.sq, sh.sk,
              sms, counter, units, grid);
      T_CHECK(makespan * grid <= total + (long long)grid * max_cost, "sq %d sk %d SMs %d: makespan %lld over the bound",
              sh.sq, sh.sk, sms, makespan);
    }
  }
  T_CHECK(empty_seen >= 5 * 4 * 3 + 29 * 4 * 2, "%d units without query blocks, expected at least %d", empty_seen,
          5 * 4 * 3 + 29 * 4 * 2);
  return T_PASS;
}

/* The dynamic persistent kernel's barrier protocol (bwd_persist.cuh's opening comment, knob 2), as a
 * model run under random interleavings: one producer and W consumer warps over a unit sequence with
 * runs of empty units (no query block). A barrier is its count of completed phases; a wait for
 * phase e passes once e is completed, and the parity hardware cannot tell e from e + 2, so every
 * check asserts the barrier has not completed e + 1 too (two ahead). Also checked: each consumer
 * reads unit k's index from slot k & 1 (not overwritten), the producer's K / V loads wait for every
 * warp past the previous non-empty unit's K / V readers, its Q / dO loads for every warp past the
 * previous unit's epilogue, and nothing deadlocks. Mutant: the producer publishing unit k's index
 * before waiting epi_done phase k - 1 (or skipping that wait for empty units) fails. Both fetch
 * modes (config.cuh SM90_BWD_PERSIST_FETCH): 0 the producer's, after its Q loop; 1 consumer warp
 * 0's, after its unit's epilogue, into slot (k + 1) & 1 and fetch_full, which the producer waits
 * (phase k) in place of its fetch and whose slot it checks. */
namespace persist_model {
struct bar {
  int done = 0, count = 0, need = 1;
  void arrive() {
    if (++count == need) count = 0, ++done;
  }
};
}
static int bwd_persist_barriers(void) {
  using persist_model::bar;
  const int ST = 2, W = 3;
  unsigned seed = 12345u;
  auto rnd = [&seed](int n) {
    seed = seed * 1103515245u + 12345u;
    return (int)((seed >> 8) % (unsigned)n);
  };
  for (int trial = 0; trial < 800; ++trial) {
    const bool fetch_c = trial % 2 == 1; /* SM90_BWD_PERSIST_FETCH 1 */
    const int units = 1 + rnd(12);
    std::vector<int> blocks((size_t)units);
    for (int &bl : blocks) bl = rnd(3) == 0 ? 0 : rnd(4); /* runs of empty units */
    bar kv_full, kv_empty, epi_done, unit_full, fetch_full, q_full[2], q_empty[2];
    kv_empty.need = epi_done.need = W;
    for (int s = 0; s < ST; ++s) q_empty[s].need = W;
    int slot[2] = {-1, -1}, fslot[2] = {-1, -1};
    /* producer: pc 0 decode / K / V, 1 epi_done + publish, 2 Q loop, 3 fetch; k, kv_n, it, m */
    int p_pc = 0, p_k = 0, p_kv = 0, p_it = 0, p_m = 0;
    bool p_done = false;
    /* consumers: pc 0 index, 1 K / V wait, 2 block loop, 3 kv_empty, 4 epilogue, 5 the fetch (warp 0
     * at fetch mode 1) */
    std::vector<int> c_pc((size_t)W, 0), c_k((size_t)W, 0), c_kv((size_t)W, 0), c_it((size_t)W, 0),
        c_m((size_t)W, 0), c_idx((size_t)W, 0);
    std::vector<char> c_done((size_t)W, 0);
    std::vector<int> epi_units((size_t)W, 0), kv_units((size_t)W, 0); /* epilogues / K-V readers done */
    const char *ahead = nullptr; /* a wait that found its phase and the next completed */
    auto check_wait = [&](const bar &br, int e, const char *what) {
      if (br.done > e + 1) ahead = what;
      return br.done >= e + 1;
    };
    for (int steps = 0;; ++steps) {
      T_CHECK(steps < 100000, "trial %d: no end", trial);
      /* the actors in a random order; the first that can move does (a wait that does not pass
       * changes nothing) */
      int perm[W + 1];
      for (int i = 0; i <= W; ++i) perm[i] = i;
      for (int i = W; i > 0; --i) {
        const int j = rnd(i + 1), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
      }
      bool moved = false;
      for (int t = 0; t <= W && !moved; ++t) {
        const int a = perm[t];
        if (a == W) { /* the producer */
          if (p_done) continue;
          const bool valid = p_k < units, nonempty = valid && blocks[(size_t)p_k] > 0;
          if (p_pc == 0) {
            if (nonempty) {
              if (p_kv > 0 && !check_wait(kv_empty, p_kv - 1, "producer kv_empty")) continue;
              for (int w = 0; w < W; ++w)
                T_CHECK(kv_units[(size_t)w] >= p_kv, "trial %d: K / V loaded under a reader", trial);
              kv_full.arrive(); /* the TMA's bytes: complete at once */
              ++p_kv;
            }
            p_pc = 1;
          } else if (p_pc == 1) {
            if (p_k > 0) {
              if (!check_wait(epi_done, p_k - 1, "producer epi_done")) continue;
              slot[p_k & 1] = p_k < units ? p_k : units; /* the unit's index; units: the end marker */
              unit_full.arrive();
            }
            if (!valid) p_done = true;
            p_pc = 2, p_m = 0;
          } else if (p_pc == 2) {
            if (p_m == blocks[(size_t)p_k]) {
              p_pc = 3;
            } else {
              const int s = p_it % ST, ph = p_it / ST;
              if (ph > 0 && !check_wait(q_empty[s], ph - 1, "producer q_empty")) continue;
              for (int w = 0; w < W; ++w)
                T_CHECK(epi_units[(size_t)w] >= p_k, "trial %d: Q / dO loaded over unit %d's staging", trial, p_k - 1);
              q_full[s].arrive();
              ++p_it, ++p_m;
            }
          } else {
            if (fetch_c) { /* unit p_k + 1's index from consumer warp 0: fetch_full's phase p_k */
              if (!check_wait(fetch_full, p_k, "producer fetch_full")) continue;
              T_CHECK(fslot[(p_k + 1) & 1] == p_k + 1, "trial %d: producer read %d for unit %d", trial,
                      fslot[(p_k + 1) & 1], p_k + 1);
            }
            ++p_k, p_pc = 0; /* the fetch: this model's CTA takes the units in order */
          }
          moved = true;
        } else { /* consumer warp a */
          const size_t w = (size_t)a;
          if (c_done[w]) continue;
          const int k = c_k[w];
          if (c_pc[w] == 0) {
            if (k > 0) {
              if (!check_wait(unit_full, k - 1, "consumer unit_full")) continue;
              c_idx[w] = slot[k & 1];
              T_CHECK(c_idx[w] == (k < units ? k : units), "trial %d: warp %d read %d for unit %d", trial, a,
                      c_idx[w], k);
            }
            if (k >= units) {
              c_done[w] = 1;
            } else {
              c_pc[w] = 1;
            }
          } else if (c_pc[w] == 1) {
            if (blocks[(size_t)k] > 0 && !check_wait(kv_full, c_kv[w], "consumer kv_full")) continue;
            c_pc[w] = 2, c_m[w] = 0;
          } else if (c_pc[w] == 2) {
            if (c_m[w] == blocks[(size_t)k]) {
              c_pc[w] = 3;
            } else {
              const int s = c_it[w] % ST, ph = c_it[w] / ST;
              if (!check_wait(q_full[s], ph, "consumer q_full")) continue;
              q_empty[s].arrive();
              ++c_it[w], ++c_m[w];
            }
          } else if (c_pc[w] == 3) {
            if (blocks[(size_t)k] > 0) kv_empty.arrive(), ++c_kv[w], kv_units[w] = c_kv[w];
            c_pc[w] = 4;
          } else if (c_pc[w] == 4) {
            epi_done.arrive();
            epi_units[w] = k + 1;
            if (fetch_c && a == 0) {
              c_pc[w] = 5;
            } else {
              ++c_k[w], c_pc[w] = 0;
            }
          } else { /* the fetch of unit k + 1's index (k + 1 == units: the end marker) */
            fslot[(k + 1) & 1] = k + 1;
            fetch_full.arrive();
            ++c_k[w], c_pc[w] = 0;
          }
          moved = true;
        }
      }
      bool all = p_done;
      for (int w = 0; w < W; ++w) all = all && c_done[(size_t)w];
      if (all) break;
      T_CHECK(ahead == nullptr, "trial %d: %s: a phase waited for and the next completed (two ahead)", trial,
              ahead);
      T_CHECK(moved, "trial %d: deadlock (producer step %d pc %d, warp 0 unit %d pc %d)", trial, p_k, p_pc,
              c_k[0], c_pc[0]);
    }
  }
  return T_PASS;
}

extern "C" void register_bwd_persist_tests(void) {
  t_register("bwd_persist/dynamic_order", bwd_persist_dynamic);
  t_register("bwd_persist/barriers", bwd_persist_barriers);
}
