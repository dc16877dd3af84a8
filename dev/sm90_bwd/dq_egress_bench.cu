/*
 * dq_egress_bench.cu - microbenchmark M0 of docs/kernels/sm90_bwd_dq_path.md section 3: how many
 * bytes a clock one SM sends to L2 by the paths the Hopper backward uses for its fp32 dQ partials,
 * alone and with concurrent incoming bulk loads, at 1..all SMs at once. One CTA an SM (>= 120 KiB
 * of dynamic shared memory each), 288 threads: warps 0-7 the "consumers" (the egress), warp 8 the
 * "producer" (incoming loads, --load-kib > 0 only).
 *
 * Modes (--mode), per consumer round of --kib KiB a CTA (default 32):
 *   bulkred   each consumer warp st.shared.v4's its kib/8 part of an fp32 staging buffer,
 *             fence.proxy.async.shared::cta, __syncwarp, then lane 0 issues one
 *             cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 of the part and commits;
 *             before rewriting a staging part lane 0 waits cp.async.bulk.wait_group.read (bufs-1)
 *             (--bufs 1: the kernel's single staging buffer; --bufs 2: double-buffered)
 *   bulkstore the same with cp.async.bulk.global.shared::cta.bulk_group (a plain copy)
 *   red       each thread kib/4 x red.global.add.v4.f32 from registers (no shared memory)
 *   store     the same with st.global.v4.f32
 *   dsmem     clusters of 2 CTAs (even --ctas): each consumer warp st.shared.v4's its part of a
 *             double-buffered staging round, then lane 0 bulk-copies it into the peer CTA's
 *             receive buffer (cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx,
 *             completion on the peer's "full" mbarrier); the peer's warp 8 (the receiver here, no
 *             --load-kib) waits, checks the round's data and frees the buffer by a remote arrive
 *             on the sender's "free" mbarrier. Bytes leave the SM to the peer, none to L2
 *   mix       the same cluster, warps 0-3 to the peer as dsmem, warps 4-7 bulk-reduce to L2 as
 *             bulkred (double-buffered): option O2's d128 traffic (half dS to the peer, half dQ to
 *             L2). mix's out_Bclk well above bulkred's: SM-to-SM bytes escape the limit
 *             (docs/kernels/sm90_bwd_cluster_ds.md step 0)
 * Destination: each CTA cycles through its own slice of a --ws-mib MiB fp32 buffer (32: L2-resident
 * on H100/H200; 256: beyond L2); --shared-dst: all CTAs into the same kib KiB (contention).
 * Producer (--load-kib N): lane 0 loops cp.async.bulk.shared::cluster.global.mbarrier::complete_tx
 * of N KiB a round (4 KiB pieces) from an --src-mib MiB read-only buffer (default 8, L2-resident)
 * into two shared stages (two mbarriers: one round in flight while the other lands), until the
 * consumers are done; independent of the consumers' rounds.
 *
 * Build and run (GPU machine; dev/sm90_bwd/dq_path_run.sh egress does this):
 *   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a -Isrc \
 *     dev/sm90_bwd/dq_egress_bench.cu -o dq_egress_bench      (from the repository root)
 *   ./dq_egress_bench --sweep   (4 modes + bulkred --bufs 2, x ctas {1,16,66,#SMs} x load-kib {0,32};
 *                                then dsmem and mix at ctas {2,16,66,#SMs even}, no loads)
 *   ./dq_egress_bench --mode bulkred --ctas 132 --kib 32 --bufs 2 --load-kib 32 [--ws-mib 256]
 *       [--shared-dst] [--rounds 2000] [--reps 5] [--src-mib 8]
 * Output: "check" lines first (a 37-round run from a zeroed destination, PASS/FAIL: bulkred / red
 * must leave every word at exactly 1.0 x the rounds that hit it, the stores 1.0 where written, 0
 * elsewhere; the producer checks the first word of every load), then one line a configuration,
 * medians over --reps:
 *   wall_ms   cudaEvent time of the launch;  out_GBs / in_GBs  bytes out / in, all CTAs, / wall
 *   out_Bclk  bytes out a CTA / its SM clocks (clock64, consumers' start to all writes complete),
 *             median over CTAs (min, max in out_min / out_max): the per-SM egress rate
 *   in_Bclk   the producer's loaded bytes / its clocks, median over CTAs
 *   MHz       SM clock (clock64 against %globaltimer);  sms  distinct %smid seen (must = ctas)
 * Reading: out_Bclk flat from 1 to all CTAs = a per-SM limit ((iii) of the note); falling as
 * CTAs grow while out_GBs saturates = a shared L2 / crossbar limit ((iv)).
 * Bounded: every loop has a fixed trip count or cap; mbarrier waits give up after ~2^22 tries and
 * set an error flag (reported as TIMEOUT) instead of hanging.
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>
#include "kernels/sm90/ptx_sm90.cuh"
#include "cluster_ptx.cuh"

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));         \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

enum { M_BULKRED, M_BULKSTORE, M_RED, M_STORE, M_DSMEM, M_MIX, M_COUNT };
static const char *kModeName[M_COUNT] = {"bulkred", "bulkstore", "red", "store", "dsmem", "mix"};
enum { R_C0, R_C1, R_NS0, R_NS1, R_SMID, R_P0, R_P1, R_PBYTES, R_N }; /* a CTA's record words */
enum { ERR_TIMEOUT = 1, ERR_LOADDATA = 2 };
static const uint32_t kMaxLoadRounds = 1u << 20, kMaxTries = 1u << 22, kThreads = 288;

