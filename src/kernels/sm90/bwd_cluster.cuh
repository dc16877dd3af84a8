/*
 * bwd_cluster.cuh - dev only (config.cuh SM90_BWD_CLUSTER): the PTX and the pair rules of option O2
 * of docs/kernels/sm90_bwd_cluster_ds.md in the wide kernel (bwd_wide_kernel.cuh, kCluster): two
 * CTAs of a (2, 1, 1) cluster take neighbouring key blocks 2p and 2p + 1 of one (KV head, batch),
 * walk the same query blocks in the same order, send each other their 16-bit dS^T of every block
 * (a bulk copy into the peer's shared memory) and each computes dQ for part of the D_QK columns
 * over both key blocks, so that each CTA adds fewer dQ bytes to the workspace.
 *
 * The per-block protocol (slot b = block & 1; RECV_FULL[b], PEER_FREE[b] in each CTA):
 *   - before the block's dS barrier the leader (consumer 0, thread 0) waits PEER_FREE of the
 *     previous block: the peer has finished reading our copy of it (so our dS^T slot of that
 *     block, rewritten next block, and the peer's receive slot of that block, which our next send
 *     fills, are free);
 *   - after the dS barrier the leader arms our RECV_FULL[b] (8 KiB expected) and bulk-copies our
 *     dS^T slot b into the peer's receive slot b, completing on the peer's RECV_FULL[b];
 *   - a consumer with a dQ slab this block waits RECV_FULL[b] before its peer-half product; after
 *     its products every consumer warp arrives on the peer's PEER_FREE[b] (count 8);
 *   - at the end the leader waits PEER_FREE of the last block: no access of the peer to this
 *     CTA's shared memory is left, and ours to the peer's were all waited by the peer.
 * The pushed values (5, 6, 7 below) write the peer's receive slot from registers at the dS^T
 * stmatrix instead (our own slot is then never read remotely). Value 7 reads block x's receive
 * slot during block x + 1: three slots (b = block % 3), PEER_FREE arrived there, and the leader
 * waits PEER_FREE two blocks back (a slot is refilled three blocks later); bwd_wide_cluster.cuh.
 */
#ifndef CUDADENT_SM90_BWD_CLUSTER_CUH
#define CUDADENT_SM90_BWD_CLUSTER_CUH

#include <stdint.h>

#include "kernels/sm90/bwd_schedule.cuh"
#include "kernels/sm90/config.cuh"

/* %cluster_ctarank: this CTA's rank in its cluster (0 or 1 here). */
__device__ __forceinline__ uint32_t cd_cluster_ctarank(void) {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}

/* 9.7.9.21 mapa: the shared::cluster address of the same offset in CTA `rank`'s shared memory. */
__device__ __forceinline__ uint32_t cd_mapa(uint32_t addr, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}

/* 9.7.13.3 barrier.cluster: every thread of both CTAs (the set-up's, before any thread exits). */
__device__ __forceinline__ void cd_cluster_sync(void) {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/* mbarrier.try_wait.parity with cluster-scope acquire: the phase's arrivals or transactions came
 * from the peer CTA. */
__device__ __forceinline__ void cd_mbar_wait_cluster(uint32_t bar, uint32_t parity) {
  uint32_t ok = 0;
  while (!ok)
    asm volatile(
        "{\n.reg .pred p;\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
        "selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok)
        : "r"(bar), "r"(parity)
        : "memory");
}

/* One arrival, release at cluster scope, on the peer's mbarrier (a mapa address). */
__device__ __forceinline__ void cd_mbar_arrive_remote(uint32_t remote_bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(remote_bar) : "memory");
}

/* 9.7.9.25.4.2 cp.async.bulk shared::cta -> shared::cluster: `bytes` of ours into the peer's
 * buffer (mapa address), completing `bytes` transactions on the peer's mbarrier (mapa address). */
__device__ __forceinline__ void cd_bulk_copy_to_peer(uint32_t remote_dst, uint32_t src, uint32_t bytes,
                                                     uint32_t remote_bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
          remote_dst),
      "r"(src), "r"(bytes), "r"(remote_bar)
      : "memory");
}

