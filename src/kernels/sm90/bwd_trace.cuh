/*
 * bwd_trace.cuh - an optional block-phase trace of the Hopper backward's main kernels
 * (bwd_kernel.cuh, the narrow rows: d64, d128, the d128 80-row tile; experiment 1 of
 * docs/kernels/sm90_bwd_next.md, now docs/kernels/sm90_bwd_trace.md; and bwd_wide_kernel.cuh, the
 * wide rows 192 / 128 and 256 / 256: measurement M2 of docs/kernels/sm90_bwd_wide_next.md, the
 * same record and events, some of them at the wide block's equivalent points, marked "wide"
 * below), read by dev/sm90_bwd/trace_phases.py. Compiled to nothing unless config.cuh's
 * SM90_BWD_TRACE is 1, which only a dev build (-DCUDADENT_DEV) may set: at 0 every macro below is
 * empty and the kernels' code is the library's.
 *
 * Who stamps what. Thread 0 of each consumer warpgroup stamps the low 32 bits of its SM's clock
 * at 10 points of every block (enum below) into a shared-memory slot; the producer thread copies
 * a block's slot to the block's record once the consumers have released the block's stage (after
 * issuing the next loads: three slots, so that the copy is off the load issue's path), and
 * stamps each block's load issue; consumer 0's thread 0 writes the CTA's start and end (clock64
 * and %globaltimer) and %smid. The SM clock, not %globaltimer, for the events: it counts SM
 * cycles (the phases are tens to thousands of cycles; %globaltimer ticks every ~32 ns on an H100,
 * ~60 cycles) and reads in one CS2R; it is per SM, so durations are taken within one CTA (one SM)
 * only. %globaltimer only at the CTA's start and end, to place CTAs of different SMs on one time
 * line (waves, the tail) and to convert cycles to time (the script derives the SM clock from the
 * pairs).
 *
 * The buffer (u64 words; cudadent_dev_sm90_bwd_trace_set in bwd.cu sizes it for one call's grid,
 * zeroes it and writes the file header; dev/sm90_bwd/bwd_trace_run.c dumps it as it is):
 *   [16]                 file header (CD_SM90_BWD_TRACE_H_* below)
 *   [ctas][16]           CTA headers (CD_SM90_BWD_TRACE_C_*), CTA = the linear block index
 *   [ctas][max_blocks][23] block records: word 0 the producer's load issue, 1 + e consumer 0's
 *                        event e, 12 + e consumer 1's (0: not stamped; 32-bit clocks, zero-extended)
 * A block record is a walk step of the CTA (it: query head of the group, query block), in the
 * kernel's walk order. A consumer event costs a clock read, two multiply-adds, a compare and a
 * predicated shared store (cd_sm90_bwd_trace_ev says why so); the producer's copy 22 shared loads
 * and global stores a block, after its load issue (session 21's trace copied before the issue,
 * which most likely delayed it: the 64-row tile's J of 1,391 cycles did not move with a third
 * ring stage untraced, docs/kernels/sm90_bwd_next.md experiment 7).
 */
#ifndef CUDADENT_SM90_BWD_TRACE_CUH
#define CUDADENT_SM90_BWD_TRACE_CUH

#include <stdint.h>

#include "kernels/sm90/config.cuh"

/* consumer events, a block record's word 1 + e (consumer 0) and 12 + e (consumer 1); in the kernel
 * each stamp sits right after the call it names. The wide rows (bwd_wide_kernel.cuh: dQ issued
 * first, then dV and dK; P^T / dS^T stored before any of them): "wide:" below; the file header's
 * D (192, 256) tells a wide trace. New events go at the end (trace_phases.py reads the numbers). */
