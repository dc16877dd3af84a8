/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * config.cuh - the tuning constants of the sm90 forward that experiments vary, in one place, each
 * with the measurement behind its value (docs/kernels/sm90_fwd.md). The library compiles them
 * as they stand.
 *
 * The dev-only override hook: a build that defines CUDADENT_DEV (dev/sm90_fwd/gpu_run.sh,
 * the dev/bench scripts) may set any of these on the command line (-DSM90_EXACT_BLOCKS=8); a build
 * without it that sets one fails here, so a library can never ship with a knob moved by accident.
 * Host-side experiments: a forced tile order, SM90_FWD_FORCED_ORDER below, which a dev build sets at
 * run time through cudadent_dev_sm90_fwd (src/kernels/dev.h); the timeline trace (SM90_TRACE,
 * fwd_trace.cuh). dev/ builds against src/kernels/dev.h only.
 */
#ifndef CUDADENT_SM90_CONFIG_CUH
#define CUDADENT_SM90_CONFIG_CUH

#if !defined(CUDADENT_DEV) &&                                                                  \
    (defined(SM90_Q_STAGES) || defined(SM90_MAX_SLACK) || defined(SM90_STALE_SHARE_LOG2) ||    \
     defined(SM90_EXACT_BLOCKS) || defined(SM90_EXACT_MAX_EARLY) || defined(SM90_HALF_FIRST) || \
     defined(SM90_CONSUMER_RANGE) || defined(SM90_GRID_LIMIT) ||                               \
     defined(SM90_D64_MASKED_M192_MIN_SEQLEN) || defined(SM90_HEAD_ORDER_MAX_MBLOCKS) ||       \
     defined(SM90_D96_MASKED_M192_MIN_SEQLEN) || defined(SM90_D96_UNMASKED_M192_MIN_SEQLEN) ||  \
     defined(SM90_L2_GROUP_BYTES) || defined(SM90_TAIL_ROUNDS) || defined(SM90_SCHED_GROUP) ||  \
     defined(SM90_TRACE) || defined(SM90_FWD_D96) || defined(SM90_BWD_DET_DESCENDING) ||        \
     defined(SM90_BWD_LPT_GROUP) || defined(SM90_BWD_D128_BM80) || defined(SM90_BWD_TRACE) ||   \
     defined(SM90_BWD_PDL) || defined(SM90_BWD_SKIP_DQ) || defined(SM90_BWD_WIDE3) ||     \
     defined(SM90_BWD_WIDE5) || defined(SM90_BWD_D96) || defined(SM90_BWD_BM80_DQ_SPLIT) ||      \
     defined(SM90_BWD_PRE_FAST) || defined(SM90_BWD_PERSISTENT) || defined(SM90_BWD_PERSIST_FETCH))
#error "the SM90_* knobs of config.cuh are set by dev/ builds only (-DCUDADENT_DEV)"
#endif

/* ---- tile table (fwd_tiles.cuh) ---- */

/* Q slots of every row that may take two (the table's QS column); unset: the table's value */
#ifdef SM90_Q_STAGES
#define SM90_Q_SLOTS(n) SM90_Q_STAGES
#else
#define SM90_Q_SLOTS(n) (n)
#endif

/* masked d64 calls take 192 query rows a tile from this query length on (§2.1) */
#ifndef SM90_D64_MASKED_M192_MIN_SEQLEN
#define SM90_D64_MASKED_M192_MIN_SEQLEN 2048
#endif

/* The d96 rows of their own (§2.5 "d96 row of its own"; built in session 27, the library's since
 * session 28): the dense calls without softcap whose head dims are both <= 96 and not both <= 64
 * run on the tile table's 96 / 96 rows instead of the d128 rows over TMA's zero fill of 96..127.
 * 2 (the library's): rows of 192 query rows (three consumers, 96 keys: FA3's BLOCK_M at d96, 12
 * consumer warps to hide the exp2s as the d64 M192 rows); 1: rows of 128 query rows (two
 * consumers, 128 keys: the d128 rows' structure on 3/4 of their GEMM work); 0 (a dev build's
 * override): the d128 rows. Q, K, V and O in 32-column slabs with the 64-byte swizzle
 * (fwd_tiles.cuh SLAB_COLS). Varlen and softcap calls keep the d128 rows at every value.
 * H200, CLI bf16 h21, forward with LSE, the d128 rows -> 1 -> 2: b8 2k 510 -> 561 -> 597 TFLOP/s;
 * causal b8 2k 450 -> 489 -> 501; causal b2 8k 516 -> 577 -> 635 (no LSE: +20% / +14% at 2k). */