/* st.async (PTX 8.1, sm_90): a 32-bit store into the peer's shared memory (mapa address) that
 * completes 4 transaction bytes on the peer's mbarrier (mapa address): no bulk engine involved. */
__device__ __forceinline__ void cd_st_async_b32(uint32_t remote_addr, uint32_t value, uint32_t remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(remote_addr),
               "r"(value), "r"(remote_bar)
               : "memory");
}

/* SM90_BWD_CLUSTER's values (config.cuh): the exchange by the bulk engine (1, 4) or pushed from
 * registers by st.async (5, 6, 7); the dQ slab staged and bulk-reduced (1, 2, 5) or added by
 * red.global from registers (4, 6, 7); 2 no exchange at all (dQ wrong); 7 the peer's part a block
 * later (bwd_wide_cluster.cuh), three receive slots. (3, the slab first with its reduce under dV and
 * dK, measured -41% in session 25 and was deleted.) */
constexpr bool kSm90BwdClusterExchange = SM90_BWD_CLUSTER != 2;
constexpr bool kSm90BwdClusterPush = SM90_BWD_CLUSTER == 5 || SM90_BWD_CLUSTER == 6 || SM90_BWD_CLUSTER == 7;
constexpr bool kSm90BwdClusterRedDq = SM90_BWD_CLUSTER == 4 || SM90_BWD_CLUSTER == 6 || SM90_BWD_CLUSTER == 7;
constexpr bool kSm90BwdClusterDelay = SM90_BWD_CLUSTER == 7;
constexpr uint32_t kSm90BwdClusterSlots = kSm90BwdClusterDelay ? 3 : 2; /* receive slots */

/* A consumer thread's 8 packed dS^T pairs (ds16[2 j + r]: key key_row0 + 8 r, queries 32 w + 8 j +
 * 2 (lane % 4) + {0, 1}) into the peer's receive slot at `slot` (mapa address), in the layout of
 * the local stmatrix ([64 keys][64 queries], 16-byte chunk c of a row at c ^ (key % 8)). */
__device__ __forceinline__ void cd_sm90_bwd_push_ds(const uint32_t (&ds16)[8], uint32_t slot, uint32_t remote_bar,
                                                    int key_row0, int w, int lane) {
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int key = key_row0 + 8 * r, c = 4 * w + j;
      cd_st_async_b32(slot + key * 128 + ((c ^ (key & 7)) << 4) + 4 * (lane & 3), ds16[2 * j + r], remote_bar);
    }
}

/* The (key block, KV head, batch) of this CTA: the cluster's linear index over key-block pairs in
 * cd_sm90_bwd_grouped_work's order (as cd_sm90_bwd_work_of_block's non-deterministic order over
 * single blocks), key block 2 pair + rank. */
__device__ __forceinline__ void cd_sm90_bwd_pair_work(int window_right, uint32_t rank, int &n_block, int &hk,
                                                      int &b) {
  const int group = window_right >= 0 && SM90_BWD_LPT_GROUP > 0 ? SM90_BWD_LPT_GROUP : 1;
  const int pairs = (int)gridDim.x / 2;
  const int64_t linear = blockIdx.x / 2 + (int64_t)pairs * (blockIdx.y + (int64_t)gridDim.y * blockIdx.z);
  int pair = 0;
  cd_sm90_bwd_grouped_work(linear, pairs, (int)gridDim.y, (int64_t)gridDim.y * gridDim.z, group, &pair, &hk, &b);
  n_block = 2 * pair + (int)rank;
}

/* Which of the 192 / 128 row's three dQ slabs consumer w of CTA `rank` computes at block `it`
 * (over both key blocks), or -1: at every block one CTA of the pair takes slabs 0 and 1 (one a
 * consumer), the other slab 2 (consumer 1), alternating, so that each CTA adds 1.5 slabs a block on
 * average (today's 3). */
__device__ __forceinline__ int cd_sm90_bwd_pair_slab(uint32_t it, uint32_t rank, int w) {
  const bool two = ((it + rank) & 1u) == 0;
  return two ? w : (w == 1 ? 2 : -1);
}

#endif /* CUDADENT_SM90_BWD_CLUSTER_CUH */