enum {
  CD_BWD_EV_Q_FULL = 0,    /* q_full wait passed: the stage's Q, dO, LSE2, delta landed */
  CD_BWD_EV_ST_WAIT = 1,   /* S^T done (wgmma wait<1>; S^T and dP^T issued before it) */
  CD_BWD_EV_UNUSED = 2,    /* no consumer stamp ("P packed" would pin the P packs before the dP^T
                            * wait, where the library's SASS has them after it); the producer's
                            * words instead: consumer 0's slot its loads' issue done, consumer 1's
                            * the start of its wait for the block's stage */
  CD_BWD_EV_DPT_WAIT = 3,  /* dP^T done (wait<0>) */
  CD_BWD_EV_DV_ISSUED = 4, /* P^T and dS^T packed, dV issued (its commit); wide: P^T and dS^T
                            * packed (before their stmatrix; register math may cross the stamp) */
  CD_BWD_EV_DS_STORED = 5, /* dS stored (stmatrix + proxy fence): at the barrier */
  CD_BWD_EV_BAR_DS = 6,    /* BAR_DS passed (both consumers' dS in shared memory) */
  CD_BWD_EV_DQDK_ISSUED = 7, /* dQ and dK issued (dK's commit); wide: dQ, dV and dK issued */
  CD_BWD_EV_DVDQ_WAIT = 8, /* dV and dQ done (wait<1>; dK running); wide: dQ done (dV, dK running) */
  CD_BWD_EV_REDUCE = 9,    /* dQ staged and its bulk reduce issued (under dK); wide: the same, or
                            * its red.global.add.v4 issued (d256, deterministic) */
  CD_BWD_EV_DK_WAIT = 10,  /* dK done (wait<0>): the stage is released next; wide: dV and dK done */
  CD_BWD_EV_COUNT = 11
};

/* the file header's words, a CTA header's words, the block record */
enum {
  CD_SM90_BWD_TRACE_HDR = 16,
  CD_SM90_BWD_TRACE_REC = 1 + 2 * CD_BWD_EV_COUNT, /* 23 */
  /* file header */
  CD_SM90_BWD_TRACE_H_MAGIC = 0, /* "CDBWDTR1" as a little-endian u64 */
  CD_SM90_BWD_TRACE_H_VERSION = 1,
  CD_SM90_BWD_TRACE_H_CTAS = 2,
  CD_SM90_BWD_TRACE_H_MAX_BLOCKS = 3,
  CD_SM90_BWD_TRACE_H_REC = 4, /* words a block record (23) */
  CD_SM90_BWD_TRACE_H_EVENTS = 5, /* consumer events (11) */
  CD_SM90_BWD_TRACE_H_BLOCK_M = 6,
  CD_SM90_BWD_TRACE_H_BLOCK_N = 7,
  CD_SM90_BWD_TRACE_H_D = 8, /* the row's D_QK */
  CD_SM90_BWD_TRACE_H_SEQLEN_Q = 9,
  CD_SM90_BWD_TRACE_H_SEQLEN_K = 10,
  CD_SM90_BWD_TRACE_H_BATCH = 11,
  CD_SM90_BWD_TRACE_H_HEADS_Q = 12,
  CD_SM90_BWD_TRACE_H_HEADS_KV = 13,
  CD_SM90_BWD_TRACE_H_FLAGS = 14, /* bit 0 deterministic, 1 causal / window, 2 fp16 */
  /* CTA header */
  CD_SM90_BWD_TRACE_C_SMID = 0,
  CD_SM90_BWD_TRACE_C_START = 1,     /* clock64 at the body's start (consumer 0, thread 0) */
  CD_SM90_BWD_TRACE_C_START_NS = 2,  /* %globaltimer there */
  CD_SM90_BWD_TRACE_C_END = 3,       /* clock64 after consumer 0's epilogue stores (wide: after
                                      * the consumers' shared dK / dV stores, both) */
  CD_SM90_BWD_TRACE_C_END_NS = 4,
  CD_SM90_BWD_TRACE_C_BLOCKS = 5,    /* blocks walked */
  CD_SM90_BWD_TRACE_C_WORK = 6,      /* key block | KV head << 24 | batch << 44 */
  CD_SM90_BWD_TRACE_C_END1 = 7,      /* clock64 after consumer 1's epilogue stores */
  CD_SM90_BWD_TRACE_C_P_START = 8,   /* producer: K / V loads issued */
  CD_SM90_BWD_TRACE_C_P_END = 9,     /* producer: its last load issued */
  /* words 10-15 unused (0): stamps of K / V landing and of the loop's end made ptxas hold a
   * header pointer across the main loop (the 80-row tile then serialized its wgmmas); the script
   * takes those times from the first block's q_full and the last block's dK wait */
};