#ifndef SM90_FWD_D96
#define SM90_FWD_D96 2
#endif

/* Masked d96 calls (SM90_FWD_D96 2) take the 192-row tile from this query length on and the 128-row
 * d96 rows (value 1's tile) below it, as d64's rule above (docs/kernels/sm90_fwd.md §2.5). H200,
 * session 29, bf16 h21, 2048 against 0 (192 rows at every length): causal b32 512 +15% (LSE) /
 * +17% (no LSE), causal b16 1k +14% (LSE); at causal 2k the 192-row tile is 2.6% ahead (session
 * 28, value 2 against 1). */
#ifndef SM90_D96_MASKED_M192_MIN_SEQLEN
#define SM90_D96_MASKED_M192_MIN_SEQLEN 2048
#endif

/* The same for unmasked d96 calls: shorter than this, the 128-row d96 rows. At 512 queries the
 * 192-row tile pads 12.5% of its rows (3 tiles) and its 96-key blocks 12.5% of the keys (6
 * blocks), ~27% more products than the 128 x 128 tile's exact fit; the dims suite had d96
 * non-causal 512 at 0.96x cuDNN (forward, session 29). H200, session 29, bf16 h21 b32 s512, a
 * build at 2048 against 0: 400.3 -> 452.7 TFLOP/s (+13%, LSE; predicted +0-6%, before the key
 * padding was counted). At 1k (16% more products; predicted +5-9%) not measured: 1024 leaves it
 * on 192 rows; at 2k the 192-row tile is 6.5% ahead (session 28). */
#ifndef SM90_D96_UNMASKED_M192_MIN_SEQLEN
#define SM90_D96_UNMASKED_M192_MIN_SEQLEN 1024
#endif

/* ---- softmax (softmax.cuh) ---- */

/* When the running row max m moves (FlashAttention-4's trick, bounded; docs/kernels/sm90_fwd.md sections 4.1, 4.2): only when
 * a block brings a P = 2^(scale S - m) above 2^-SM90_STALE_SHARE_LOG2 of the row's sum so far,
 * at least 1 and at most 2^SM90_MAX_SLACK. With a fixed slack of 8 alone O's max error was the
 * low-precision reference's (err / lowp mean 0.97 over 1000 seeds, 0.4% outside the criterion)
 * against 0.75 for the exact max; the share bound keeps such a key to at most 1/33 of its row's
 * final weight: 0.754, as the exact max (share 1/9: 0.80). The cap keeps P finite in fp16.
 * SM90_STALE_SHARE_LOG2 large: the exact running max (SM90_MAX_SLACK 0 likewise); -20: the
 * fixed slack alone. */
#ifndef SM90_MAX_SLACK
#define SM90_MAX_SLACK 8
#endif
#ifndef SM90_STALE_SHARE_LOG2
#define SM90_STALE_SHARE_LOG2 5
#endif

/* How many of a consumer's key blocks, from its first, take the exact softmax without trying the
 * lazy one: the first always (m = -inf); over the next ones the row sum is still small, the
 * bound low and the check would fail on most (§4.2: 8 against 4 and 1; §4.3: 12 against 8
 * +1.4% geomean, 16 no better, 24 slower at 4k-16k). */
#ifndef SM90_EXACT_BLOCKS
#define SM90_EXACT_BLOCKS 12
#endif
/* Those blocks, where unmasked, run as their own run of the main loop: the row maxima computed
 * under the P V product (§4.3: geomean +0.6-0.9%; d128 non-causal 512-1k with LSE +2.5-4.8%,
 * d64 causal 512-1k without LSE +4-7%). 0: they take the run-time choice of the other blocks. */
#ifndef SM90_EXACT_MAX_EARLY
#define SM90_EXACT_MAX_EARLY 1
#endif

/* ---- main loop (mainloop_fwd.cuh) ---- */

/* A consumer's first block as its first 64 keys only, where its rows see no more (§3.3: d64
 * causal 512 / 1k / 2k +2 / +2 / +3% in the d64 LSE rows; the rows without it measured slower,
 * cd_sm90_fwd_half_first). 0: never. */
