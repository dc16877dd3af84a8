/*
 * bwd_parts.cuh - the pieces of the sm80 backward (bwd.cu): its tile table, the shared-memory
 * layout (cd_sm80_bwd_shape), the kernels' arguments, the swizzle, ldmatrix and mma.sync warp
 * products, and the tile loaders and stores. Included by bwd.cu only.
 *
 * Widths. The kernels are compiled for a width W in {64, (96,) 128, 192, 256} (the template
 * parameter D below): every tile of Q, K, V, O, dO, dQ, dK, dV has rows of W elements in shared
 * memory and registers. A call runs the smallest W >= max(head_dim, head_dim_v) (every multiple of
 * 8 in [8, 256]). Padding rule: columns at or past the real dim are never read or written in global
 * memory; loads of Q and K zero-fill 16-byte chunks at columns >= head_dim, loads of V and dO at >=
 * head_dim_v (cp.async with src-size 0), the stores of dQ and dK stop at head_dim, of dV at
 * head_dim_v; delta reads head_dim_v columns. A zero column adds exactly 0 to every product, so
 * nothing else changes. The column bounds are a template bool (PAD) of the loaders: the kernels
 * with PAD = false (W = 64, 128 with head_dim = head_dim_v = W, no softcap) are the code of before,
 * instruction for instruction. W = 96 (dispatch.h CUDADENT_SM80_W96) has 12-chunk rows: its swizzle
 * key is swizzle.cuh's (row / 2) % 4, the others' row % 8.
 */
#ifndef CUDADENT_SM80_BWD_PARTS_CUH
#define CUDADENT_SM80_BWD_PARTS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels/sm80/ptx_sm80.cuh"
#include "kernels/sm80/swizzle.cuh"

/* ---- the tile table: one row per width ---------------------------------------------------------- */

/* BLOCK_M x BLOCK_N: query x key tile; WARPS per CTA; CTAS_PER_SM (launch bounds, deterministic
 * split count); *_WARPS_*: warps along the first dimension of each product's output (the rest
 * along the second); DQ_FIRST: issue the dQ product (and its reductions) before dV and dK (chosen
 * by measurement, docs/kernels/sm80_bwd.md section 4); EXACT: a kernel without column bounds
 * (PAD = false) exists for this width, taken when head_dim = head_dim_v = W and no softcap.
 * Shared memory (cd_sm80_bwd_shape::SMEM) must fit sm_80's 163 KiB per block (a LARGE = true
 * row, a width's optional large tile: sm_90's 227 KiB, run where the device holds it); registers
 * decide the rest: dK + dV accumulators are 2 BLOCK_N W / 256 fp32 a thread, the dQ product's BLOCK_M W
 * / 256 (docs/kernels/sm80_bwd.md section 9). */
template <int D, bool LARGE = false> struct cd_sm80_bwd_tile;
/* W 64: S/dP warp tile 64x32, dK/dV 32x32, dQ 32x32. 162 KiB. */
template <> struct cd_sm80_bwd_tile<64> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 128, WARPS = 8, CTAS_PER_SM = 1;
  static constexpr int SDP_WARPS_M = 2, DKV_WARPS_N = 4, DQ_WARPS_M = 4;
  static constexpr int DQ_FIRST = 0, EXACT = 1;
};
/* W 128: S/dP warp tile 32x32, dK/dV 32x64, dQ 32x32. 161 KiB. */
template <> struct cd_sm80_bwd_tile<128> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 128, WARPS = 8, CTAS_PER_SM = 1;
  static constexpr int SDP_WARPS_M = 2, DKV_WARPS_N = 4, DQ_WARPS_M = 2;
  static constexpr int DQ_FIRST = 1, EXACT = 1;
};
/* W 96 (dispatch.h CUDADENT_SM80_W96; docs/kernels/sm80_bwd.md "W = 96"): W 128's 64 x 128 and
 * 8 warps (FA2's d96 on sm80), S/dP warp tile 32x32, dK/dV 32x48, dQ 16x48 (48 columns: 3 pairs
 * of n8 tiles, interleaved, see KV_IL; dQ 32x24 would not split in 16-column pairs). dK + dV 96
 * registers (W 128: 128), dQ 24 (32). 129 KiB: one CTA per SM; 128 x 128 would need 215 KiB. */