#if SM90_BWD_TRACE
/* what cudadent_dev_sm90_bwd_trace_set (bwd.cu) sets: the buffer (NULL: off), its CTAs and block
 * records a CTA. __constant__ (ptxas keeps what derives from it in uniform registers); static: one
 * copy per translation unit, bwd.cu's (the dense narrow kernels) and bwd_wide.cu's (the wide rows;
 * through cd_sm90_bwd_wide_trace_state_set) are set, the varlen unit's stays off. */
struct cd_sm90_bwd_trace_state {
  unsigned long long *buf;
  long long ctas;
  int max_blocks;
};
static __constant__ cd_sm90_bwd_trace_state cd_sm90_bwd_trace_dev;

__device__ __forceinline__ unsigned long long cd_sm90_bwd_trace_ns(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(t)::"memory");
  return t;
}
__device__ __forceinline__ unsigned cd_sm90_bwd_trace_smid(void) {
  unsigned s;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(s));
  return s;
}
__device__ __forceinline__ long long cd_sm90_bwd_trace_linear(void) {
  return blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z);
}
/* The header of unit l (a launch index: the CTA's own, or a persistent CTA's unit; NULL where the
 * trace is off or l past the buffer's CTAs) and its first block record (NULL also where the unit
 * walks more blocks than it holds); _hdr() / _rec() are the CTA's own */
__device__ __forceinline__ unsigned long long *cd_sm90_bwd_trace_hdr_at(long long l) {
  const cd_sm90_bwd_trace_state s = cd_sm90_bwd_trace_dev;
  return s.buf == nullptr || l >= s.ctas ? nullptr : s.buf + CD_SM90_BWD_TRACE_HDR + CD_SM90_BWD_TRACE_HDR * l;
}
__device__ __forceinline__ unsigned long long *cd_sm90_bwd_trace_rec_at(long long l, int walk) {
  const cd_sm90_bwd_trace_state s = cd_sm90_bwd_trace_dev;
  return s.buf == nullptr || l >= s.ctas || walk > s.max_blocks
             ? nullptr
             : s.buf + CD_SM90_BWD_TRACE_HDR + CD_SM90_BWD_TRACE_HDR * s.ctas +
                   (long long)CD_SM90_BWD_TRACE_REC * s.max_blocks * l;
}
/* _hdr_at / _rec_at with the state read through an opaque pointer at every call (the persistent
 * kernel's: its unit loops would otherwise keep the state, a loop invariant, in registers across
 * the block loop: the 80-row tile's consumers spilled 84 B, knob 2's 24-register producer 64-80) */
__device__ __forceinline__ cd_sm90_bwd_trace_state cd_sm90_bwd_trace_fresh(void) {
  const cd_sm90_bwd_trace_state *sp = &cd_sm90_bwd_trace_dev;
  asm volatile("" : "+l"(sp));
  return *sp;
}
__device__ __forceinline__ unsigned long long *cd_sm90_bwd_trace_hdr_fresh(long long l) {
  const cd_sm90_bwd_trace_state s = cd_sm90_bwd_trace_fresh();
  return s.buf == nullptr || l >= s.ctas ? nullptr : s.buf + CD_SM90_BWD_TRACE_HDR + CD_SM90_BWD_TRACE_HDR * l;
}
__device__ __forceinline__ unsigned long long *cd_sm90_bwd_trace_rec_fresh(long long l, int walk) {
  const cd_sm90_bwd_trace_state s = cd_sm90_bwd_trace_fresh();
  return s.buf == nullptr || l >= s.ctas || walk > s.max_blocks
             ? nullptr
             : s.buf + CD_SM90_BWD_TRACE_HDR + CD_SM90_BWD_TRACE_HDR * s.ctas +
                   (long long)CD_SM90_BWD_TRACE_REC * s.max_blocks * l;
}
__device__ __forceinline__ unsigned long long *cd_sm90_bwd_trace_hdr(void) {
  return cd_sm90_bwd_trace_hdr_at(cd_sm90_bwd_trace_linear());
}
__device__ __forceinline__ unsigned long long *cd_sm90_bwd_trace_rec(int walk) {
  return cd_sm90_bwd_trace_rec_at(cd_sm90_bwd_trace_linear(), walk);
}
/* clock64 (or v) into p where p is not NULL, branch-free (a predicated store) */
__device__ __forceinline__ void cd_sm90_bwd_trace_stamp(unsigned long long *p) {
  asm volatile("{\n.reg .pred q;\n.reg .u64 t;\nmov.u64 t, %%clock64;\nsetp.ne.u64 q, %0, 0;\n"
               "@q st.global.u64 [%0], t;\n}\n" ::"l"(p)
               : "memory");
}
/* A CTA's (a persistent unit's) header at its start: the start stamp and ns, the SM, its work
 * (key block n, KV head hk, batch b); h null: nothing */