struct Params {
  float *dst;                  /* fp32 destination */
  const uint32_t *src;         /* load source: word i holds i */
  unsigned long long *rec;     /* R_N words a CTA */
  int *err;
  int mode, rounds, bufs;
  uint32_t round_bytes;        /* kib * 1024 */
  uint32_t load_bytes;         /* load_kib * 1024, 0: no producer */
  uint32_t slot_stride;        /* bytes between CTAs' slices (0 with --shared-dst) */
  uint32_t nslots;             /* rounds a slice holds */
  uint32_t src_slots;          /* load rounds the source holds */
  float value;
};

__device__ __forceinline__ unsigned long long clk(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%clock64;\n" : "=l"(t)::"memory");
  return t;
}
__device__ __forceinline__ unsigned long long gtime(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t)::"memory");
  return t;
}
__device__ __forceinline__ void st_shared_v4(uint32_t a, float v) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %1, %1, %1};\n" ::"r"(a), "f"(v) : "memory");
}
__device__ __forceinline__ void red_v4(float *p, float v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %1, %1, %1};\n" ::"l"(p), "f"(v) : "memory");
}
__device__ __forceinline__ void st_global_v4(float *p, float v) {
  asm volatile("st.global.v4.f32 [%0], {%1, %1, %1, %1};\n" ::"l"(p), "f"(v) : "memory");
}
/* thread 0 at a CTA's end: its start (t0 clock64, n0 %globaltimer), its end, and its SM */
__device__ __forceinline__ void record_end(unsigned long long *rec, unsigned long long t0, unsigned long long n0) {
  rec[R_C1] = clk();
  rec[R_NS1] = gtime();
  rec[R_C0] = t0;
  rec[R_NS0] = n0;
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(s));
  rec[R_SMID] = s;
}

/* the cluster modes' PTX: cluster_ptx.cuh (cd_cluster_ctarank, cd_mapa, cd_bulk_copy_to_peer,
 * cd_mbar_arrive_remote, cd_cluster_sync), and a capped wait here */
/* a wait at cluster scope (the phase completed by a peer's copy or arrive), capped as below */
__device__ __forceinline__ bool mbar_wait_cluster_bounded(uint32_t bar, uint32_t parity, int *err) {
#pragma unroll 1
  for (uint32_t i = 0; i < kMaxTries; ++i) {
    uint32_t ok;
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok)
                 : "r"(bar), "r"(parity)
                 : "memory");
    if (ok) return true;
  }
  atomicOr(err, ERR_TIMEOUT);
  return false;
}

/* cd_mbar_wait with a cap: false (and the error flag set) after kMaxTries unsuccessful tries */
__device__ __forceinline__ bool mbar_wait_bounded(uint32_t bar, uint32_t parity, int *err) {
#pragma unroll 1
  for (uint32_t i = 0; i < kMaxTries; ++i)
    if (cd_mbar_try_wait(bar, parity)) return true;
  atomicOr(err, ERR_TIMEOUT);
  return false;
}