template <> struct cd_sm80_bwd_tile<96> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 128, WARPS = 8, CTAS_PER_SM = 1;
  static constexpr int SDP_WARPS_M = 2, DKV_WARPS_N = 4, DQ_WARPS_M = 4;
  static constexpr int DQ_FIRST = 1, EXACT = 1;
};
/* W 192: 64 x 64 (FA2's), S/dP warp tile 16x32, dK/dV 32x48, dQ 32x48 (48 columns: 3 pairs of
 * n8 tiles, interleaved, see KV_IL). 161 KiB; BLOCK_N 128 would need 192 KiB and 192 dK/dV
 * registers. */
template <> struct cd_sm80_bwd_tile<192> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 8, CTAS_PER_SM = 1;
  static constexpr int SDP_WARPS_M = 4, DKV_WARPS_N = 2, DQ_WARPS_M = 2;
  static constexpr int DQ_FIRST = 1, EXACT = 0;
};
/* W 256: 32 x 64, S/dP warp tile 16x16, dK/dV 32x64, dQ 32x32. 136.5 KiB. BLOCK_N 64 as FA2
 * (dK + dV: 128 registers, as W 128); BLOCK_M 32 keeps the double-buffered Q/dO within sm_80's
 * 163 KiB (64 x 64 needs 209 KiB; FA2 drops the double buffer there instead) and the dQ product
 * at 32 registers. */
template <> struct cd_sm80_bwd_tile<256> {
  static constexpr int BLOCK_M = 32, BLOCK_N = 64, WARPS = 8, CTAS_PER_SM = 1;
  static constexpr int SDP_WARPS_M = 2, DKV_WARPS_N = 2, DQ_WARPS_M = 1;
  static constexpr int DQ_FIRST = 1, EXACT = 0;
};
/* W 256's large tile (LARGE = true; dispatch.h CUDADENT_SM80_BWD_W256_M64, docs/kernels/sm80_bwd.md
 * "W 256 with 64 x 64"): 64 x 64 (FA2's d256 backward tile) with the small tile's warp layout,
 * S/dP warp tile 32x16, dK/dV 32x64, dQ 64x32. FA2's layout (S/dP 16x32, dQ 32x64: its
 * AtomLayoutMSdP 4, AtomLayoutMdQ 2) reads as many ldmatrix bytes but spilled 32 (PAD) / 64
 * (softcap) bytes at 255 registers on sm_90; this one uses 245 / 246, no spill. dK + dV 128
 * registers, dQ 64 (the small tile: 32). 209 KiB (214016 B) with the double-buffered Q/dO: only
 * where the device's opt-in shared memory holds it (sm_90's 227 KiB, not sm_80's 163 KiB;
 * cd_sm80_bwd_large_fits), the small tile above elsewhere. BLOCK_N and CTAS_PER_SM equal the
 * small tile's: the host's key-tile count and deterministic splits do not depend on the choice. */
template <> struct cd_sm80_bwd_tile<256, true> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 8, CTAS_PER_SM = 1;
  static constexpr int SDP_WARPS_M = 2, DKV_WARPS_N = 2, DQ_WARPS_M = 1;
  static constexpr int DQ_FIRST = 1, EXACT = 0;
};
static_assert(cd_sm80_bwd_tile<256, true>::BLOCK_N == cd_sm80_bwd_tile<256>::BLOCK_N &&
                  cd_sm80_bwd_tile<256, true>::CTAS_PER_SM == cd_sm80_bwd_tile<256>::CTAS_PER_SM &&
                  cd_sm80_bwd_tile<256, true>::BLOCK_M % cd_sm80_bwd_tile<256>::BLOCK_M == 0,
              "W 256's tiles share the key tiling, and the accumulator's padding (the larger BLOCK_M)");

/* Opt-in shared memory per block: sm_80's 163 KiB (the small tiles', every width) and sm_90's
 * 227 KiB (a large tile's). */
#define SM80_BWD_SMEM_SM80 (163 * 1024)
#define SM80_BWD_SMEM_SM90 (227 * 1024)

/* The opt-in shared memory per block of the architecture being compiled (device code only; the
 * forward's CD_SM80_FWD_ARCH_SMEM): sm_86 / sm_89 99 KiB, sm_80 / sm_87 163 KiB, else (sm_90,
 * and newer through compute_90's PTX) 227 KiB. A large tile's kernels are compiled as a trap
 * where it needs more; they are never launched there (cd_sm80_bwd_large_fits). */
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 890)
#define CD_SM80_BWD_ARCH_SMEM (99 * 1024)
#elif defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 870)
#define CD_SM80_BWD_ARCH_SMEM SM80_BWD_SMEM_SM80
#else
#define CD_SM80_BWD_ARCH_SMEM SM80_BWD_SMEM_SM90
#endif