__device__ __forceinline__ void cd_sm90_bwd_trace_hdr_begin(unsigned long long *h, int n, int hk, int b) {
  if (h == nullptr) return;
  cd_sm90_bwd_trace_stamp(h + CD_SM90_BWD_TRACE_C_START);
  h[CD_SM90_BWD_TRACE_C_START_NS] = cd_sm90_bwd_trace_ns();
  h[CD_SM90_BWD_TRACE_C_SMID] = cd_sm90_bwd_trace_smid();
  h[CD_SM90_BWD_TRACE_C_WORK] = (unsigned long long)n | (unsigned long long)hk << 24 | (unsigned long long)b << 44;
}
__device__ __forceinline__ void cd_sm90_bwd_trace_put(unsigned long long *p, unsigned long long v) {
  asm volatile("{\n.reg .pred q;\nsetp.ne.u64 q, %0, 0;\n@q st.global.u64 [%0], %1;\n}\n" ::"l"(p), "l"(v)
               : "memory");
}

/* A consumer event: the low 32 bits of the SM clock into the shared-memory slot of block it
 * (it % 3) and consumer cw, word OFF / 4 of [3 blocks][2 consumers][16] u32 at the end of the
 * kernel's shared memory (cd_sm90_bwd_smem TRACE_OFF; bar is the q_full barriers' address, the
 * slots start 16 ST bytes past it), where who is 0 (the warpgroup's thread 0). One asm statement:
 * the address is computed inside it from values the body holds anyway, so that the trace holds no
 * register across the main loop (a 64-bit pointer held there made the 80-row tile spill and
 * serialize its wgmmas, ptxas C7512), and its "memory" clobber keeps it in place among the waits,
 * barriers and shared-memory accesses; branch-free (a predicated store). The producer copies a
 * block's slot to the block's record once the consumers have released its stage. */
template <int OFF>
__device__ __forceinline__ void cd_sm90_bwd_trace_ev(uint32_t bar, uint32_t it, int cw, int who) {
  asm volatile("{\n.reg .pred q;\n.reg .u32 t, a;\nmov.u32 t, %%clock;\nrem.u32 a, %1, 3;\n"
               "mad.lo.u32 a, a, 128, %0;\nmad.lo.u32 a, %2, 64, a;\nsetp.eq.u32 q, %3, 0;\n"
               "@q st.shared.u32 [a+%4], t;\n}\n" ::"r"(bar),
               "r"(it), "r"(cw), "r"(who), "n"(OFF)
               : "memory");
}
/* The producer: copies block b's consumer stamps (slot b % 3) to its record, words 1.. 22. Called
 * for block it - 2 after block it's loads are issued: block it - 2 has released its stage (the
 * producer waited for that before the issue), and slot (it - 2) % 3 is next written by block
 * it + 1, whose loads this thread issues only after the copy. _at: record b from the slot of ring
 * position it (a persistent CTA's ring position continues across units: b = it - the unit's first
 * position); cd_sm90_bwd_trace_copy: the CTA's own walk, b = it. */