#ifndef SM90_HALF_FIRST
#define SM90_HALF_FIRST 1
#endif
/* Each consumer of a tile whose BLOCK_M is not BLOCK_N (d64 M192) walks only the key blocks its
 * own 64 rows see and releases the others (§3.3; 128-row tiles: ~1% slower with it). 0: every
 * consumer computes the tile's whole range. */
#ifndef SM90_CONSUMER_RANGE
#define SM90_CONSUMER_RANGE 1
#endif

/* ---- launch and tile order (fwd_launch.cuh, tile_scheduler.cuh, tile_order_choice.cuh) ---- */

/* at most this many CTAs (0: one per SM, the library's choice) */
#ifndef SM90_GRID_LIMIT
#define SM90_GRID_LIMIT 0
#endif
/* M_GROUPED's group of query blocks (§5.1) */
#ifndef SM90_SCHED_GROUP
#define SM90_SCHED_GROUP 32
#endif
/* masked calls with at most this many query blocks take the tiles head by head, HEAD_SNAKE
 * (§5.2; 0: never) */
#ifndef SM90_HEAD_ORDER_MAX_MBLOCKS
#define SM90_HEAD_ORDER_MAX_MBLOCKS 16
#endif
/* the K/V bytes of one group of HEAD_GROUPS at most (H100 has 50 MB of L2, H200 60 MB; §5.3;
 * 0: never HEAD_GROUPS) */
#ifndef SM90_L2_GROUP_BYTES
#define SM90_L2_GROUP_BYTES (16ll << 20)
#endif
/* the most rounds the tail deals out (§5.4; 0: no tail) */
#ifndef SM90_TAIL_ROUNDS
#define SM90_TAIL_ROUNDS 4
#endif

/* ---- selection (fwd.cu) ---- */

/* Below this much work (batch * heads_q * seqlen_q * seqlen_k) the portable path is as fast or
 * faster: one tile's latency chain (TMA load, wgmma, TMA store) is longer than its cp.async +
 * mma.sync one (1x8x512x512 8.1 us both paths, 2x8x128x128 4.4 vs 3.7 us, d64 fp16, CUDA graph;
 * §2.1). */
#define SM90_FWD_MIN_WORK ((int64_t)1 << 22)

/* ---- the backward (bwd_kernel.cuh) ---- */

/* Deterministic calls with a right mask bound (causal included): 1 gives each query block's dQ
 * turns in descending key-block order, the diagonal block first, and launches the key blocks in
 * that order (FA3's), so that a block waits only for one that reached the same query block a
 * step earlier; 0: ascending, every CTA at the pace of its chain's first. Predicted (CPU
 * simulation dev/sm90_bwd/det_turns.py) within ~10% of the non-deterministic kernel; measured
 * (H200, session 17) 1.56-2.6x ascending but still 0.57-0.68x the non-deterministic kernel
 * (b4 s4k 32/8 d128 causal 176 -> 275 TFLOP/s against 481; docs/kernels/sm90_bwd.md section 3). */
#ifndef SM90_BWD_DET_DESCENDING
#define SM90_BWD_DET_DESCENDING 1
#endif

/* Non-deterministic calls with a right mask bound (causal included), whose low key blocks are
 * the heaviest: the CTAs are launched G (KV head, batch) chains at a time, key blocks ascending
 * across the group (heaviest first), instead of chain by chain, which left the last chains' heavy
 * CTAs in a tail. Predicted by a list-scheduling model (dev/sm90_bwd/launch_order.py) +13.9% GQA
 * 32/8 d128 causal 4k, +6.7% d128 causal 4k; measured (H200, session 17) +10.8% and +3.7%. Other
 * masks keep chain by chain: under no mask the grouping measured -5% at d128 4k and -2% at 16k
 * (the model, which has no memory, predicted 0), so uniform work is not regrouped.
 * 0 turns the grouping off (a dev build's override). */
#ifndef SM90_BWD_LPT_GROUP
#define SM90_BWD_LPT_GROUP 4
#endif