/* Threads of the pre/convert kernels. */
#define SM80_BWD_ROW_THREADS 256
#define SM80_BWD_LOG2E 1.4426950408889634f

template <int D, bool LARGE = false> struct cd_sm80_bwd_shape {
  typedef cd_sm80_bwd_tile<D, LARGE> Tile;
  static constexpr int BM = Tile::BLOCK_M, BN = Tile::BLOCK_N, THREADS = Tile::WARPS * 32;
  /* warp tiles */
  static constexpr int SDP_WN = Tile::WARPS / Tile::SDP_WARPS_M;
  static constexpr int S_TM = BM / Tile::SDP_WARPS_M, S_TN = BN / SDP_WN;
  static constexpr int KV_WD = Tile::WARPS / Tile::DKV_WARPS_N;
  static constexpr int KV_TN = BN / Tile::DKV_WARPS_N, KV_TD = D / KV_WD;
  static constexpr int Q_WD = Tile::WARPS / Tile::DQ_WARPS_M;
  static constexpr int Q_TM = BM / Tile::DQ_WARPS_M, Q_TD = D / Q_WD;
  /* A warp's n8 tiles along D in the dK/dV and dQ products: contiguous (IL = 1: warp wd has
   * columns [wd TD, (wd + 1) TD)) where their count is a power of two; else interleaved by pairs
   * (IL = warps along D: pair p of warp wd is the 16 columns of global pair p IL + wd), so that
   * the ldmatrix chunk moves (multiples of 2 IL chunks) never carry into the warp's chunk bits
   * (2 wd + 0/1). W = 96 and 192 (48 columns a warp) are the interleaved widths. */
  static constexpr int KV_IL = ((KV_TD / 8) & (KV_TD / 8 - 1)) ? KV_WD : 1;
  static constexpr int Q_IL = ((Q_TD / 8) & (Q_TD / 8 - 1)) ? Q_WD : 1;
  /* threads per row of the pre kernel, 8 elements each: W / 8 rounded up to a power of two */
  static constexpr int PRE_TPR = ((D / 8) & (D / 8 - 1)) ? 32 : D / 8;
  /* shared memory, bytes */
  static constexpr int Q_TILE = BM * D * 2, KV_TILE = BN * D * 2, PS_TILE = BM * BN * 2;
  static constexpr int OFF_Q = 0, OFF_DO = 2 * Q_TILE, OFF_K = 4 * Q_TILE;
  static constexpr int OFF_V = OFF_K + KV_TILE, OFF_P = OFF_V + KV_TILE, OFF_DS = OFF_P + PS_TILE;
  static constexpr int OFF_LSE = OFF_DS + PS_TILE;     /* float [2][BM] */
  static constexpr int OFF_DELTA = OFF_LSE + 2 * BM * 4; /* float [2][BM] */
  static constexpr int SMEM = OFF_DELTA + 2 * BM * 4;
  static_assert(S_TM % 16 == 0 && S_TN % 16 == 0, "S warp tile");
  static_assert(KV_TN % 16 == 0 && KV_TD % 16 == 0, "dK/dV warp tile");
  static_assert(Q_TM % 16 == 0 && Q_TD % 16 == 0, "dQ warp tile");
  static_assert(2 * Q_TILE >= KV_TILE, "dK/dV staging reuses the sQ/sdO buffers");
  static_assert(D >= 64 && BN >= 64 && BN % 64 == 0 && D % 32 == 0,
                "swizzle.cuh: rows of whole 8-chunk groups, or of 8 k + 4 chunks (W 96)");
  static_assert(SMEM <= (LARGE ? SM80_BWD_SMEM_SM90 : SM80_BWD_SMEM_SM80),
                "a small tile fits sm_80's shared memory per block, a large one sm_90's");
  static_assert(PRE_TPR <= 32 && PRE_TPR * 8 >= D, "pre kernel: one warp covers a row");
  static_assert((BM * D / 8) % THREADS == 0 && (BN * D / 8) % THREADS == 0, "copy split");
  static_assert(BM <= THREADS, "one LSE element per thread");
  static_assert((BM * D / 4) % THREADS == 0, "dQ convert split");
};

