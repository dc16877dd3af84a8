/*
 * bwd_wide_cluster.cuh - dev only (config.cuh SM90_BWD_CLUSTER): the wide kernel's per-block work
 * under option O2 (bwd_cluster.cuh has the protocol and the PTX; bwd_wide_kernel.cuh calls these
 * from its consumer where kCluster). After the block's dS barrier: the leader arms this block's
 * receive slot and (bulk-copy values) sends our dS^T; dV and dK are issued; this consumer's dQ slab
 * (cd_sm90_bwd_pair_slab) gets our keys' part and the peer's; all products are waited; every warp
 * tells the peer it has read its dS^T; the slab is added to the workspace.
 *
 * SM90_BWD_CLUSTER 7 (kSm90BwdClusterDelay) moves the peer's part one block later: block x's own
 * part stays in registers (cs.dq) into block x + 1, whose start issues the peer's part of it beside
 * S^T and dP^T (cd_sm90_bwd_wide_cluster_early) and, after the dP^T wait, adds the slab to the
 * workspace (cd_sm90_bwd_wide_cluster_late): the exchange's latency (~3,000 cycles measured behind
 * the bulk engine's queue) has a whole block to hide in, and the slab's 32 registers are never
 * live twice. Three receive slots, dS pushed by st.async, slabs by red.global.
 * cd_sm90_bwd_wide_cluster_tail finishes the last block's slab after the walk.
 */
#ifndef CUDADENT_SM90_BWD_WIDE_CLUSTER_CUH
#define CUDADENT_SM90_BWD_WIDE_CLUSTER_CUH

#include "kernels/sm90/bwd_cluster.cuh"
#include "kernels/sm90/bwd_wide_dq.cuh"

/* A consumer's cluster state: the peer's addresses, the leader, and (SM90_BWD_CLUSTER 7) the
 * previous block's slab waiting for the peer's part. */
struct cd_sm90_bwd_cluster_state {
  uint32_t rank, bar_recv, bar_free, recv_peer, bar_recv_peer, bar_free_peer;
  bool leader;
  int sl_prev;      /* the previous block's slab, -1: none (value 7) */
  float *tile_prev; /* its workspace tile */
  float dq[32];     /* its own keys' part, then both (value 7) */
};

/* Receive slot and phase parity of block x (RECV_FULL / PEER_FREE of that slot). */
__device__ __forceinline__ uint32_t cd_sm90_bwd_recv_slot(uint32_t x) {
  return x % kSm90BwdClusterSlots;
}
__device__ __forceinline__ uint32_t cd_sm90_bwd_recv_parity(uint32_t x) {
  return (x / kSm90BwdClusterSlots) & 1;
}

template <class L, int ST>
__device__ __forceinline__ void cd_sm90_bwd_cluster_state_init(cd_sm90_bwd_cluster_state &cs, uint32_t base,
                                                               bool leader) {
  cs.rank = cd_cluster_ctarank();
  cs.bar_recv = base + L::BAR_OFF + 8 * (1 + 2 * ST);
  cs.bar_free = cs.bar_recv + 8 * kSm90BwdClusterSlots;
  cs.recv_peer = cd_mapa(base + L::RECV_OFF, cs.rank ^ 1u);
  cs.bar_recv_peer = cd_mapa(cs.bar_recv, cs.rank ^ 1u);
  cs.bar_free_peer = cd_mapa(cs.bar_free, cs.rank ^ 1u);
  cs.leader = leader;
  cs.sl_prev = -1;
  cs.tile_prev = nullptr;
}

/* The leader's wait before block x's dS barrier: the peer has read our dS^T of block x - 1 (x - 2
 * for value 7: a slot is refilled three blocks later there). */
__device__ __forceinline__ void cd_sm90_bwd_cluster_wait_free(const cd_sm90_bwd_cluster_state &cs, uint32_t x) {
  constexpr uint32_t lag = kSm90BwdClusterDelay ? 2 : 1;
  if (kSm90BwdClusterExchange && cs.leader && x >= lag)
    cd_mbar_wait_cluster(cs.bar_free + 8 * cd_sm90_bwd_recv_slot(x - lag), cd_sm90_bwd_recv_parity(x - lag));
}

/* After the walk of n blocks: the leader waits for the peer's reads not yet waited, the last
 * remote accesses into this CTA. */