/* FA3's non-causal d128 tile (experiment 4 of docs/kernels/sm90_bwd_next.md): 1 runs the d128 row's
 * non-deterministic calls without a mask (no causal, no window) and seqlen_q >=
 * SM90_BWD_BM80_MIN_SEQLEN (below) on an 80-row tile (BLOCK_M 80: S^T / dP^T m64n80k128, dV / dK
 * m64n128k80, dQ swapped as dQ^T = K^T dS^T m64n80k128 from dS stored by transposing stmatrix);
 * every other call keeps its row. The
 * library's value since session 21 (CLI A/B, bf16 h16: H100 2k +2.0-2.5%, 4k +1.6-3.6%, 8k
 * +0.8-4.7%, 16k +3.6-4.9%; H200 1k +1.7%, 2k +2.8%, 8k +2.3%, 16k +2.9%, 4k bimodal on both
 * tiles). 0 (a dev build's override): never. */
#ifndef SM90_BWD_D128_BM80
#define SM90_BWD_D128_BM80 1
#endif
/* the query length from which the 80-row tile is taken. 4096 from session 25 (when the 64-row
 * tile's two dQ paths, bwd_parts.cuh DQ_SPLIT, made it the faster tile at 1k-2k) to session 31;
 * 1024 since session 32, after the 80-row tile got the same split (SM90_BWD_BM80_DQ_SPLIT, below):
 * H200, CLI A/B alternated twice, bf16 d128 non-causal, 64-row -> 80-row (a dev build's run-time
 * override, CUDADENT_SM90_BWD_BM80_MIN_SEQLEN, bwd_launch.cuh): h16 b32 512 372.5 -> 355.6
 * (-4.5%: 7 x 80 rows pay for 512), b16 1k 483.5 -> 491.5 (+1.7%), b8 2k 563.7 -> 575.9 (+2.2%),
 * GQA 32/8 b8 2k 556 -> 604 (+8.6%, noisy pairs); the package bench's FA3 suite at 1k flat
 * (cudadent / cuDNN 1.077 -> 1.076), 2k 1.060 -> 1.086 (docs/kernels/sm90_bwd_next.md
 * section 11). */
#define SM90_BWD_BM80_MIN_SEQLEN 1024

/* Lever (f) of docs/kernels/sm90_bwd_next.md section 6 (section 7 there): 1 (the library's since
 * session 31) gives the 80-row tile (SM90_BWD_D128_BM80) the 64-row tile's two dQ paths out of the
 * SM (bwd_parts.cuh cd_sm90_bwd_smem DQ_SPLIT): consumer 0's dQ^T part added from registers by
 * 16-byte red.global.add.v4.f32, consumer 1's staged and bulk-reduced. The 80-row tile is
 * non-deterministic only, so no deterministic kernel changes. H200, CLI A/B alternated twice, bf16
 * h16 d128 non-causal, 0 -> 1: 4k 585.7 -> 610.3 (noisy pairs), 8k 578.5 -> 596.0, 16k 586.3 ->
 * 611.2, GQA 32/8 4k 571.2 -> 590.5 TFLOP/s; causal (64-row tile, unchanged) 555.5 both. 0 (a dev
 * build's override): all 8 warps' parts staged and bulk-reduced. */
#ifndef SM90_BWD_BM80_DQ_SPLIT
#define SM90_BWD_BM80_DQ_SPLIT 1
#endif

/* Lever (b) of docs/kernels/sm90_bwd_next.md section 6 (section 8 there): 1 (the library's since
 * session 31) gives the pre kernels (bwd_prepost.cuh cd_sm90_bwd_pre, bwd_varlen_plan.cuh
 * cd_sm90_bwd_varlen_pre) whole-sector zero stores: each CTA zeroes its rows' accumulator as
 * consecutive float4s, a warp's store 512 contiguous bytes (bwd_pre_map.cuh), where at 0 each
 * thread zeroes its own row's part and a warp's store fills half of every sector it touches; the
 * stores issued while the loads are in flight; the LSE read with O and dO, not after them; O and
 * dO read evict-first (read once: the zeroed lines stay in L2 instead, their write-back later);
 * and in the dense pre two rows a thread where a row is one 16-byte chunk of it (all loads issued
 * before any use). delta is the same fp32 sum in the same order, the outputs the same bits. H200,
 * 0 -> 1: the pre (ncu, locked clocks) d128 69.6 -> 70.0 us, 192/128 70.3 -> 56.0, d96 126.9 ->
 * 78.5; the whole backward (CLI A/B, bf16) 192/128 causal 512 +3.7%, d96 causal 512 +10.2%, d128
 * +0.2-0.4%, d64 512 -0.1%. 0 (a dev build's override): the pre kernels as before. */