/* Everything the kernels need, by value. Strides in elements. */
typedef struct cd_sm80_bwd_args {
  const void *q, *k, *v, *o, *dout;
  void *dq, *dk, *dv;
  int64_t q_sb, q_ss, q_sh, k_sb, k_ss, k_sh, v_sb, v_ss, v_sh, o_sb, o_ss, o_sh;
  int64_t do_sb, do_ss, do_sh, dq_sb, dq_ss, dq_sh, dk_sb, dk_ss, dk_sh, dv_sb, dv_ss, dv_sh;
  const float *lse;  /* [batch][heads_q][seqlen_q] */
  float *dq_acc;     /* [splits][batch][heads_q][sq_pad][D] fp32 (D: the width; every column) */
  float *delta;      /* [batch][heads_q][sq_pad] fp32 */
  int64_t slice;     /* elements of one dq_acc slice */
  int splits;        /* slices in dq_acc (1 when not deterministic) */
  int det;           /* deterministic: split s uses slice s; otherwise all use slice 0 */
  int batch, sq, sk, hq, hkv, group, sq_pad, n_blocks;
  float scale, scale_log2;
  int wl, wr;        /* -1: unbounded */
  /* after the fields of before (so the exact kernels' parameter offsets stay): */
  int dim_qk, dim_v; /* head_dim (Q, K, dQ, dK columns), head_dim_v (V, O, dO, dV), <= D */
  float cap_in, cap_out; /* softcap: t = tanh(S cap_in), cap_in = scale / softcap;
                          * P = exp2(t cap_out - LSE log2e), cap_out = softcap log2e */
} cd_sm80_bwd_args_t;

/* The varlen kernels' second argument (cudadent.h, "features of layout v2"): the device arrays
 * (seqused_k may be NULL) and the token counts. A separate struct, so that the dense kernels'
 * argument is the one they always had. In a varlen call the first argument's batch is the number
 * of sequences, sq / sk hold max_seqlen_q / max_seqlen_k (the grids' bounds), stride_batch is 0,
 * sq_pad is the dQ accumulator's rows per head (cd_sm80_bwd_varlen_acc0) and delta is laid out
 * [heads_q][total_q] as the LSE. */
typedef struct cd_sm80_bwd_varlen_args {
  const int *cu_seqlens_q, *cu_seqlens_k, *seqused_k;
  int total_q, total_k;
} cd_sm80_bwd_varlen_args_t;

/* One sequence of a varlen call as the kernels see it: queries [q0, q0 + sq), keys [k0, k0 + sk)
 * (sk: the used keys), its dQ accumulator rows from acc0 (per head). Dense: q0 = k0 = acc0 = 0 and
 * the call's lengths. */
typedef struct cd_sm80_bwd_seq {
  int q0, sq, k0, sk;
  int64_t acc0;
} cd_sm80_bwd_seq_t;

/* Sequence b's clamped ranges, the forward's rule (cudadent.h; fwd_kernel.cuh
 * cd_sm80_fwd_varlen_q / _k): q0 = clamp(cu_seqlens_q[b], 0, total_q), end
 * clamp(cu_seqlens_q[b+1], q0, min(total_q, q0 + max_seqlen_q)); keys likewise, of which the first
 * seqused_k[b] (clamped to [0, the key count]) are used. All in int64 before the clamps. */
__device__ __forceinline__ void cd_sm80_bwd_varlen_range(const int *cu, int b, int total, int max_len,
                                                         int *lo, int *len) {
  const int64_t l = min(max((int64_t)cu[b], (int64_t)0), (int64_t)total);
  const int64_t end = min((int64_t)total, l + max_len);
  const int64_t h = min(max((int64_t)cu[b + 1], l), end);
  *lo = (int)l;
  *len = (int)(h - l);
}

/* The first dQ accumulator row (of each head's rows) of a sequence whose queries start at token
 * q0: (q0 + b BM) rounded down to a multiple of BM. Tiles of BM rows from there never reach the
 * next sequence's first row (floor((x + len + BM) / BM) BM >= floor(x / BM) BM + ceil(len / BM) BM),
 * and the last row of any (clamped) sequence is below total_q + batch BM, the rows per head that
 * the host sizes (cd_sm80_bwd_acc_rows_per_head). */
