/*
 * ptx_sm90.cuh - inline-PTX wrappers for the Hopper (sm_90a) features the sm90 kernels use:
 * mbarriers, the tensor memory accelerator (cp.async.bulk.tensor loads and stores), proxy fences,
 * named barriers, setmaxnreg, and warpgroup matrix multiply-accumulate (wgmma) with its shared-
 * memory matrix descriptors. Each wrapper names its section of the PTX ISA (version 8.x numbering).
 *
 * Only code compiled for sm_90a may include this file (wgmma and setmaxnreg need the "a" target).
 * Shared-memory addresses are 32-bit shared-window addresses (cd_smem_addr, common/ptx.cuh), as
 * PTX's .shared::cta wants. What the sm80 kernels use too (pack, exp2) is in common/ptx.cuh.
 */
#ifndef CUDADENT_SM90_PTX_SM90_CUH
#define CUDADENT_SM90_PTX_SM90_CUH

#include <stdint.h>
#include <cuda.h> /* CUtensorMap */
#include "kernels/common/ptx.cuh" /* cd_smem_addr, cd_pack2, cd_exp2: shared with sm80 */

/* ---- mbarrier (PTX ISA 9.7.13.15 mbarrier) ------------------------------------------------- */

/* 9.7.13.15.9 mbarrier.init: expected arrival count of each phase. */
__device__ __forceinline__ void cd_mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/* 9.7.13.4.x fence.mbarrier_init: makes the initialisations visible to the async proxy (TMA
 * completes transactions on these barriers) before any thread uses them. */
__device__ __forceinline__ void cd_mbar_fence_init(void) {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* 9.7.13.15.13 mbarrier.arrive: one arrival, default .release.cta semantics. */
__device__ __forceinline__ void cd_mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* The same where pred is nonzero, as one predicated instruction: no branch, so no basic-block
 * boundary for ptxas between a wgmma and its wait (see cd_sm90_fwd_consumer_step). */
__device__ __forceinline__ void cd_mbar_arrive_if(uint32_t bar, int pred) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n" ::"r"(bar),
      "r"(pred)
      : "memory");
}

/* 9.7.13.15.13 mbarrier.arrive.expect_tx: one arrival plus tx-count bytes the phase must still
 * receive from async copies (cp.async.bulk complete_tx) before it completes. */
__device__ __forceinline__ void cd_mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}

/* 9.7.13.15.16 mbarrier.try_wait.parity: true once the phase of the given parity has completed.
 * A barrier in its first phase (parity 0 pending) reports the "previous" phase, parity 1, as
 * complete: producers wait on empty barriers with parity (phase ^ 1) from the start. */
__device__ __forceinline__ uint32_t cd_mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n.reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok;
}

__device__ __forceinline__ void cd_mbar_wait(uint32_t bar, uint32_t parity) {
  while (!cd_mbar_try_wait(bar, parity)) {
  }
}

/* ---- tensor memory accelerator (PTX ISA 9.7.9.25 cp.async.bulk.tensor) -------------------- */

/* 9.7.9.25.4.x prefetch.tensormap: pulls the descriptor (a __grid_constant__ parameter) into the
 * cache ahead of its first use. */
__device__ __forceinline__ void cd_tma_prefetch_desc(const CUtensorMap *map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)map) : "memory");
}

/* 9.7.9.25.4.1 cp.async.bulk.tensor (global -> shared, tile mode, 4-d): the box at coordinates
 * (c0 innermost .. c3) lands in shared memory at dst, laid out (and swizzled) as the tensor map
 * says; rows outside the tensor are zero-filled. Completion: complete_tx on the mbarrier (the
 * full box's bytes are counted, out-of-bounds ones included). */
__device__ __forceinline__ void cd_tma_load_4d(uint32_t dst, const CUtensorMap *map, uint32_t bar,
                                               int c0, int c1, int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];\n" ::"r"(dst),
      "l"((uint64_t)map), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

/* 9.7.9.25.4.1 cp.async.bulk.tensor (shared -> global, tile mode, 4-d, bulk_group completion):
 * elements of the box outside the tensor are not written (clipped). */
__device__ __forceinline__ void cd_tma_store_4d(const CUtensorMap *map, uint32_t src, int c0, int c1,
                                                int c2, int c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];\n" ::"l"(
          (uint64_t)map),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}

/* 9.7.9.25.4.2 cp.async.bulk (global -> shared, non-tensor): bytes (a multiple of 16, both
 * addresses 16-byte aligned) copied to dst, completion counted as transaction bytes on bar. */
__device__ __forceinline__ void cd_bulk_load_1d(uint32_t dst, const void *src, uint32_t bytes,
                                                uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
      "l"((uint64_t)src), "r"(bytes), "r"(bar)
      : "memory");
}