/* Producer lane 0: round q (q = 0, 1, ...) goes to stage q & 1, whose mbarrier is in phase q >> 1,
 * so its wait parity is (q >> 1) & 1. Round q is issued only after round q - 2 (same stage) was
 * waited for, so the stage's buffer and barrier are free: one arrive.expect_tx (the barrier's only
 * arrival) then the pieces, whose complete_tx bytes sum to exactly the expected count. */
__device__ __forceinline__ void load_issue(const Params &p, uint32_t q, uint32_t ld_buf, uint32_t bars) {
  const uint32_t s = q & 1, buf = ld_buf + s * p.load_bytes, bar = bars + 8 * s;
  const uint32_t slot = (blockIdx.x * 7u + q) % p.src_slots;
  const char *src = (const char *)p.src + (size_t)slot * p.load_bytes;
  cd_mbar_arrive_expect_tx(bar, p.load_bytes);
  for (uint32_t off = 0; off < p.load_bytes; off += 4096)
    cd_bulk_load_1d(buf + off, src + off, min(4096u, p.load_bytes - off), bar);
}

__device__ void producer(const Params &p, uint32_t ld_buf, uint32_t bars, volatile uint32_t *done,
                         unsigned long long *rec) {
  const unsigned long long t0 = clk();
  unsigned long long bytes = 0;
  load_issue(p, 0, ld_buf, bars);
  load_issue(p, 1, ld_buf, bars);
  uint32_t issued = 2, q = 0;
  for (; q < kMaxLoadRounds; ++q) {
    if (!mbar_wait_bounded(bars + 8 * (q & 1), (q >> 1) & 1, p.err)) return; /* no exit drain: error */
    /* the barrier's phase completion makes the landed bytes visible: check the first word */
    uint32_t w;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(w) : "r"(ld_buf + (q & 1) * p.load_bytes) : "memory");
    const uint32_t slot = (blockIdx.x * 7u + q) % p.src_slots;
    if (w != slot * (p.load_bytes / 4)) atomicOr(p.err, ERR_LOADDATA);
    bytes += p.load_bytes;
    if (*done) { ++q; break; }
    if (issued < kMaxLoadRounds) load_issue(p, issued++, ld_buf, bars); /* issued == q + 2 */
  }
  rec[R_P1] = clk();
  rec[R_P0] = t0;
  rec[R_PBYTES] = bytes;
  for (; q < issued; ++q) /* drain the round still in flight before the CTA (and its smem) ends */
    if (!mbar_wait_bounded(bars + 8 * (q & 1), (q >> 1) & 1, p.err)) return;
}

/* red / store modes: thread t's op i of a round writes float4 i * 256 + t of the round's slot (a
 * warp's instruction: 512 contiguous bytes), kib / 4 ops a round */
template <bool RED>
__device__ __forceinline__ void reg_rounds(const Params &p, float *cta_dst, int tid) {
  const uint32_t ops = p.round_bytes / (256 * 16);
  uint32_t slot = 0;
  for (int r = 0; r < p.rounds; ++r) {
    float *g = cta_dst + (size_t)slot * p.round_bytes / 4 + tid * 4;
#pragma unroll 8
    for (uint32_t i = 0; i < ops; ++i) {
      if (RED) red_v4(g + i * 1024, p.value);
      else st_global_v4(g + i * 1024, p.value);
    }
    if (++slot == p.nslots) slot = 0;
  }
}

/* dsmem / mix: the CTA pair's rounds. Shared memory: staging [2][round] | receive [2][round] |
 * full[2] (this CTA receives: one arrive.expect_tx by the receiver a round, the peer's copies'
 * complete_tx) | free[2] (this CTA sends: one remote arrive by the peer's receiver a round).
 * Round r uses buffer b = r & 1, phase r >> 1 of full[b] / free[b]. A sender warp rewrites its
 * staging part of buffer b and copies into the peer's receive buffer b only after the peer freed
 * round r - 2 (free[b], phase (r >> 1) - 1), which the peer does after round r - 2 landed there:
 * so the copy of round r - 2 has also read the staging. The receiver's expect_tx may come after
 * the copies' complete_tx (tx-count goes negative until it does; the phase needs the arrival).
 * Both CTAs pass a cluster barrier after the init and before exit (no remote access to an
 * uninitialized or exited CTA); every thread reaches both. */