template <int BM> __host__ __device__ __forceinline__ int64_t cd_sm80_bwd_varlen_acc0(int q0, int b) {
  return ((int64_t)q0 + (int64_t)b * BM) / BM * BM;
}

template <int BM>
__device__ __forceinline__ cd_sm80_bwd_seq_t cd_sm80_bwd_varlen_seq(const cd_sm80_bwd_args_t &a,
                                                                    const cd_sm80_bwd_varlen_args_t &v,
                                                                    int b) {
  cd_sm80_bwd_seq_t s;
  cd_sm80_bwd_varlen_range(v.cu_seqlens_q, b, v.total_q, a.sq, &s.q0, &s.sq);
  cd_sm80_bwd_varlen_range(v.cu_seqlens_k, b, v.total_k, a.sk, &s.k0, &s.sk);
  if (v.seqused_k != NULL) s.sk = min(max(v.seqused_k[b], 0), s.sk);
  s.acc0 = cd_sm80_bwd_varlen_acc0<BM>(s.q0, b);
  return s;
}

/* The pure index functions below are host functions too (dev/sm80_bwd/check_layout.cu checks
 * them on the CPU); that changes no device code. */
#define CD_SM80_BWD_HD __host__ __device__ __forceinline__

/* Byte offset of element (row, col) of a [rows][ROW] 16-bit tile, 16-byte chunks XOR the row's
 * key (swizzle.cuh: row % 8; ROW 96: (row / 2) % 4). */
template <int ROW> CD_SM80_BWD_HD uint32_t cd_sm80_bwd_swz(int row, int col) {
  return (uint32_t)(row * (ROW * 2) + ((((col >> 3) ^ cd_sm80_swz_key<ROW / 8>(row))) << 4) +
                    ((col & 7) << 1));
}

/* An ldmatrix.x4 operand in a swizzled tile, as seen by one lane: the byte offset of the row the
 * lane addresses (warp offset included) and 16 * (its own chunk bits ^ the row's key). The address
 * of a fragment whose row and chunk move by compile-time amounts (row_imm a multiple of 8,
 * chunk_imm with bits disjoint from the lane's chunk bits) is then row + ROW*2*row_imm + (x ^
 * 16*chunk_imm): no per-fragment swizzle arithmetic beyond one XOR. */
typedef struct cd_sm80_bwd_ldm { uint32_t row, x; } cd_sm80_bwd_ldm_t;

template <int ROW> CD_SM80_BWD_HD cd_sm80_bwd_ldm_t cd_sm80_bwd_ldm(int lane_row, int lane_chunk) {
  cd_sm80_bwd_ldm_t o;
  o.row = (uint32_t)(lane_row * ROW * 2);
  o.x = (uint32_t)((lane_chunk ^ cd_sm80_swz_key<ROW / 8>(lane_row)) << 4);
  return o;
}

template <int ROW> CD_SM80_BWD_HD uint32_t cd_sm80_bwd_ldm_addr(uint32_t base, cd_sm80_bwd_ldm_t o, int row_imm,
                                                                            int chunk_imm) {
  return base + o.row + (uint32_t)(row_imm * ROW * 2) + (o.x ^ (uint32_t)(chunk_imm << 4));
}

/* Lane operands for the four ways a warp tile reads a 16x16 (A) or 16x16 = two n8 (B) fragment.
 *   A(i,k) stored [i][k]: rows i0 + lane%16, chunk lane/16      (moves: row 16 mt, chunk 2 ks)
 *   A(i,k) stored [k][i]: rows lane-block,  chunk i0/8 + ...    (moves: row 16 ks, chunk 2 mt)
 *   B(k,n) stored [n][k]: rows n0 + ...,    chunk (j&1)         (moves: row 16 np, chunk 2 ks)
 *   B(k,n) stored [k][n]: rows lane-block,  chunk n0/8 + (j>>1) (moves: row 16 ks, chunk 2 np)
 * with j = lane / 8, r = lane % 8 (lanes 8j..8j+7 address matrix j). */
