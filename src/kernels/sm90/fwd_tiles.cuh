/*
 * §N below: section N of docs/kernels/sm90_fwd.md, the design note of the sm90 forward.
 * fwd_tiles.cuh - the tile table of the sm90 forward (one row per compiled configuration) and
 * what derives from a row: its shared-memory layout (cd_sm90_fwd_smem).
 *
 * A row is keyed by (Q/K head dim, V head dim, BLOCK_M, HAS_LSE). Which row a call takes:
 * cd_sm90_fwd_run (fwd_launch.cuh), the one place that selects rows and launches them.
 *
 * Columns. BLOCK_M = 64 * consumer warpgroups query rows a tile, BLOCK_N keys a block, a
 * STAGES-deep K/V ring and Q_STAGES Q slots. Registers (65536 per SM, one CTA per SM):
 * 128 PRODUCER_REGS + 128 (BLOCK_M / 64) CONSUMER_REGS within the CTA's launch allocation
 * (reg_budget.cuh: 64,512 at 384 threads, 65,536 at 512); a consumer thread holds S
 * (BLOCK_N / 2 fp32), P (BLOCK_N / 4) and O (HEAD_DIM_V / 2). Shared memory: Q_STAGES BLOCK_M
 * HEAD_DIM 2 bytes (Q slots) + STAGES BLOCK_N (HEAD_DIM + HEAD_DIM_V) 2 bytes (the ring) + O
 * staging + barriers + 1 KiB alignment slack <= 227 KiB (static_assert below). A row of
 * widths (D, DV) runs every call with head_dim <= D and head_dim_v <= DV (fwd_launch.cuh): the
 * tensor maps' innermost extents are the call's real head dims, so TMA loads zero-fill the
 * columns past them and stores clip them (§2.5).
 *   ROWSUM   the row sums of P taken by the tensor core: the P V GEMM gets 8 more columns of B,
 *            all ones, so columns D..D+7 of its accumulator are the running row sums l
 *            (rescaled with O), and the softmax adds nothing up (72 instructions a thread and key
 *            block fewer: +3-13% by config, §2.3). The sums are of the
 *            16-bit P that the GEMM multiplies V by: O is as accurate as with fp32 sums, but
 *            log(l) is off by up to ~1.5e-3 in bf16 and the backward's gradients measurably worse
 *            with such an LSE: so only rows without LSE (lse == NULL, inference) take it. The
 *            ones: V width 64, one 2 KiB region that V's descriptor LBO points at from every stage
 *            and k-step; V width 128 (96), a third (fourth) slab of each V stage (the LBO is the
 *            distance between V's slabs).
 *   HGROUPS  the row can take the HEAD_GROUPS tile order (tile_scheduler.cuh; the host picks it
 *            only for masked calls with more than 16 query blocks).
 *   TAIL     its launches may deal their last rounds' tiles out by the host's table
 *            (cd_sm90_fwd_tile_tail; §5.4).
 *   LATE     where the ring indices are broadcast (cd_sm90_fwd_uniform_ring): late, at the end
 *            of the step before (§3.2).
 *   OSL      O_SLABS: the slabs (SLAB_COLS wide, below) of O a consumer stages in shared memory
 *            at a time; fewer than HEAD_DIM_V / SLAB_COLS, the epilogue stores O in passes
 *            (epilogue_fwd.cuh).
 * Slabs (cd_sm90_fwd_smem SLAB_COLS): Q, K, V and O's staging are column slabs of 64 columns
 * with the 128-byte swizzle where both head dims are multiples of 64, else (the d96 rows) of 32
 * columns with the 64-byte swizzle (gemm.cuh's SW64 layouts), FA3's smem selector's choice:
 * 192-byte rows are a multiple of 64 bytes, not of 128.
 * Every row's reason, as a pointer to its measurement, is the comment after it.
 */
#ifndef CUDADENT_SM90_FWD_TILES_CUH
#define CUDADENT_SM90_FWD_TILES_CUH

#include "kernels/sm90/config.cuh"
#include "kernels/sm90/reg_budget.cuh"

template <int D_QK, int D_V, int BLOCK_M_, bool HAS_LSE_> struct cd_sm90_fwd_tile;