__device__ __forceinline__ void cd_sm90_bwd_cluster_wait_end(const cd_sm90_bwd_cluster_state &cs, uint32_t n) {
  constexpr uint32_t lag = kSm90BwdClusterDelay ? 2 : 1;
  if (kSm90BwdClusterExchange && cs.leader)
    for (uint32_t x = n >= lag ? n - lag : 0; x < n; ++x)
      cd_mbar_wait_cluster(cs.bar_free + 8 * cd_sm90_bwd_recv_slot(x), cd_sm90_bwd_recv_parity(x));
}

/* The peer's part of slab sl (received dS^T of block x times the peer's K slab) into dq. */
template <int BN, bool kFp16, bool kAccumulate, class L>
__device__ __forceinline__ void cd_sm90_bwd_cluster_peer_part(float (&dq)[32], const cd_sm90_bwd_cluster_state &cs,
                                                              uint32_t base, uint32_t x, int sl) {
  const uint32_t slot = cd_sm90_bwd_recv_slot(x);
  cd_mbar_wait_cluster(cs.bar_recv + 8 * slot, cd_sm90_bwd_recv_parity(x));
  if (kSm90BwdClusterPush) cd_fence_proxy_async_smem(); /* the peer's st.async -> our wgmma reads */
  cd_wgmma_fence();
  cd_sm90_gemm_ss<64, BN, kFp16, kAccumulate, cd_sm90_mn_major, cd_sm90_mn_major>(
    dq, cd_gmma_desc_sw128(base + L::RECV_OFF + slot * L::PDS_BYTES, BN * 128, 1024),
    cd_gmma_desc_sw128(base + L::KP_OFF + sl * BN * 128, BN * 128, 1024));
}

/* Slab sl's 16 x 64 floats of this warp to the workspace tile (chunk 4 sl + warp). */
__device__ __forceinline__ void cd_sm90_bwd_cluster_reduce(const float (&dq)[32], float *tile_dst, int sl,
                                                           uint32_t stage_dq, int warp, int lane) {
  if constexpr (kSm90BwdClusterRedDq) cd_sm90_bwd_wide_red_dq<1, 0>(dq, tile_dst + sl * 4096, warp, lane);
  else cd_sm90_bwd_wide_bulk_dq<1, 0>(dq, tile_dst + sl * 4096, stage_dq, warp, lane);
}

/* Block x's products after its dS barrier (dv, dk: the consumer's accumulators; the descriptors
 * those of bwd_wide_kernel.cuh's consumer; s the ring stage, buf the dS^T buffer). */