template <int ROW, bool TRANS> CD_SM80_BWD_HD cd_sm80_bwd_ldm_t cd_sm80_bwd_ldm_a(int i0, int lane) {
  const int r = lane & 7, j = lane >> 3;
  return TRANS ? cd_sm80_bwd_ldm<ROW>((j >> 1) * 8 + r, (i0 >> 3) + (j & 1)) : cd_sm80_bwd_ldm<ROW>(i0 + (lane & 15), lane >> 4);
}
template <int ROW, bool TRANS> CD_SM80_BWD_HD cd_sm80_bwd_ldm_t cd_sm80_bwd_ldm_b(int n0, int lane) {
  const int r = lane & 7, j = lane >> 3;
  return TRANS ? cd_sm80_bwd_ldm<ROW>((j & 1) * 8 + r, (n0 >> 3) + (j >> 1)) : cd_sm80_bwd_ldm<ROW>(n0 + (j >> 1) * 8 + r, j & 1);
}

/* Columns of a warp tile along D (dK/dV, dQ products; IL from cd_sm80_bwd_shape): the first
 * column of the warp with index wd along D (TD columns each), and the offset of its n8 tile nt
 * from it (IL = 1: 8 nt). */
template <int TD, int IL> CD_SM80_BWD_HD int cd_sm80_bwd_wcol(int wd) { return IL == 1 ? wd * TD : wd * 16; }
template <int IL> CD_SM80_BWD_HD int cd_sm80_bwd_ncol(int nt) {
  return IL == 1 ? 8 * nt : 16 * IL * (nt >> 1) + 8 * (nt & 1);
}

/* acc[MT][NT] (a warp tile of (16 MT) x (8 NT)) += A * B over K = 16 KSTEPS, operands in shared
 * memory at sA / sB, lane operands la / lb from cd_sm80_bwd_ldm_a / cd_sm80_bwd_ldm_b. A_T: A(i,k)
 * is stored at [k][i] (else [i][k]); B_T: B(k,n) is stored at [k][n] (else [n][k]). A_ROW /
 * B_ROW: elements per stored row. Where an operand's warp offset moves its chunk (A_T: i0, B_T:
 * n0), the offset must be a multiple of 16 MT / 8 NT (powers of two), so that compile-time chunk
 * moves never carry into the warp's chunk bits; or, B_T only, B_IL > 1: the warp's pairs of n8
 * tiles are interleaved (cd_sm80_bwd_shape::KV_IL), n0 = 16 wd with wd < B_IL, pair np at chunk
 * 2 (np B_IL + wd): the moves 2 np B_IL leave bits 0 .. log2(2 B_IL) - 1 alone, any NT. */
template <typename T, int MT, int NT, int KSTEPS, int A_ROW, bool A_T, int B_ROW, bool B_T, int B_IL = 1>
__device__ __forceinline__ void cd_sm80_bwd_warp_gemm(float (&acc)[MT][NT][4], uint32_t sA, cd_sm80_bwd_ldm_t la,
                                                      uint32_t sB, cd_sm80_bwd_ldm_t lb) {
  static_assert(NT % 2 == 0, "B fragments come in pairs of n8 tiles");
  static_assert(!A_T || (MT & (MT - 1)) == 0, "A warp tile moving chunks: a power of two");
  static_assert(!B_T || B_IL > 1 || (NT & (NT - 1)) == 0, "B warp tile moving chunks: a power of two");
  static_assert(B_IL == 1 || (B_T && (B_IL & (B_IL - 1)) == 0), "interleave: B_T, a power of two");
#pragma unroll
  for (int ks = 0; ks < KSTEPS; ++ks) {
    uint32_t af[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if (!A_T)
        cd_ldmatrix_x4(af[mt], cd_sm80_bwd_ldm_addr<A_ROW>(sA, la, mt * 16, ks * 2));
      else
        cd_ldmatrix_x4_trans(af[mt], cd_sm80_bwd_ldm_addr<A_ROW>(sA, la, ks * 16, mt * 2));
    }
    uint32_t bf[NT / 2][4];
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      if (!B_T)
        cd_ldmatrix_x4(bf[np], cd_sm80_bwd_ldm_addr<B_ROW>(sB, lb, np * 16, ks * 2));
      else
        cd_ldmatrix_x4_trans(bf[np], cd_sm80_bwd_ldm_addr<B_ROW>(sB, lb, ks * 16, np * 2 * B_IL));
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) cd_mma_m16n8k16<T>(acc[mt][nt], af[mt], &bf[nt >> 1][(nt & 1) * 2]);
  }
}

template <int MT, int NT> __device__ __forceinline__ void cd_sm80_bwd_zero(float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc[mt][nt][e] = 0.f;
}