#define CD_SM90_FWD_ROW(DQK, DV, BM, LSE, BN, ST, QS, ROWSUM, HGROUPS, TAIL_, LATE, OSL, PREGS,   \
                        CREGS)                                                                    \
  template <> struct cd_sm90_fwd_tile<DQK, DV, BM, LSE> {                                          \
    static constexpr int HEAD_DIM = DQK, HEAD_DIM_V = DV, BLOCK_M = BM, BLOCK_N = BN;              \
    static constexpr int CONSUMER_WGS = BM / 64, STAGES = ST, Q_STAGES = QS;                       \
    static constexpr bool HAS_LSE = LSE, ROWSUM_MMA = ROWSUM, HEAD_GROUPS = HGROUPS;               \
    static constexpr bool TAIL = TAIL_, RING_SHFL_LATE = LATE;                                     \
    static constexpr int O_SLABS = OSL;                                                            \
    static constexpr int PRODUCER_REGS = PREGS, CONSUMER_REGS = CREGS;                             \
    static_assert(DQK % 32 == 0 && DV % 32 == 0, "head dims: whole swizzle slabs (SLAB_COLS)");   \
    static_assert(ROWSUM || HAS_LSE, "a row without LSE takes the tensor core's row sums");        \
    static_assert(cd_sm90_regs_fit(PREGS, BM / 64, CREGS), "setmaxnreg budgets (reg_budget.cuh)"); \
    static_assert(!ROWSUM || DV <= 128, "ROWSUM: P V with its 8 ones columns fits wgmma's N 256"); \
  };

/* Q slots (QS): 2 let the producer load the next tile's Q (and then its K/V) while the
 * consumers still run the current tile's Q K^T. SM90_Q_STAGES (config.cuh) sets every row. */
#define CD_SM90_QS(n) SM90_Q_SLOTS(n)

/*              Dqk  Dv   BM   LSE    BN  ST QS            ROWSUM HGROUPS TAIL   LATE  OSL PREGS CREGS */
CD_SM90_FWD_ROW( 64,  64, 192, true,  128, 4, CD_SM90_QS(2), false, true,  false, false, 1,  24, 160)
/* d64 default: 1.5x K/V reuse, 12 warps (§2.1); QS 2: +1-1.5% at d64 non-causal
 * (§2.2); no tail: its consumers spill 20 bytes with it, d64 non-causal (no tail taken)
 * ran 25-33% slower (§5.4); LATE not measured apart: ptxas compiles the M192 rows' step
 * broadcasts away either way (§3.2) */
CD_SM90_FWD_ROW( 64,  64, 128, true,  128, 4, CD_SM90_QS(1), false, false, true,  true,  1,  24, 240)
/* d64 masked, seqlen_q < 2048: less diagonal waste (§2.1); QS 1: -0.4..-0.8% with 2 in three
 * runs (§2.2); no HGROUPS: at most 16 query blocks, HEAD_SNAKE (§5.3); tail +1.5-2.2% at
 * causal 512 / 1k (§5.4); LATE +0.3..+1.1% at d64 causal 512 / 1k in training (§3.2) */
CD_SM90_FWD_ROW(128, 128, 128, true,  128, 2, CD_SM90_QS(1), false, true,  true,  true,  2,  24, 240)
/* d128 (§2.1); QS 2 showed no effect (§2.2); tail (§5.4); LATE +0.5..+1.5% (§3.2) */
CD_SM90_FWD_ROW( 64,  64, 192, false, 128, 4, CD_SM90_QS(2), true,  true,  false, false, 1,  24, 160)
/* no-LSE twin of the d64 M192 row: ROWSUM +3-13% (§2.3); the rest as its LSE row */
CD_SM90_FWD_ROW( 64,  64, 128, false, 128, 4, CD_SM90_QS(2), true,  false, false, false, 1,  24, 240)
/* no-LSE twin of the d64 M128 row: QS 2 +3-4% at causal 512 / 1k (§2.2); no tail: -2.3-2.5%
 * at causal 512 / 1k with it, its wgmma descriptors left the uniform registers (+44 R2UR,
 * §5.4); not LATE: -5 / -6.5% at d64 causal 512 / 1k, not understood (§3.2) */