template <int BM, int BN, int W, bool kFp16, class L, class P>
__device__ __forceinline__ void cd_sm90_bwd_wide_cluster_block(
    cd_sm90_bwd_cluster_state &cs, float (&dv)[P::V_N * 32], float (&dk)[P::K_N * 32], float *tile_dst,
    uint32_t base, uint32_t x, uint32_t s, uint32_t buf, uint64_t desc_pt, uint64_t desc_dst, uint64_t desc_do_mn,
    uint64_t desc_q_mn, uint32_t sK, uint32_t sDS, uint32_t stage_dq, uint32_t bar_q_empty, int warp, int lane) {
  constexpr bool kExchange = kSm90BwdClusterExchange, kDelay = kSm90BwdClusterDelay;
  const uint32_t slot = cd_sm90_bwd_recv_slot(x);
  if (kExchange && cs.leader) {
    cd_mbar_arrive_expect_tx(cs.bar_recv + 8 * slot, L::PDS_BYTES);
    if (!kSm90BwdClusterPush)
      cd_bulk_copy_to_peer(cs.recv_peer + slot * L::PDS_BYTES, sDS + buf * L::PDS_BYTES, L::PDS_BYTES,
                           cs.bar_recv_peer + 8 * slot);
  }
  const int sl = cd_sm90_bwd_pair_slab(x, cs.rank, W);
  float dq_own[32];
  float(&dq)[32] = kDelay ? cs.dq : dq_own; /* value 7: carried into the next block */
  cd_wgmma_fence();
  cd_sm90_gemm_ss<P::V_N * 64, BM, kFp16, true, cd_sm90_k_major<BN>, cd_sm90_mn_major>(
    dv, cd_gmma_desc_add(desc_pt, buf * L::PDS_BYTES), cd_gmma_desc_add(desc_do_mn, s * L::DO_BYTES));
  cd_sm90_gemm_ss<P::K_N * 64, BM, kFp16, true, cd_sm90_k_major<BN>, cd_sm90_mn_major>(
    dk, cd_gmma_desc_add(desc_dst, buf * L::PDS_BYTES), cd_gmma_desc_add(desc_q_mn, s * L::Q_BYTES));
  cd_wgmma_commit();
  if (sl >= 0) { /* our keys' part, then (not value 7) the peer's */
    cd_wgmma_fence();
    cd_sm90_gemm_ss<64, BN, kFp16, false, cd_sm90_mn_major, cd_sm90_mn_major>(
      dq, cd_gmma_desc_add(cd_gmma_desc_sw128(sDS, BN * 128, 1024), buf * L::PDS_BYTES),
      cd_gmma_desc_add(cd_gmma_desc_sw128(sK, BN * 128, 1024), sl * BN * 128));
    if (kExchange && !kDelay) cd_sm90_bwd_cluster_peer_part<BN, kFp16, true, L>(dq, cs, base, x, sl);
    cd_wgmma_commit();
  }
  cd_wgmma_wait<0>();
  cd_sm90_fence_regs(dv);
  cd_sm90_fence_regs(dk);
  cd_sm90_fence_regs(dq);
  __syncwarp(); /* every lane's products and LSE2 / delta reads before lane 0's arrivals */
  if (lane == 0) {
    if (kExchange && !kDelay) cd_mbar_arrive_remote(cs.bar_free_peer + 8 * slot); /* we have read the peer's dS^T */
    cd_mbar_arrive(bar_q_empty + 8 * s);
  }
  if (kDelay) {
    cs.sl_prev = sl;
    cs.tile_prev = tile_dst;
  } else if (sl >= 0) {
    cd_sm90_bwd_cluster_reduce(dq, tile_dst, sl, stage_dq, warp, lane);
  }
}

/* Value 7, at block x's start, after S^T and dP^T are issued: the peer's part of block x - 1's slab
 * into cs.dq, as one more commit group (empty where there is none: the S^T wait counts on it). */
template <int BN, bool kFp16, class L>
__device__ __forceinline__ void cd_sm90_bwd_wide_cluster_early(cd_sm90_bwd_cluster_state &cs, uint32_t base,
                                                               uint32_t x) {
  if (x >= 1 && cs.sl_prev >= 0) cd_sm90_bwd_cluster_peer_part<BN, kFp16, true, L>(cs.dq, cs, base, x - 1, cs.sl_prev);
  cd_wgmma_commit();
}

/* Value 7, after block x's dP^T wait (which also waited the peer's part): we have read the peer's
 * dS^T of block x - 1; block x - 1's slab to the workspace. */
__device__ __forceinline__ void cd_sm90_bwd_wide_cluster_late(cd_sm90_bwd_cluster_state &cs, uint32_t x,
                                                              uint32_t stage_dq, int warp, int lane) {
  if (x == 0) return;
  cd_sm90_fence_regs(cs.dq);
  __syncwarp();
  if (lane == 0) cd_mbar_arrive_remote(cs.bar_free_peer + 8 * cd_sm90_bwd_recv_slot(x - 1));
  if (cs.sl_prev >= 0) cd_sm90_bwd_cluster_reduce(cs.dq, cs.tile_prev, cs.sl_prev, stage_dq, warp, lane);
}

/* Value 7, after the walk of n blocks: the peer's part of the last block's slab, this warp's read of
 * the peer's last dS^T, the slab's reduce. */
template <int BN, bool kFp16, class L>
__device__ __forceinline__ void cd_sm90_bwd_wide_cluster_tail(cd_sm90_bwd_cluster_state &cs, uint32_t base,
                                                              uint32_t n, uint32_t stage_dq, int warp, int lane) {
  if constexpr (kSm90BwdClusterDelay) {
    if (n == 0) return;
    cd_sm90_bwd_wide_cluster_early<BN, kFp16, L>(cs, base, n);
    cd_wgmma_wait<0>();
    cd_sm90_bwd_wide_cluster_late(cs, n, stage_dq, warp, lane);
  }
}

#endif /* CUDADENT_SM90_BWD_WIDE_CLUSTER_CUH */