/* cp.async a [ROWS][D] tile of a (batch, seq, head, dim) tensor into swizzled shared memory; rows at
 * or past `valid` and, where CLIP, 16-byte chunks at or past column `cols` (a multiple of 8) are
 * zero-filled (nothing read; the source address given is g, row 0's first chunk). g points at row 0
 * of the tile. Thread tid (= threadIdx.x: CLIP re-reads it) copies chunks tid + i THREADS
 * (row-major); where THREADS is a multiple of the chunks per row (every W but 96, 192) that is
 * written as before issue 27. The forward's cd_sm80_fwd_load_tile does the same walking a pointer;
 * calling it here changed this kernel's SASS (issue 22): both stay. */
template <int ROWS, int D, int THREADS, bool CLIP = false>
__device__ __forceinline__ void cd_sm80_bwd_load_tile(uint32_t s, const uint16_t *g, int64_t row_stride,
                                                      int valid, int tid, int cols = D) {
  constexpr int CPR = D / 8; /* 16-byte chunks per row */
  if (CLIP) {
    /* tid re-read (volatile): otherwise the compiler keeps every row's 64-bit offset of the
     * query-tile loads in registers across the main loop, which spills */
    uint32_t t;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
    tid = (int)t;
  }
  if (THREADS % CPR == 0) {
    const int ch = tid % CPR;
    if (CLIP && ch * 8 >= cols) valid = 0; /* this thread's chunk column is past cols in every row */
#pragma unroll
    for (int i = 0; i < ROWS * CPR / THREADS; ++i) {
      const int row = tid / CPR + i * (THREADS / CPR);
      const bool ok = row < valid;
      const uint16_t *src = ok ? g + (int64_t)row * row_stride + ch * 8 : g;
      cd_cp_async_cg16_zfill(s + cd_sm80_bwd_swz<D>(row, ch * 8), src, ok);
    }
  } else {
#pragma unroll
    for (int i = 0; i < ROWS * CPR / THREADS; ++i) {
      const int idx = tid + i * THREADS, row = idx / CPR, ch = idx % CPR;
      const bool ok = row < valid && (!CLIP || ch * 8 < cols);
      const uint16_t *src = ok ? g + (int64_t)row * row_stride + ch * 8 : g;
      cd_cp_async_cg16_zfill(s + cd_sm80_bwd_swz<D>(row, ch * 8), src, ok);
    }
  }
}

/* Write a register warp tile (scaled, converted) into a swizzled [.][D] shared tile; col0 and IL
 * as cd_sm80_bwd_wcol / cd_sm80_bwd_ncol. */
template <typename T, int MT, int NT, int D, int IL = 1>
__device__ __forceinline__ void cd_sm80_bwd_stage(unsigned char *s, const float (&acc)[MT][NT][4], int row0,
                                                  int col0, float mul, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int row = row0 + mt * 16 + g + 8 * hh, col = col0 + cd_sm80_bwd_ncol<IL>(nt) + 2 * t;
        *(uint32_t *)(s + cd_sm80_bwd_swz<D>(row, col)) =
            cd_pack2<T>(acc[mt][nt][2 * hh] * mul, acc[mt][nt][2 * hh + 1] * mul);
      }
}

/* Copy a staged swizzled [ROWS][D] tile to global rows [0, valid) of g (row stride in elements),
 * where CLIP only its columns [0, cols) (cols a multiple of 8). Chunks as cd_sm80_bwd_load_tile. */
template <int ROWS, int D, int THREADS, bool CLIP = false>
__device__ __forceinline__ void cd_sm80_bwd_store_tile(uint16_t *g, int64_t row_stride, const unsigned char *s,
                                                       int valid, int tid, int cols = D) {
  constexpr int CPR = D / 8;
  if (THREADS % CPR == 0) {
    const int ch = tid % CPR;
#pragma unroll
    for (int i = 0; i < ROWS * CPR / THREADS; ++i) {
      const int row = tid / CPR + i * (THREADS / CPR);
      if (row < valid && (!CLIP || ch * 8 < cols))
        *(uint4 *)(g + (int64_t)row * row_stride + ch * 8) = *(const uint4 *)(s + cd_sm80_bwd_swz<D>(row, ch * 8));
    }
  } else {
#pragma unroll
    for (int i = 0; i < ROWS * CPR / THREADS; ++i) {
      const int idx = tid + i * THREADS, row = idx / CPR, ch = idx % CPR;
      if (row < valid && (!CLIP || ch * 8 < cols))
        *(uint4 *)(g + (int64_t)row * row_stride + ch * 8) = *(const uint4 *)(s + cd_sm80_bwd_swz<D>(row, ch * 8));
    }
  }
}