__device__ __forceinline__ void cd_sm90_bwd_trace_copy_at(unsigned long long *rec, uint32_t slots, uint32_t b,
                                                          uint32_t it) {
  if (rec == nullptr) return;
  unsigned long long *const r = rec + (long long)CD_SM90_BWD_TRACE_REC * b + 1;
  const uint32_t src = slots + (it % 3) * 128;
#pragma unroll 1
  for (int e = 0; e < 2 * CD_BWD_EV_COUNT; ++e) {
    uint32_t v;
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(src + 64 * (e / CD_BWD_EV_COUNT) + 4 * (e % CD_BWD_EV_COUNT)) : "memory");
    r[e] = v;
  }
}
__device__ __forceinline__ void cd_sm90_bwd_trace_copy(unsigned long long *rec, uint32_t slots, uint32_t b) {
  cd_sm90_bwd_trace_copy_at(rec, slots, b, b);
}
/* The producer's start: clears the stamp slots (the unused word stays 0), stamps the K / V issue */
__device__ __forceinline__ void cd_sm90_bwd_trace_producer_begin(uint32_t slots, int bytes) {
  for (int e = 0; e < bytes / 4; ++e) asm volatile("st.shared.u32 [%0], 0;\n" ::"r"(slots + 4 * e) : "memory");
  unsigned long long *const h = cd_sm90_bwd_trace_hdr();
  cd_sm90_bwd_trace_stamp(h != nullptr ? h + CD_SM90_BWD_TRACE_C_P_START : nullptr);
}
/* The producer's own stamps of block it in the consumers' unused event-2 words of the block's slot
 * (copied with the block): who 0, its loads issued (after the last load instruction); who 1, its
 * wait for the block's stage begun (before the q_empty wait). Slot it % 3 is free then: block
 * it - 3's stamps were copied in the producer's previous iteration. */
template <int WHO>
__device__ __forceinline__ void cd_sm90_bwd_trace_pstamp(uint32_t slots, uint32_t it) {
  asm volatile("{\n.reg .u32 t, a;\nmov.u32 t, %%clock;\nrem.u32 a, %1, 3;\nmad.lo.u32 a, a, 128, %0;\n"
               "st.shared.u32 [a+%2], t;\n}\n" ::"r"(slots),
               "r"(it), "n"(64 * WHO + 4 * CD_BWD_EV_UNUSED)
               : "memory");
}
/* The producer's load issue of block it: the low 32 bits of the clock, as the consumers' */
__device__ __forceinline__ void cd_sm90_bwd_trace_load(unsigned long long *rec, uint32_t it) {
  unsigned t;
  asm volatile("mov.u32 %0, %%clock;\n" : "=r"(t)::"memory");
  if (rec != nullptr) rec[(long long)CD_SM90_BWD_TRACE_REC * it] = t;
}

/* In the body (bwd_kernel.cuh), each one line:
 *   SM90_BWD_TRACE_BEGIN(n, hk, b)      after the work decode: consumer 0's thread 0 writes the
 *                                       CTA's start, %smid and its work
 *   SM90_BWD_TRACE_PRODUCER_BEGIN(walk) the producer: its record pointer; clears the slots;
 *                                       stamps its start (the K / V loads' issue)
 *   SM90_BWD_TRACE_PRODUCER_WAIT(it)    the producer, before its wait for block it's stage
 *   SM90_BWD_TRACE_PRODUCER(it)         the producer, its stage free: stamps block it's load issue
 *   SM90_BWD_TRACE_PRODUCER_COPY(it)    after block it's loads: stamps their issue done, copies
 *                                       block it - 2's stamps
 *   SM90_BWD_TRACE_PRODUCER_END(it)     after the loop: stamps the producer's end, waits for the
 *                                       last two blocks' release (q_empty), copies their stamps
 *   SM90_BWD_TRACE_EV(it, ev)           consumer event ev of block it (thread 0 of the warpgroup)
 *   SM90_BWD_TRACE_HDR_STAMP(cond, word) clock64 into a CTA header word where cond
 *   SM90_BWD_TRACE_END(cw, ct, it)      a consumer's end (consumer 0: the CTA's end) */
#define SM90_BWD_TRACE_BEGIN(n, hk, b) \
  if (threadIdx.x == 128) cd_sm90_bwd_trace_hdr_begin(cd_sm90_bwd_trace_hdr(), (n), (hk), (b))