CD_SM90_FWD_ROW(128, 128, 128, false, 128, 2, 1,             true,  true,  true,  true,  2,  24, 240)
/* no-LSE twin of the d128 row: the ones slabs take the room of a second Q slot (QS fixed at 1) */
CD_SM90_FWD_ROW(192, 128, 128, true,  128, 2, 1,             false, true,  true,  true,  1,  24, 240)
/* Q/K 192, V 128 (DeepSeek), FA3's 128 x 128 (§2.5): Q 48 + K 2 x 48 + V 2 x 32 KiB leave 16 KiB
 * for O, one slab a consumer at a time (OSL 1: two store passes); HGROUPS, TAIL, LATE as d128
 * (not measured apart). Calls without LSE take it too (fp32 row sums): the ones slabs of a
 * ROWSUM twin (2 x 16 KiB) do not fit (§2.5) */
CD_SM90_FWD_ROW(256, 256, 128, true,   64, 2, 1,             false, true,  true,  true,  2,  24, 240)
/* d256: BLOCK_N 64, not FA3's 80, which fills the 227 KiB with Q and the ring alone (FA3 stages
 * O over V's ring behind a barrier): Q 64 + K 2 x 32 + V 2 x 32 + O 2 x 16 KiB (OSL 2: two store
 * passes); O is 128 fp32 a thread, no spill. Calls without LSE take it too: no ROWSUM at V width 256
 * (P V is already wgmma's widest, N 256), §2.5 */
CD_SM90_FWD_ROW( 96,  96, 128, true,  128, 2, CD_SM90_QS(2), false, true,  true,  true,  3,  24, 240)
CD_SM90_FWD_ROW( 96,  96, 128, false, 128, 2, CD_SM90_QS(2), true,  true,  true,  true,  3,  24, 240)
/* d96, SM90_FWD_D96 1 (a dev build's; session 28 on an H200: 2.5-9% behind value 2; §2.5): the
 * d128 rows' structure in 32-column slabs (S m64n128 over 6 k-steps, P V m64n96, or m64n104 with
 * the ROWSUM ones slab per V stage), 3/4 of their GEMM work a block for the same softmax.
 * Registers: S 64 + P 32 + O 48 (+4) of 240. Shared memory: Q 2 x 24 + K 2 x 24 + V 2 x 24 (+ 2 x
 * 8 ones) + O 2 x 12 KiB = 168 (184) KiB: the room d128 lacks takes a second Q slot (measured
 * +3-4% in the no-LSE d64 M128 row, no effect at d128, §2.2). HGROUPS, TAIL, LATE as d128. O_SLABS
 * 3: all of O at once */
CD_SM90_FWD_ROW( 96,  96, 192, true,   96, 3, CD_SM90_QS(2), false, true,  false, false, 3,  24, 160)
CD_SM90_FWD_ROW( 96,  96, 192, false,  96, 3, CD_SM90_QS(1), true,  true,  false, false, 3,  24, 160)
/* d96, SM90_FWD_D96 2 (the library's since session 28: +11-23% over the d128 rows; §2.5): FA3's
 * BLOCK_M at d96 (its 192 x 144 keeps P in shared memory), three consumers whose 12 warps hide the
 * exp2s as in the d64 M192 rows. 96 keys: S 48 + P 24 + O 48 (+4) = 120 (124) registers of 160,
 * the d64 M192 rows' 128 (132); 112 keys (132 / 136) spilled 56 / 224 bytes, the no-LSE row's
 * wgmmas serialized (C7512). Shared memory: Q 2 x 36 + K 3 x 18 + V 3 x 18 + O 3 x 12 KiB = 216
 * KiB, two Q slots as the d64 M192 rows; without LSE the ones (3 x 6 KiB) take the second slot's
 * room: 198 KiB. No tail, LATE off: the d64 M192 rows' settings (their consumers spilled with the
 * tail, §5.4) */

#undef CD_SM90_FWD_ROW
#undef CD_SM90_QS