/* cp.async the query tile m of head h into buffer buf: Q and dO [BM][D] (rows past seqlen_q
 * zero; where PAD, Q's columns from head_dim and dO's from head_dim_v zero), LSE [BM] (past
 * seqlen_q zero; the reader masks them) and delta [BM] (padded in the workspace, always
 * readable). One commit group. LARGE: the width's large tile (cd_sm80_bwd_tile). VARLEN: the tile of sequence s (b unused): rows from token
 * s.q0 + m BM, s.sq rows valid, LSE and delta at [h][total_q] (4-byte copies, zero past s.sq). */
template <int D, bool PAD, bool VARLEN = false, bool LARGE = false>
__device__ __forceinline__ void cd_sm80_bwd_load_query_tile(const cd_sm80_bwd_args_t &a, uint32_t s0, int buf,
                                                            int b, int h, int m, int tid,
                                                            const cd_sm80_bwd_seq_t *s = NULL,
                                                            int total_q = 0) {
  typedef cd_sm80_bwd_shape<D, LARGE> Sh;
  const int m0 = m * Sh::BM;
  if constexpr (VARLEN) {
    const int64_t t0 = (int64_t)s->q0 + m0; /* the tile's first token */
    const uint16_t *qg = (const uint16_t *)a.q + t0 * a.q_ss + (int64_t)h * a.q_sh;
    const uint16_t *dog = (const uint16_t *)a.dout + t0 * a.do_ss + (int64_t)h * a.do_sh;
    cd_sm80_bwd_load_tile<Sh::BM, D, Sh::THREADS, PAD>(s0 + Sh::OFF_Q + buf * Sh::Q_TILE, qg, a.q_ss,
                                                       s->sq - m0, tid, a.dim_qk);
    cd_sm80_bwd_load_tile<Sh::BM, D, Sh::THREADS, PAD>(s0 + Sh::OFF_DO + buf * Sh::Q_TILE, dog, a.do_ss,
                                                       s->sq - m0, tid, a.dim_v);
    if (tid < Sh::BM) {
      const bool ok = m0 + tid < s->sq;
      const int64_t i = (int64_t)h * total_q + t0 + tid; /* [heads_q][total_q] */
      cd_cp_async_ca4_zfill(s0 + Sh::OFF_LSE + (buf * Sh::BM + tid) * 4, ok ? a.lse + i : a.lse, ok);
      cd_cp_async_ca4_zfill(s0 + Sh::OFF_DELTA + (buf * Sh::BM + tid) * 4, ok ? a.delta + i : a.delta, ok);
    }
  } else {
    const uint16_t *qg = (const uint16_t *)a.q + b * a.q_sb + (int64_t)m0 * a.q_ss + h * a.q_sh;
    const uint16_t *dog = (const uint16_t *)a.dout + b * a.do_sb + (int64_t)m0 * a.do_ss + h * a.do_sh;
    cd_sm80_bwd_load_tile<Sh::BM, D, Sh::THREADS, PAD>(s0 + Sh::OFF_Q + buf * Sh::Q_TILE, qg, a.q_ss, a.sq - m0, tid,
                                                       a.dim_qk);
    cd_sm80_bwd_load_tile<Sh::BM, D, Sh::THREADS, PAD>(s0 + Sh::OFF_DO + buf * Sh::Q_TILE, dog, a.do_ss, a.sq - m0, tid,
                                                       a.dim_v);
    const int64_t bh = (int64_t)b * a.hq + h;
    if (tid < Sh::BM) {
      const bool ok = m0 + tid < a.sq;
      cd_cp_async_ca4_zfill(s0 + Sh::OFF_LSE + (buf * Sh::BM + tid) * 4, ok ? a.lse + bh * a.sq + m0 + tid : a.lse, ok);
    }
    if (tid < Sh::BM / 4)
      cd_cp_async_cg16(s0 + Sh::OFF_DELTA + (buf * Sh::BM + tid * 4) * 4, a.delta + bh * a.sq_pad + m0 + tid * 4);
  }
  cd_cp_async_commit();
}

#endif /* CUDADENT_SM80_BWD_PARTS_CUH */