__device__ void cluster_rounds(const Params &p, uint32_t stg, unsigned long long *rec) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tid = threadIdx.x;
  const uint32_t rb = p.round_bytes, part = rb / 8;
  const uint32_t recv = stg + 2 * rb, full = recv + 2 * rb, freeb = full + 16;
  const uint32_t peer = cd_cluster_ctarank() ^ 1;
  const int dsmem_warps = p.mode == M_DSMEM ? 8 : 4; /* mix: warps 4-7 to L2 */
  const uint32_t rx_bytes = dsmem_warps * part;
  if (tid == 0) {
    for (int i = 0; i < 2; ++i) {
      cd_mbar_init(full + 8 * i, 1);
      cd_mbar_init(freeb + 8 * i, 1);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  cd_cluster_sync();
  unsigned long long t0 = 0, n0 = 0;
  if (tid == 0) { n0 = gtime(); t0 = clk(); }
  if (warp == 8) {
    if (lane == 0) { /* the receiver */
      for (int r = 0; r < p.rounds; ++r) {
        const uint32_t b = r & 1;
        cd_mbar_arrive_expect_tx(full + 8 * b, rx_bytes);
        if (!mbar_wait_cluster_bounded(full + 8 * b, (r >> 1) & 1, p.err)) break;
        float first, last;
        asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(first) : "r"(recv + b * rb) : "memory");
        asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(last) : "r"(recv + b * rb + rx_bytes - 4) : "memory");
        if (first != (float)(r + 1) || last != (float)(r + 1)) atomicOr(p.err, ERR_LOADDATA);
        cd_mbar_arrive_remote(cd_mapa(freeb + 8 * b, peer));
      }
    }
  } else if (warp < dsmem_warps) { /* senders to the peer */
    for (int r = 0; r < p.rounds; ++r) {
      const uint32_t b = r & 1, my = stg + b * rb + warp * part;
      if (r >= 2 && !mbar_wait_cluster_bounded(freeb + 8 * b, ((r >> 1) - 1) & 1, p.err)) break;
      for (uint32_t o = lane * 16; o < part; o += 512) st_shared_v4(my + o, (float)(r + 1));
      cd_fence_proxy_async_smem();
      __syncwarp();
      if (lane == 0)
        cd_bulk_copy_to_peer(cd_mapa(recv + b * rb + warp * part, peer), my, part, cd_mapa(full + 8 * b, peer));
    }
    /* the last two rounds landed and were freed by the peer */
    for (int r = p.rounds < 2 ? 0 : p.rounds - 2; r < p.rounds; ++r)
      if (!mbar_wait_cluster_bounded(freeb + 8 * (r & 1), (r >> 1) & 1, p.err)) break;
  } else { /* mix: warps 4-7, bulk reduce of their parts to L2, double-buffered */
    float *cta_dst = p.dst + (size_t)blockIdx.x * p.slot_stride / 4;
    uint32_t slot = 0;
    for (int r = 0; r < p.rounds; ++r) {
      const uint32_t b = r & 1, my = stg + b * rb + warp * part;
      if (lane == 0) cd_tma_store_wait_read<1>();
      __syncwarp();
      for (uint32_t o = lane * 16; o < part; o += 512) st_shared_v4(my + o, p.value);
      cd_fence_proxy_async_smem();
      __syncwarp();
      if (lane == 0) {
        cd_bulk_reduce_add_f32(cta_dst + ((size_t)slot * rb + warp * part) / 4, my, part);
        cd_tma_store_commit();
      }
      if (++slot == p.nslots) slot = 0;
    }
    if (lane == 0) cd_tma_store_wait_all<0>();
  }
  cd_named_bar_sync(1, 288); /* all 9 warps: the CTA's sends and receives are done */
  if (tid == 0) {
    record_end(rec, t0, n0);
  }
  cd_cluster_sync(); /* the peer's last remote arrive on this CTA's free barriers is done */
}