#ifndef SM90_BWD_PRE_FAST
#define SM90_BWD_PRE_FAST 1
#endif

/* Experiment 1 of docs/kernels/sm90_bwd_next.md: 1 compiles the block-phase trace of the narrow
 * rows' main kernel (bwd_trace.cuh: clock64 stamps of each block's phases into a buffer that
 * cudadent_dev_sm90_bwd_trace_set sets, dev/sm90_bwd/bwd_trace_run.c dumps and trace_phases.py
 * reads). 0: the macros are empty, the kernels the library's. */
#ifndef SM90_BWD_TRACE
#define SM90_BWD_TRACE 0
#endif

/* Experiment 6 of docs/kernels/sm90_bwd_next.md: 1 launches each kernel of a backward call after
 * its first (dense: the main kernel and the post; varlen: the pre, the main kernel and the post)
 * with programmatic dependent launch (bwd_launch.cuh cd_sm90_bwd_launch_pdl), so that it starts
 * while the kernel before it still runs: its prologue (barrier init, tensor-map prefetch, the main
 * kernel's K / V loads) overlaps that kernel's tail, and it waits (griddepcontrol.wait) only before
 * what depends on it. The library's value since session 21 (CLI backward of 1x1x128x64 fp16
 * 15.7 -> 12.6 us on an H200, 16.4 -> 12.9 us on an H100; b32 s512 d128 +1.1 / +1.4%; a ragged
 * varlen batch +3.5%; larger calls within the measurements' noise, either sign). 0 (a dev
 * build's override): plain launches, the kernels' code as without the knob. */
#ifndef SM90_BWD_PDL
#define SM90_BWD_PDL 1
#endif

/* A measurement, not a kernel (dev builds only; dQ is WRONG with it): 1 skips the dQ reduce of
 * the non-deterministic dense main kernels (the narrow rows' staging and bulk reduce, the wide rows'
 * staging and bulk reduce or red.global from registers); the dQ product still runs. What the calls
 * gain bounds what any cheaper dQ reduction can win (docs/kernels/sm90_bwd_wide_next.md, M3).
 * 2 stores dQ instead of adding it (cp.async.bulk for cp.reduce.async.bulk, st.global for
 * red.global): the same bytes through the same paths without the L2's read-modify-write.
 * 3 skips consumer 0's part only (half the bytes at d128, a third at 192 / 128): whether the
 * cost goes with the bytes. */
#ifndef SM90_BWD_SKIP_DQ
#define SM90_BWD_SKIP_DQ 0
#endif

/* Experiment E3 of docs/kernels/sm90_bwd_wide_next.md: 1 runs the 192 / 128 row's dense,
 * non-deterministic calls without softcap on bwd_wide3_kernel.cuh (FA3's d192 structure: 96 keys a
 * CTA, 64 query rows a block, three MMA warpgroups); every other call keeps its kernel. The
 * library's value since session 26 (H200, CLI bf16 h10 against the 64-key kernel: causal b8 2k
 * 326.6 -> 347.4 TFLOP/s, +6.4%; b8 2k 372.6 -> 405.9, +8.9%; causal b2 8k +4.1-4.4%; package bench
 * against cuDNN, causal: 2k 0.98x, 8k 1.02x, from 0.94 / 0.95). 0 (a dev build's override): the
 * 64-key kernel (bwd_wide_kernel.cuh), which the block trace (SM90_BWD_TRACE) of this row needs. */
#ifndef SM90_BWD_WIDE3
#define SM90_BWD_WIDE3 1
#endif

/* Experiment E5 of docs/kernels/sm90_bwd_wide_next.md (section 9): 1 runs the 256 / 256 row's dense,
 * non-deterministic calls without softcap on bwd_wide5_kernel.cuh (FA3's d256 structure: 80 keys a
 * CTA, 64 query rows a block, two MMA warpgroups; a fifth fewer dQ bytes a FLOP); every other call
 * keeps its kernel. The library's value since session 27 (H200, CLI bf16 h8 against the 64-key
 * kernel, alternated twice: b8 2k 393 -> 434 TFLOP/s, +10.4%; causal b8 2k 346 -> 373, +7.9%;
 * causal b2 8k 416 / 426 -> 483 / 457). 0 (a dev build's override): the 64-key kernel
 * (bwd_wide_kernel.cuh). */
#ifndef SM90_BWD_WIDE5
#define SM90_BWD_WIDE5 1
#endif

