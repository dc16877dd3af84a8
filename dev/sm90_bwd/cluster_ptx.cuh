/*
 * cluster_ptx.cuh - the thread-block-cluster PTX of dq_egress_bench.cu's dsmem and mix modes (PTX
 * ISA: %cluster_ctarank, mapa, barrier.cluster, mbarrier arrive at cluster scope, cp.async.bulk
 * shared::cta -> shared::cluster). Kept here from src/kernels/sm90/bwd_cluster.cuh, deleted with
 * option O2 in session 26 (docs/kernels/sm90_bwd_cluster_ds.md).
 */
#ifndef CUDADENT_DEV_SM90_BWD_CLUSTER_PTX_CUH
#define CUDADENT_DEV_SM90_BWD_CLUSTER_PTX_CUH

#include <stdint.h>

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

/* 9.7.13.3 barrier.cluster: every thread of both CTAs. */
__device__ __forceinline__ void cd_cluster_sync(void) {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
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

#endif /* CUDADENT_DEV_SM90_BWD_CLUSTER_PTX_CUH */