__global__ void __launch_bounds__(kThreads, 1) egress_kernel(const Params p) {
  extern __shared__ __align__(128) unsigned char smem[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, tid = threadIdx.x;
  /* layout: staging (bufs x round) | load stages (2 x load) | 2 mbarriers | done flag */
  const uint32_t stg = cd_smem_addr(smem);
  const uint32_t ld_buf = stg + p.bufs * p.round_bytes;
  const uint32_t bars = ld_buf + 2 * p.load_bytes;
  volatile uint32_t *done = (volatile uint32_t *)(smem + (bars - stg) + 16);
  unsigned long long *rec = p.rec + (size_t)blockIdx.x * R_N;
  if (p.mode == M_DSMEM || p.mode == M_MIX) {
    cluster_rounds(p, stg, rec);
    return;
  }
  if (tid == 0) {
    cd_mbar_init(bars, 1);
    cd_mbar_init(bars + 8, 1);
    *done = 0;
    cd_mbar_fence_init();
  }
  __syncthreads();
  if (warp == 8) {
    if (lane == 0 && p.load_bytes) producer(p, ld_buf, bars, done, rec);
    return;
  }
  unsigned long long t0 = 0, n0 = 0;
  if (tid == 0) { n0 = gtime(); t0 = clk(); }
  float *cta_dst = p.dst + (size_t)blockIdx.x * p.slot_stride / 4;
  if (p.mode == M_BULKRED || p.mode == M_BULKSTORE) {
    const uint32_t part = p.round_bytes / 8; /* a warp's bytes a round */
    uint32_t slot = 0;
    for (int r = 0; r < p.rounds; ++r) {
      const uint32_t b = p.bufs == 2 ? (r & 1) : 0;
      const uint32_t my = stg + b * p.round_bytes + warp * part;
      /* WAR on the staging: the bulk op that read this part (round r - bufs) must be done reading
       * it. Groups are per thread; lane 0 committed one a round, so allowing bufs - 1 pending
       * leaves exactly round r - 1's in flight with --bufs 2, none with --bufs 1. */
      if (lane == 0) {
        if (p.bufs == 2) cd_tma_store_wait_read<1>();
        else cd_tma_store_wait_read<0>();
      }
      __syncwarp();
      for (uint32_t o = lane * 16; o < part; o += 512) st_shared_v4(my + o, p.value);
      cd_fence_proxy_async_smem(); /* each writer: its st.shared before the async proxy's read */
      __syncwarp();
      if (lane == 0) {
        float *g = cta_dst + ((size_t)slot * p.round_bytes + warp * part) / 4;
        if (p.mode == M_BULKRED) cd_bulk_reduce_add_f32(g, my, part);
        else cd_bulk_store(g, my, part);
        cd_tma_store_commit();
      }
      if (++slot == p.nslots) slot = 0;
    }
    if (lane == 0) cd_tma_store_wait_all<0>(); /* writes complete, not only the reads */
  } else {
    if (p.mode == M_RED) reg_rounds<true>(p, cta_dst, tid);
    else reg_rounds<false>(p, cta_dst, tid);
    __threadfence(); /* waits for this thread's reds / stores to be performed */
  }
  cd_named_bar_sync(1, 256); /* the 8 consumer warps only */
  if (tid == 0) {
    record_end(rec, t0, n0);
    *done = 1; /* the producer stops at its next completed round */
  }
}

__global__ void fill_iota(uint32_t *a, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    a[i] = (uint32_t)i;
}

struct Cfg {
  int mode = M_BULKRED, ctas = 0, kib = 32, bufs = 1, load_kib = 0, ws_mib = 32, src_mib = 8;
  int rounds = 2000, reps = 5;
  bool shared_dst = false;
};
struct Bufs {
  float *dst = nullptr; uint32_t *src = nullptr; unsigned long long *rec = nullptr; int *err = nullptr;
};

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/* One launch; records copied to host. Returns wall ms. */
static float launch(const Cfg &c, const Bufs &b, int rounds, std::vector<unsigned long long> &rec, int *err) {
  Params p{};
  p.dst = b.dst; p.src = b.src; p.rec = b.rec; p.err = b.err;
  p.mode = c.mode; p.rounds = rounds; p.bufs = c.bufs; p.value = 1.0f;
  p.round_bytes = c.kib * 1024u;
  p.load_bytes = c.load_kib * 1024u;
  const size_t ws = (size_t)c.ws_mib << 20;
  p.nslots = c.shared_dst ? 1 : (uint32_t)(ws / c.ctas / p.round_bytes);
  p.slot_stride = c.shared_dst ? 0 : p.nslots * p.round_bytes;
  p.src_slots = p.load_bytes ? (uint32_t)(((size_t)c.src_mib << 20) / p.load_bytes) : 1;
  if (p.nslots == 0 || p.src_slots == 0) { fprintf(stderr, "ws-mib / src-mib too small\n"); exit(2); }
  const bool cluster = c.mode == M_DSMEM || c.mode == M_MIX;
  const size_t smem = std::max<size_t>(120 * 1024, cluster ? 4 * (size_t)p.round_bytes + 64
                                                           : c.bufs * p.round_bytes + 2 * p.load_bytes + 64);
  CK(cudaFuncSetAttribute(egress_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, egress_kernel, kThreads, smem));
  if (occ != 1) fprintf(stderr, "warning: %d CTAs fit an SM (want 1)\n", occ);
  CK(cudaMemset(b.err, 0, sizeof(int)));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
  CK(cudaEventRecord(e0));
  if (cluster) { /* pairs of CTAs: cluster dims (2, 1, 1) */
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(c.ctas);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension;
    at[0].val.clusterDim.x = 2;
    at[0].val.clusterDim.y = 1;
    at[0].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, egress_kernel, p));
  } else {
    egress_kernel<<<c.ctas, kThreads, smem>>>(p);
  }
  CK(cudaGetLastError());
  CK(cudaEventRecord(e1));
  CK(cudaEventSynchronize(e1));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, e0, e1));
  CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
  rec.resize((size_t)c.ctas * R_N);
  CK(cudaMemcpy(rec.data(), b.rec, rec.size() * 8, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(err, b.err, sizeof(int), cudaMemcpyDeviceToHost));
  return ms;
}