#define SM90_BWD_TRACE_PRODUCER_BEGIN(walk)                                    \
  unsigned long long *const trace_rec_ = cd_sm90_bwd_trace_rec(walk);         \
  const uint32_t trace_slots_ = bar_q_full + (L::TRACE_OFF - L::BAR_OFF - 8); \
  cd_sm90_bwd_trace_producer_begin(trace_slots_, L::TRACE_BYTES)
#define SM90_BWD_TRACE_PRODUCER_WAIT(it) cd_sm90_bwd_trace_pstamp<1>(trace_slots_, (it))
#define SM90_BWD_TRACE_PRODUCER(it) cd_sm90_bwd_trace_load(trace_rec_, (it))
#define SM90_BWD_TRACE_PRODUCER_COPY(it)                   \
  cd_sm90_bwd_trace_pstamp<0>(trace_slots_, (it));         \
  if ((it) >= 2) cd_sm90_bwd_trace_copy(trace_rec_, trace_slots_, (it) - 2)
#define SM90_BWD_TRACE_PRODUCER_END(it)                                                  \
  SM90_BWD_TRACE_HDR_STAMP(true, CD_SM90_BWD_TRACE_C_P_END);                            \
  for (uint32_t t_ = (it); t_ < (it) + 2; ++t_)                                         \
    if (t_ >= 2) {                                                                      \
      cd_mbar_wait(bar_q_empty + 8 * (t_ % ST), ((t_ / ST) & 1) ^ 1);                   \
      cd_sm90_bwd_trace_copy(trace_rec_, trace_slots_, t_ - 2);                         \
    }
#define SM90_BWD_TRACE_EV(it, ev) \
  cd_sm90_bwd_trace_ev<L::TRACE_OFF - L::BAR_OFF - 8 + 4 * (ev)>(bar_q_full, (it), cw, warp | lane)
#define SM90_BWD_TRACE_HDR_STAMP(cond, word) \
  cd_sm90_bwd_trace_stamp((cond) && cd_sm90_bwd_trace_hdr() != nullptr ? cd_sm90_bwd_trace_hdr() + (word) : nullptr)
#define SM90_BWD_TRACE_END(cw, ct, it)                                                              \
  do {                                                                                              \
    unsigned long long *const trace_h_ = (ct) == 0 ? cd_sm90_bwd_trace_hdr() : nullptr;             \
    if (trace_h_ != nullptr) {                                                                      \
      cd_sm90_bwd_trace_stamp(trace_h_ + ((cw) == 0 ? CD_SM90_BWD_TRACE_C_END : CD_SM90_BWD_TRACE_C_END1)); \
      if ((cw) == 0) {                                                                              \
        trace_h_[CD_SM90_BWD_TRACE_C_END_NS] = cd_sm90_bwd_trace_ns();                              \
        trace_h_[CD_SM90_BWD_TRACE_C_BLOCKS] = (it);                                                \
      }                                                                                             \
    }                                                                                               \
  } while (0)