/* The 96 / 96 row (docs/kernels/sm90_bwd.md section 2.2b; built in session 27, the library's since
 * session 28): the calls whose head_dim and head_dim_v are both <= 96 and not both <= 64 (dense
 * and varlen; softcap ones not deterministic) run on the narrow kernel at D = 96 (bwd_tiles.cuh
 * cd_sm90_bwd_tile<96>: FA3's d96 tile, 64 query rows x 128 keys; Q, dO and V in 64-byte-swizzle
 * blocks of 32 columns, K in 32-byte-swizzle blocks of 16, so no product runs over zero columns),
 * instead of the 128 / 128 row's kernels over TMA's zero fill (a quarter of their work on zeros);
 * deterministic softcap calls keep the 128 / 128 row. The ring of Q / dO stages: 2 (the
 * library's) four (the shared memory the row leaves; a longer lead for the loads), 1 two (FA3's);
 * 0 (a dev build's override): every call keeps the 128 / 128 row. H200, CLI bf16 h21, the 128 row
 * -> 1 / 2: b8 2k 430 -> 473 / 479 TFLOP/s; causal b8 2k 350 -> 376 / 379; causal b2 8k
 * 431-454 -> 481 / 499-518; causal b32 512 178 -> 181 / 180. */
#ifndef SM90_BWD_D96
#define SM90_BWD_D96 2
#endif

/* Lever (d) of docs/kernels/sm90_bwd_next.md section 6 (section 10 there; built session 31, run
 * session 32, section 11: not taken, slower wherever units are long): 1 runs the narrow rows'
 * dense, non-deterministic calls without a mask and without softcap on persistent CTAs
 * (bwd_persist.cuh: a grid of min(units, SMs), each CTA striding over the units of the usual
 * launch order, the next unit's K / V loaded under the current unit's epilogue); every other call
 * keeps its kernel and grid. Dev builds then read CUDADENT_SM90_BWD_PERSISTENT=0 at run time to
 * launch the library's grid instead (an A/B in one build), and CUDADENT_SM90_BWD_PERSIST_MAX_QBLOCKS
 * to keep only short units (bwd_launch.cuh cd_sm90_bwd_persist_takes). H200, CLI bf16 d128 h16
 * non-causal, library -> 1: b32 512 -2.1%, b8 2k -1.8%, b1 16k -4.1% (ncu, locked clocks, +6.8%
 * with 4% more DRAM traffic: the steady state is slower, not the transitions); d64 b32 512 +1.8%.
 * 2 (built session 31): a dynamic scheduler (bwd_persist.cuh; the unit counter in the workspace,
 * zeroed by the pre kernel) that also takes the masked calls (causal, windows), every unit fetched
 * in the library's launch order; library -> 2, causal: d128 b32 512 +1.9%, b8 2k -1.0%, GQA 32/8
 * b4 4k -6.7%, d64 h32 b32 512 +6.6%. 0 (the library's): the kernels and grids as without the
 * knob. */
#ifndef SM90_BWD_PERSISTENT
#define SM90_BWD_PERSISTENT 0
#endif

/* Knob 2's fetch of the next unit (dev; session 32, built, not run; docs/kernels/sm90_bwd_next.md
 * section 10): 0 the producer's, after the unit's Q / dO loop; 1 consumer 0's thread 0 after its
 * unit (the CTA's end, where the hardware dispatches the library's next CTA), which takes the
 * atomic out of the producer, so that the 80-row tile compiles dynamic too (no C7512); the next
 * unit's K / V then no longer load under the epilogue. */
#ifndef SM90_BWD_PERSIST_FETCH
#define SM90_BWD_PERSIST_FETCH 0
#endif

/* ---- the dev-only override hook (fwd_launch.cuh) ---- */

/* A forced tile order (an SM90_SCHED_* value, no tail; -1: the launcher's choice). The library
 * compiles the constant -1; a dev build reads cd_sm90_fwd_dev_order, which
 * cudadent_dev_sm90_fwd (fwd.cu, src/kernels/dev.h) sets for one call. */
#ifdef CUDADENT_DEV
#define SM90_FWD_FORCED_ORDER cd_sm90_fwd_dev_order
#else
#define SM90_FWD_FORCED_ORDER (-1)
#endif

#endif /* CUDADENT_SM90_CONFIG_CUH */