/* A short run from a zeroed destination against the exact expected word values. */
static bool check(Cfg c, const Bufs &b) {
  const int R = 37; /* odd, > the slots of a slice at 132 CTAs: slots get different counts */
  const size_t ws = (size_t)c.ws_mib << 20, words = ws / 4;
  CK(cudaMemset(b.dst, 0, ws));
  std::vector<unsigned long long> rec;
  int err = 0;
  launch(c, b, R, rec, &err);
  std::vector<float> h(words);
  CK(cudaMemcpy(h.data(), b.dst, ws, cudaMemcpyDeviceToHost));
  const uint32_t rw = c.kib * 256u; /* words a round */
  const uint32_t nslots = c.shared_dst ? 1 : (uint32_t)(ws / c.ctas / (rw * 4));
  std::vector<float> want(words, 0.f);
  const bool add = c.mode == M_BULKRED || c.mode == M_RED || c.mode == M_MIX;
  /* dsmem writes nothing to L2 (its data is checked in the kernel); mix's warps 4-7 add their
   * parts, the second half of each round */
  const uint32_t lo = c.mode == M_MIX ? rw / 2 : 0;
  for (int cta = 0; c.mode != M_DSMEM && cta < c.ctas; ++cta)
    for (int r = 0; r < R; ++r) {
      size_t base = (c.shared_dst ? 0 : (size_t)cta * nslots * rw) + (size_t)(r % nslots) * rw;
      for (uint32_t i = lo; i < rw; ++i) want[base + i] = add ? want[base + i] + 1.f : 1.f;
    }
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < words; ++i)
    if (h[i] != want[i] && bad++ == 0) first = i;
  printf("check %-9s ctas %3d kib %d bufs %d load-kib %d%s: %s", kModeName[c.mode], c.ctas, c.kib, c.bufs,
         c.load_kib, c.shared_dst ? " shared-dst" : "", bad || err ? "FAIL" : "PASS");
  if (bad) printf(" (%zu words wrong, first [%zu] = %g, want %g)", bad, first, h[first], want[first]);
  if (err) printf(" (%s%s)", err & ERR_TIMEOUT ? "TIMEOUT " : "", err & ERR_LOADDATA ? "LOAD DATA" : "");
  printf("\n");
  return !bad && !err;
}