/* Shared memory of a row (every block 1024-byte aligned: the 128-byte swizzle atom is 8 rows of
 * 128 B, the 64-byte one's 8 rows of 64 B; D = HEAD_DIM of Q and K, DV = HEAD_DIM_V of V and O;
 * SC = SLAB_COLS, 64 or 32: the slabs of the header comment above):
 *   Q  [Q_STAGES][D/SC][BLOCK_M][SC]  one TMA box of SC columns per swizzled slab
 *   K  [STAGES][D/SC][BLOCK_N][SC]    the ring
 *   V  [STAGES][DV/SC][BLOCK_N][SC]   (ROWSUM d128, d96: one more, all-ones slab per stage)
 *   O  [CONSUMER_WGS][O_SLABS][64][SC] epilogue staging for the TMA store, O_SLABS slabs per
 *                                     consumer (DV / SC: all of its O at once; fewer: in passes)
 *   ones [16][64]                     ROWSUM d64: the row-sum columns of P V
 *   mbarriers: the Q ring, the K ring, the V ring (pipeline.cuh: full[], empty[] each) */
template <class Tile> struct cd_sm90_fwd_smem {
  static constexpr int D = Tile::HEAD_DIM, DV = Tile::HEAD_DIM_V;
  static constexpr int SLAB_COLS = D % 64 == 0 && DV % 64 == 0 ? 64 : 32; /* the slabs' width */
  static constexpr int SLAB_ROW = 2 * SLAB_COLS;         /* bytes: the swizzle's span, 128 or 64 */
  static constexpr int CHUNKS = D / SLAB_COLS;           /* slabs per Q or K row */
  static constexpr int V_CHUNKS = DV / SLAB_COLS;        /* per V or O row */
  static constexpr int Q_BYTES = Tile::BLOCK_M * D * 2;  /* [D/SC][BLOCK_M][SC] */
  static constexpr int K_BYTES = Tile::BLOCK_N * D * 2;  /* one stage of K */
  static constexpr int V_BYTES = Tile::BLOCK_N * DV * 2; /* one stage of V (without the ones) */
  static constexpr int OW_BYTES = 64 * SLAB_ROW * Tile::O_SLABS; /* one consumer's O staging */
  static constexpr bool ONES_SLAB = Tile::ROWSUM_MMA && V_CHUNKS >= 2; /* a slab past V's, per stage */
  static constexpr int ONES_BYTES = Tile::ROWSUM_MMA && V_CHUNKS == 1 ? 2048 : 0; /* 16 keys */
  static constexpr int ONES_SLAB_BYTES = ONES_SLAB ? Tile::BLOCK_N * SLAB_ROW : 0;
  static constexpr int V_STAGE_BYTES = V_BYTES + ONES_SLAB_BYTES;
  static constexpr int O_REGS = DV / 2 + (Tile::ROWSUM_MMA ? 4 : 0); /* accumulator of P V */
  static constexpr int Q_OFF = 0;
  static constexpr int K_OFF = Q_OFF + Tile::Q_STAGES * Q_BYTES;
  static constexpr int V_OFF = K_OFF + Tile::STAGES * K_BYTES;
  static constexpr int O_OFF = V_OFF + Tile::STAGES * V_STAGE_BYTES;
  static constexpr int ONES_OFF = O_OFF + Tile::CONSUMER_WGS * OW_BYTES;
  static constexpr int BAR_OFF = ONES_OFF + ONES_BYTES;
  static constexpr int NUM_BARS = 2 * Tile::Q_STAGES + 4 * Tile::STAGES;
  static constexpr int BYTES = BAR_OFF + 8 * NUM_BARS + 1024; /* + slack to align the base */
  static_assert(BYTES <= 227 * 1024, "shared memory of a tile-table row over the sm_90 limit");
  static_assert(V_CHUNKS % Tile::O_SLABS == 0, "O staged in passes of O_SLABS slabs");
  static_assert((Tile::BLOCK_N * SLAB_ROW) % 1024 == 0 && (64 * SLAB_ROW) % 1024 == 0,
                "every slab 1024-byte aligned");
};

#endif /* CUDADENT_SM90_FWD_TILES_CUH */