/* 9.7.9.25.4.5 cp.reduce.async.bulk (shared -> global, non-tensor, bulk_group completion):
 * dst[i] += src[i] for bytes / 4 floats, each addition atomic at the L2 (.add.f32). */
__device__ __forceinline__ void cd_bulk_reduce_add_f32(float *dst, uint32_t src, uint32_t bytes) {
  asm volatile(
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
          (uint64_t)dst),
      "r"(src), "r"(bytes)
      : "memory");
}

/* 9.7.9.25.4.2 cp.async.bulk (shared -> global, non-tensor, bulk_group completion): a plain copy.
 * Used only by the dev measurement SM90_BWD_SKIP_DQ 2 (config.cuh: dQ stored, not added). */
__device__ __forceinline__ void cd_bulk_store(void *dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"((uint64_t)dst), "r"(src),
               "r"(bytes)
               : "memory");
}

/* 9.7.9.25.4.3 cp.async.bulk.commit_group. */
__device__ __forceinline__ void cd_tma_store_commit(void) {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}

/* 9.7.9.25.4.4 cp.async.bulk.wait_group.read: the committed stores have finished reading their
 * shared-memory source (it may be overwritten), all but the newest N groups. */
template <int N>
__device__ __forceinline__ void cd_tma_store_wait_read(void) {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

/* 9.7.9.25.4.4 cp.async.bulk.wait_group: the committed stores are complete (writes done). */
template <int N>
__device__ __forceinline__ void cd_tma_store_wait_all(void) {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

/* ---- fences and barriers --------------------------------------------------------------------- */

/* 9.7.13.4 membar/fence, fence.proxy.async: orders this thread's generic-proxy shared-memory
 * writes before later async-proxy accesses (a TMA store reading what st.shared wrote). */
__device__ __forceinline__ void cd_fence_proxy_async_smem(void) {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* 9.7.13.1 bar.sync / barrier.sync with a thread count: named barrier id among `count` threads. */
__device__ __forceinline__ void cd_named_bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/* The same without .aligned (barrier.sync): bar.sync is barrier.sync.aligned, which requires every
 * thread of the CTA that takes part to execute the same barrier instruction; warps that meet at one
 * barrier from different code (the wide backward's consumers are two template instances) must use
 * this form (compute-sanitizer synccheck reports the aligned one as divergent, and it is undefined). */
__device__ __forceinline__ void cd_named_bar_sync_any_pc(int id, int count) {
  asm volatile("barrier.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/* 9.7.13.1 bar.arrive: counts this warp's arrival at named barrier id without waiting. */
__device__ __forceinline__ void cd_named_bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/* The same without .aligned (barrier.arrive): for barriers that warps reach from different code
 * (the deterministic backward's dQ warp and consumers, bwd_parts.cuh cd_sm90_bwd_dq_warp). */
__device__ __forceinline__ void cd_named_bar_arrive_any_pc(int id, int count) {
  asm volatile("barrier.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

/* ---- grid dependency control (PTX ISA 9.7.13.13 griddepcontrol, sm_90) ---------------------- */

/* griddepcontrol.wait: this thread waits until every prerequisite grid (the kernel before this one
 * on the stream, where this one was launched with programmatic stream serialization) has completed
 * and its memory operations are performed and visible to this grid; at once where there is none
 * (a plain launch). Only the direct prerequisite: a chain A -> B -> C covers A for C only if B
 * waited too. The "memory" clobber keeps the compiler from moving loads or stores above it. */
__device__ __forceinline__ void cd_griddep_wait(void) { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }

/* griddepcontrol.launch_dependents: the dependent grid may be scheduled once every CTA of this grid
 * has executed it or exited (one invocation a CTA counts; more have no effect); no memory ordering
 * (the dependent's griddepcontrol.wait gives that). A no-op where no dependent was launched so. */
__device__ __forceinline__ void cd_griddep_launch_dependents(void) {
  asm volatile("griddepcontrol.launch_dependents;\n" ::);
}

/* ---- register reallocation (PTX ISA 9.7.17.1 setmaxnreg, sm_90a) ----------------------------- */
template <int N>
__device__ __forceinline__ void cd_setmaxnreg_inc(void) {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void cd_setmaxnreg_dec(void) {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

/* ---- special functions ----------------------------------------------------------------------- */

/* 9.7.4.x lg2.approx.ftz.f32: log2(x) (MUFU.LG2, one instruction; subnormal x flushed to 0). */
__device__ __forceinline__ float cd_lg2(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/* 9.7.9.x stmatrix.sync.aligned.m8n8.x4.shared.b16: the warp stores four 8x8 matrices of 16-bit
 * elements; thread t gives the shared address of row t % 8 of matrix t / 8, and holds in r[i]
 * its two elements of matrix i (row t / 4, columns 2 (t % 4), +1: the mma accumulator layout). */
__device__ __forceinline__ void cd_stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                               uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

/* 9.7.9.x stmatrix.sync.aligned.m8n8.x4.trans.shared.b16: as cd_stmatrix_x4, each matrix stored
 * transposed: the address of row t % 8 of matrix t / 8 receives column t % 8 of the registers'
 * matrix (the elements that threads 4k + (t % 8) / 2 hold, k = 0..7). */
__device__ __forceinline__ void cd_stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                                     uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

/* ---- warpgroup MMA (PTX ISA 9.7.15 wgmma) ---------------------------------------------------- */

/* 9.7.15.5.1 matrix descriptor: a 64-bit value describing an operand tile in shared memory.
 *   bits  0-13  start address >> 4
 *   bits 16-29  leading-dimension byte offset >> 4
 *   bits 32-45  stride-dimension byte offset >> 4
 *   bits 49-51  base offset (0: every swizzle atom is 1024-byte aligned here)
 *   bits 62-63  swizzle: 1 = 128-byte swizzle
 * With the 128-byte swizzle a "swizzle atom" is 8 rows of 128 bytes (1024 bytes). K-major: rows
 * are M/N, 64 contiguous 16-bit elements of K per row; SBO = distance between 8-row groups; LBO
 * unused (1). MN-major: rows are K, 64 contiguous elements of M/N per row; LBO = distance between
 * 64-element column blocks along M/N, SBO = distance between 8-row groups along K. */
__device__ __forceinline__ uint64_t cd_gmma_desc_sw128(uint32_t smem_addr, uint32_t lbo_bytes,
                                                       uint32_t sbo_bytes) {
  uint64_t d = 0;
  d |= (uint64_t)((smem_addr & 0x3FFFFu) >> 4);
  d |= (uint64_t)((lbo_bytes >> 4) & 0x3FFFu) << 16;
  d |= (uint64_t)((sbo_bytes >> 4) & 0x3FFFu) << 32;
  d |= (uint64_t)1 << 62;
  return d;
}

/* The same descriptor with the 64-byte (SWIZZLE_CODE 2: atoms of 8 rows of 64 bytes, 512 B) or
 * 32-byte swizzle (3: 8 rows of 32 bytes, 256 B), for operands whose rows are narrower than 128
 * bytes (the 192 / 128 and 256 / 256 rows' P / dS: bwd_wide3_parts.cuh, bwd_wide5_parts.cuh). The
 * 128-byte form above stays as it is: every kernel's code comes from it. */
template <uint32_t SWIZZLE_CODE>
__device__ __forceinline__ uint64_t cd_gmma_desc_swizzled(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  static_assert(SWIZZLE_CODE == 2 || SWIZZLE_CODE == 3, "64- or 32-byte swizzle (cd_gmma_desc_sw128: 128)");
  uint64_t d = 0;
  d |= (uint64_t)((smem_addr & 0x3FFFFu) >> 4);
  d |= (uint64_t)((lbo_bytes >> 4) & 0x3FFFu) << 16;
  d |= (uint64_t)((sbo_bytes >> 4) & 0x3FFFu) << 32;
  d |= (uint64_t)SWIZZLE_CODE << 62;
  return d;
}

/* desc moved by byte_offset bytes: the start address is the low 14 bits (in 16-byte units), so
 * only the low word changes (offsets stay inside shared memory: no carry into the LBO field).
 * A 32-bit add, where a 64-bit one costs an add with carry and register moves per wgmma. */
__device__ __forceinline__ uint64_t cd_gmma_desc_add(uint64_t desc, uint32_t byte_offset) {
  const uint32_t lo = (uint32_t)desc + (byte_offset >> 4), hi = (uint32_t)(desc >> 32);
  return ((uint64_t)hi << 32) | lo;
}

/* 9.7.15.6 wgmma.fence: orders this warpgroup's earlier register writes (accumulators, A
 * fragments) before the wgmma.mma_async that follow. */
__device__ __forceinline__ void cd_wgmma_fence(void) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

/* 9.7.15.7 wgmma.commit_group: closes the group of wgmma.mma_async issued since the last one. */
__device__ __forceinline__ void cd_wgmma_commit(void) {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* 9.7.15.8 wgmma.wait_group: waits until at most N committed groups are pending. */
template <int N>
__device__ __forceinline__ void cd_wgmma_wait(void) {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Keeps the compiler from moving reads or writes of an accumulator register across a wgmma
 * issue or wait (the asm statements above are the only ordering it sees). */
__device__ __forceinline__ void cd_reg_fence(float &r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void cd_reg_fence(uint32_t &r) { asm volatile("" : "+r"(r)::"memory"); }

/* The wgmma.mma_async instructions themselves: cd_wgmma<N> (generated). */
#include "kernels/sm90/ptx_sm90_wgmma.cuh"

#endif /* CUDADENT_SM90_PTX_SM90_CUH */