static void measure(const Cfg &c, const Bufs &b) {
  std::vector<unsigned long long> rec;
  std::vector<double> wall, ogbs, igbs, ob, ib, omin, omax, mhz;
  int err = 0, sms = 0;
  launch(c, b, c.rounds, rec, &err); /* warm-up */
  for (int rep = 0; rep < c.reps; ++rep) {
    int e = 0;
    const float ms = launch(c, b, c.rounds, rec, &e);
    err |= e;
    std::vector<double> o, in, f;
    std::vector<unsigned long long> ids;
    double inb = 0, outb = (double)c.rounds * c.kib * 1024.0;
    for (int cta = 0; cta < c.ctas; ++cta) {
      const unsigned long long *r = &rec[(size_t)cta * R_N];
      o.push_back(outb / (double)(r[R_C1] - r[R_C0]));
      f.push_back((double)(r[R_C1] - r[R_C0]) / (double)(r[R_NS1] - r[R_NS0]) * 1e3);
      if (c.load_kib) { in.push_back((double)r[R_PBYTES] / (double)(r[R_P1] - r[R_P0])); inb += r[R_PBYTES]; }
      ids.push_back(r[R_SMID]);
    }
    std::sort(ids.begin(), ids.end());
    sms = (int)(std::unique(ids.begin(), ids.end()) - ids.begin());
    wall.push_back(ms);
    ogbs.push_back(outb * c.ctas / (ms * 1e6));
    igbs.push_back(inb / (ms * 1e6));
    ob.push_back(median(o));
    ib.push_back(median(in));
    omin.push_back(*std::min_element(o.begin(), o.end()));
    omax.push_back(*std::max_element(o.begin(), o.end()));
    mhz.push_back(median(f));
  }
  printf("%-9s %4d %3d %4d %8d %6d%s %9.3f %8.1f %8.1f %8.2f %8.2f %8.2f %8.2f %6.0f %4d%s\n",
         kModeName[c.mode], c.ctas, c.kib, c.bufs, c.load_kib, c.ws_mib, c.shared_dst ? "s" : " ",
         median(wall), median(ogbs), median(igbs), median(ob), median(omin), median(omax), median(ib),
         median(mhz), sms, err ? (err & ERR_TIMEOUT ? "  TIMEOUT" : "  LOAD-DATA-ERR") : "");
  fflush(stdout);
}

static void header(void) {
  printf("%-9s %4s %3s %4s %8s %7s %9s %8s %8s %8s %8s %8s %8s %6s %4s\n", "mode", "ctas", "kib", "bufs",
         "load_kib", "ws_mib", "wall_ms", "out_GBs", "in_GBs", "out_Bclk", "out_min", "out_max", "in_Bclk",
         "MHz", "sms");
}