/* The persistent kernel's (bwd_persist.cuh, config.cuh SM90_BWD_PERSISTENT; each unit traced as
 * the CTA of its launch index would be, so that one file layout and trace_phases.py serve both;
 * the CTA header's start / end are then the unit's, and "the gap between an SM's CTAs" the
 * transition between its units). The producer keeps the current unit's index and first ring
 * position (its record 0) in shared memory, words 12-13 of the stamp slots (consumer 0's half of
 * slot 0: past the 11 event words, never copied), and re-reads them at each use: held in registers
 * they spilled knob 2's 24-register producer (72-88 B, in its Q loop). Each one line:
 *   SM90_BWD_TRACE_PU_CLEAR()            the producer, once: clears the stamp slots
 *   SM90_BWD_TRACE_PU_HDR(unit, word)    the producer: clock64 into unit's header word (P_START
 *                                        after its K / V issue, P_END after its last load)
 *   SM90_BWD_TRACE_PU_UNIT(unit, it)     the producer, before the unit's first Q / dO wait
 *   SM90_BWD_TRACE_PU_WAIT(it)           as SM90_BWD_TRACE_PRODUCER_WAIT (in the unit's Q loop)
 *   SM90_BWD_TRACE_PU_LOAD(it)           as SM90_BWD_TRACE_PRODUCER: the unit's record it - it0
 *   SM90_BWD_TRACE_PU_COPY(it)           as SM90_BWD_TRACE_PRODUCER_COPY, within the unit
 *   SM90_BWD_TRACE_PU_FLUSH(it)          after the unit's last load (it: one past it), at knob 2
 *                                        after the next unit's fetch: waits for its last two
 *                                        blocks' release and copies them (the wait the producer
 *                                        makes anyway before its next load; the next unit's K / V
 *                                        wait, kv_empty, completes after it)
 *   SM90_BWD_TRACE_PU_END()              the producer, right after its epi_done wait for the unit
 *                                        the slots hold (before the next unit's SM90_BWD_TRACE_PU_UNIT,
 *                                        knob 1's last unit after its loop): the unit's end, END =
 *                                        END1 (the later consumer's epilogue; a consumer's own stamp
 *                                        there made the 80-row tile's consumers spill 76 B)
 *   SM90_BWD_TRACE_PU_BEGIN(unit, n, hk, b, blocks) consumer 0's thread 0, before the unit's
 *                                        consumer work: start, %smid, work, blocks (its walk: so
 *                                        that no unit bound stays live across the block loop)
 * The records' pointers come from cd_sm90_bwd_trace_*_fresh (no walk check: a unit's walk is at
 * most the file's max_blocks by construction, cudadent_dev_sm90_bwd_trace_set). */
__device__ __forceinline__ void cd_sm90_bwd_trace_pu_set(uint32_t slots, uint32_t unit, uint32_t it0) {
  asm volatile("st.shared.v2.u32 [%0+48], {%1, %2};\n" ::"r"(slots), "r"(unit), "r"(it0) : "memory");
}
__device__ __forceinline__ void cd_sm90_bwd_trace_pu_get(uint32_t slots, uint32_t &unit, uint32_t &it0) {
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2+48];\n" : "=r"(unit), "=r"(it0) : "r"(slots) : "memory");
}
/* the producer's stamp of ring position it's load issue into its unit's record it - it0 */
__device__ __forceinline__ void cd_sm90_bwd_trace_pu_load(uint32_t slots, uint32_t it) {
  uint32_t unit, it0;
  cd_sm90_bwd_trace_pu_get(slots, unit, it0);
  cd_sm90_bwd_trace_load(cd_sm90_bwd_trace_rec_fresh(unit, 0), it - it0);
}
/* the copy of ring position it's stamps (a block of the current unit) to its record */
__device__ __forceinline__ void cd_sm90_bwd_trace_pu_copy(uint32_t slots, uint32_t it) {
  uint32_t unit, it0;
  cd_sm90_bwd_trace_pu_get(slots, unit, it0);
  if (it - it0 < 0x80000000u) cd_sm90_bwd_trace_copy_at(cd_sm90_bwd_trace_rec_fresh(unit, 0), slots, it - it0, it);
}
/* the end of the unit whose index the slots hold: clock64 into its header's END and END1, its
 * %globaltimer into END_NS (the producer, once its epi_done wait for the unit has passed) */
__device__ __forceinline__ void cd_sm90_bwd_trace_pu_end(uint32_t slots) {
  uint32_t unit, it0;
  cd_sm90_bwd_trace_pu_get(slots, unit, it0);
  unsigned long long *const h = cd_sm90_bwd_trace_hdr_fresh(unit);
  if (h == nullptr) return;
  cd_sm90_bwd_trace_stamp(h + CD_SM90_BWD_TRACE_C_END);
  h[CD_SM90_BWD_TRACE_C_END_NS] = cd_sm90_bwd_trace_ns();
  h[CD_SM90_BWD_TRACE_C_END1] = h[CD_SM90_BWD_TRACE_C_END];
}
#define SM90_BWD_TRACE_PU_SLOTS_ (bar_q_full + (L::TRACE_OFF - L::BAR_OFF - 8))
#define SM90_BWD_TRACE_PU_CLEAR()                  \
  for (int e_ = 0; e_ < L::TRACE_BYTES / 4; ++e_) \
  asm volatile("st.shared.u32 [%0], 0;\n" ::"r"(SM90_BWD_TRACE_PU_SLOTS_ + 4 * e_) : "memory")