int main(int argc, char **argv) {
  Cfg c;
  bool sweep = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    auto num = [&](void) {
      if (i + 1 >= argc) { fprintf(stderr, "%s needs a value\n", a); exit(2); }
      return atoi(argv[++i]);
    };
    if (!strcmp(a, "--sweep")) sweep = true;
    else if (!strcmp(a, "--shared-dst")) c.shared_dst = true;
    else if (!strcmp(a, "--mode")) {
      const char *m = i + 1 < argc ? argv[++i] : "";
      c.mode = -1;
      for (int k = 0; k < M_COUNT; ++k) if (!strcmp(m, kModeName[k])) c.mode = k;
      if (c.mode < 0) { fprintf(stderr, "unknown mode %s\n", m); return 2; }
    }
    else if (!strcmp(a, "--ctas")) c.ctas = num();
    else if (!strcmp(a, "--kib")) c.kib = num();
    else if (!strcmp(a, "--bufs")) c.bufs = num();
    else if (!strcmp(a, "--load-kib")) c.load_kib = num();
    else if (!strcmp(a, "--ws-mib")) c.ws_mib = num();
    else if (!strcmp(a, "--src-mib")) c.src_mib = num();
    else if (!strcmp(a, "--rounds")) c.rounds = num();
    else if (!strcmp(a, "--reps")) c.reps = num();
    else { fprintf(stderr, "unknown argument %s (see the header of dq_egress_bench.cu)\n", a); return 2; }
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int nsm = prop.multiProcessorCount;
  if (c.ctas <= 0 || c.ctas > nsm) c.ctas = nsm;
  const int nsm_even = nsm & ~1;
  if ((c.mode == M_DSMEM || c.mode == M_MIX) &&
      (c.ctas % 2 || c.load_kib || 4 * (size_t)c.kib * 1024 + 64 > 227 * 1024)) {
    fprintf(stderr, "dsmem / mix: an even --ctas, no --load-kib (warp 8 receives), 4 x kib <= 227 KiB\n");
    return 2;
  }
  const size_t stage_max = 227 * 1024 - 64;
  if (c.kib <= 0 || c.kib % 4 || (c.bufs != 1 && c.bufs != 2) || c.load_kib < 0 || c.load_kib % 4 ||
      c.rounds <= 0 || c.reps <= 0 ||
      (size_t)c.bufs * c.kib * 1024 + 2 * (size_t)c.load_kib * 1024 > stage_max) {
    fprintf(stderr, "need kib, load-kib multiples of 4, bufs 1 or 2, bufs*kib + 2*load-kib <= 227 KiB\n");
    return 2;
  }
  printf("# %s, %d SMs, L2 %d MiB; rounds %d reps %d src-mib %d\n", prop.name, nsm, prop.l2CacheSize >> 20,
         c.rounds, c.reps, c.src_mib);
  Bufs b;
  CK(cudaMalloc(&b.dst, (size_t)c.ws_mib << 20));
  CK(cudaMalloc(&b.src, (size_t)c.src_mib << 20));
  CK(cudaMalloc(&b.rec, (size_t)nsm * R_N * 8));
  CK(cudaMalloc(&b.err, sizeof(int)));
  fill_iota<<<264, 256>>>(b.src, ((size_t)c.src_mib << 20) / 4);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  bool ok = true;
  if (sweep) { /* every mode, plus bulkred double-buffered; checks with the producer on, all SMs */
    const int ctas[4] = {1, 16, 66, nsm}, vm[5] = {M_BULKRED, M_BULKRED, M_BULKSTORE, M_RED, M_STORE},
              vb[5] = {1, 2, 1, 1, 1};
    for (int v = 0; v < 5; ++v) {
      Cfg k = c; k.mode = vm[v]; k.bufs = vb[v]; k.ctas = nsm; k.load_kib = 32;
      ok &= check(k, b);
    }
    header();
    for (int v = 0; v < 5; ++v)
      for (int ci = 0; ci < 4; ++ci)
        for (int l = 0; l < 2; ++l) {
          Cfg k = c; k.mode = vm[v]; k.bufs = vb[v]; k.ctas = std::min(ctas[ci], nsm);
          k.load_kib = l ? 32 : 0;
          measure(k, b);
        }
    /* option O2's question: bulkred (bufs 2) against mix and dsmem at the same CTA counts; the
     * cluster modes last, so that a failing cluster launch (CK exits) loses nothing before them */
    for (int m = M_DSMEM; m <= M_MIX; ++m) { /* pairs, no producer loads */
      Cfg k = c; k.mode = m; k.bufs = 2; k.ctas = nsm_even; k.load_kib = 0;
      ok &= check(k, b);
    }
    const int cctas[4] = {2, 16, 66, nsm_even};
    for (int m = M_DSMEM; m <= M_MIX; ++m)
      for (int ci = 0; ci < 4; ++ci) {
        Cfg k = c; k.mode = m; k.bufs = 2; k.ctas = std::min(cctas[ci], nsm_even); k.load_kib = 0;
        measure(k, b);
      }
  } else {
    ok &= check(c, b);
    header();
    measure(c, b);
  }
  CK(cudaFree(b.dst)); CK(cudaFree(b.src)); CK(cudaFree(b.rec)); CK(cudaFree(b.err));
  return ok ? 0 : 1;
}