#define SM90_BWD_TRACE_PU_HDR(unit, word)                                                \
  do {                                                                                   \
    unsigned long long *const trace_h_ = cd_sm90_bwd_trace_hdr_fresh(unit);              \
    cd_sm90_bwd_trace_stamp(trace_h_ != nullptr ? trace_h_ + (word) : nullptr);          \
  } while (0)
#define SM90_BWD_TRACE_PU_UNIT(unit, it) cd_sm90_bwd_trace_pu_set(SM90_BWD_TRACE_PU_SLOTS_, (uint32_t)(unit), (it))
#define SM90_BWD_TRACE_PU_WAIT(it) cd_sm90_bwd_trace_pstamp<1>(SM90_BWD_TRACE_PU_SLOTS_, (it))
#define SM90_BWD_TRACE_PU_LOAD(it) cd_sm90_bwd_trace_pu_load(SM90_BWD_TRACE_PU_SLOTS_, (it))
#define SM90_BWD_TRACE_PU_COPY(it)                                 \
  cd_sm90_bwd_trace_pstamp<0>(SM90_BWD_TRACE_PU_SLOTS_, (it));    \
  cd_sm90_bwd_trace_pu_copy(SM90_BWD_TRACE_PU_SLOTS_, (it) - 2)
#define SM90_BWD_TRACE_PU_FLUSH(it)                                     \
  for (uint32_t t_ = (it); t_ < (it) + 2; ++t_) {                      \
    uint32_t u_, i0_;                                                  \
    cd_sm90_bwd_trace_pu_get(SM90_BWD_TRACE_PU_SLOTS_, u_, i0_);       \
    if (t_ - 2 - i0_ < 0x80000000u) {                                  \
      cd_mbar_wait(bar_q_empty + 8 * (t_ % ST), ((t_ / ST) & 1) ^ 1);  \
      cd_sm90_bwd_trace_pu_copy(SM90_BWD_TRACE_PU_SLOTS_, t_ - 2);     \
    }                                                                  \
  }
#define SM90_BWD_TRACE_PU_BEGIN(unit, n, hk, b, blocks)                              \
  if (threadIdx.x == 128) {                                                          \
    unsigned long long *const trace_h_ = cd_sm90_bwd_trace_hdr_fresh(unit);          \
    cd_sm90_bwd_trace_hdr_begin(trace_h_, (n), (hk), (b));                           \
    if (trace_h_ != nullptr) trace_h_[CD_SM90_BWD_TRACE_C_BLOCKS] = (blocks);        \
  }
#define SM90_BWD_TRACE_PU_END() cd_sm90_bwd_trace_pu_end(SM90_BWD_TRACE_PU_SLOTS_)
#else
#define SM90_BWD_TRACE_PU_CLEAR()
#define SM90_BWD_TRACE_PU_HDR(unit, word)
#define SM90_BWD_TRACE_PU_UNIT(unit, it)
#define SM90_BWD_TRACE_PU_WAIT(it)
#define SM90_BWD_TRACE_PU_LOAD(it)
#define SM90_BWD_TRACE_PU_COPY(it)
#define SM90_BWD_TRACE_PU_FLUSH(it)
#define SM90_BWD_TRACE_PU_BEGIN(unit, n, hk, b, blocks)
#define SM90_BWD_TRACE_PU_END()
#define SM90_BWD_TRACE_BEGIN(n, hk, b)
#define SM90_BWD_TRACE_PRODUCER_BEGIN(walk)
#define SM90_BWD_TRACE_PRODUCER_WAIT(it)
#define SM90_BWD_TRACE_PRODUCER(it)
#define SM90_BWD_TRACE_PRODUCER_COPY(it)
#define SM90_BWD_TRACE_PRODUCER_END(it)
#define SM90_BWD_TRACE_EV(it, ev)
#define SM90_BWD_TRACE_HDR_STAMP(cond, word)
#define SM90_BWD_TRACE_END(cw, ct, it)
#endif

#endif /* CUDADENT_SM90_BWD_TRACE_CUH */
