/*
 * fwd_tiles.cuh - the portable forward's tile table and the templates that turn normalized params
 * into one kernel instantiation (width, variant, tile size), shared by fwd.cu (the dense kernels)
 * and fwd_varlen.cu (the varlen kernels: a second translation unit, so that the two sets compile
 * in parallel and the dense kernels' code does not change). fwd.cu's header comment lists the
 * instantiations; the kernel is fwd_kernel.cuh.
 */
#ifndef CUDADENT_SM80_FWD_TILES_CUH
#define CUDADENT_SM80_FWD_TILES_CUH

#include <cuda_runtime.h>
#include "dispatch.h"
#include "kernels/sm80/fwd_launch.cuh"

/* ---- the tile table: per width W, large tiles and small tiles ------------------------------
 * BLOCK_M query rows and BLOCK_N keys per tile, WARPS warps of BLOCK_M / WARPS rows each.
 * Shared memory (BLOCK_M + 4 * BLOCK_N) * W * 2 bytes (Q, K and V double buffered); registers per
 * thread: O (ROWS_W * W / 32) + S (ROWS_W * BLOCK_N / 32) fp32, 255 at most with
 * __launch_bounds__(128, 2) (8 warps, CUDADENT_SM80_FWD_WIDE8: (256, 1)).
 * W = 64, 128, large tiles (grids that fill the GPU): 4 warps of 32 rows, so each K/V fragment
 * read from shared memory feeds two m16 tiles; 80 KiB (W 64), 96 KiB (W 128): two CTAs per SM
 * on sm_90; on sm_80 (164 KiB) W 128 gets one.
 * W = 64, 128, small tiles: 64-row tiles of 4 warps of 16 rows, 64-key tiles: twice the CTAs, a
 * quarter of the work per key tile, for grids too small to fill the GPU (docs/kernels/sm80_fwd.md
 * section 2): unmasked, when the small-tile grid fits in one CTA per SM (large CTAs <= SMs / 2);
 * masked (causal / window: uneven query tiles), when there are fewer than 2 large CTAs per SM.
 * W = 192, 256: one tile, 64 x 32, 4 warps of 16 rows (docs/kernels/sm80_fwd.md section 2):
 * 32-row warps would hold 192 / 256 O accumulators a thread, more than the 255 registers; 16-row
 * warps hold 96 / 128. 32-key tiles keep shared memory at 72 KiB (W 192) / 96 KiB (W 256): two
 * CTAs per SM on sm_90 (both) and on sm_80 (W 192), and both fit sm_86 / sm_89's 99 KiB per
 * block; 64-key tiles (120 / 160 KiB) would give one CTA per SM everywhere and not run on those.
 * The small tiles are the same: a 64-row tile is already the small shape. (With dispatch.h's
 * CUDADENT_SM80_FWD_WIDE8 at 1 they get a large tile of 8 warps: below.) */
template <int W, bool SMALL, bool SOFTCAP = false> struct cd_sm80_fwd_tile;
template <> struct cd_sm80_fwd_tile<64, false> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 128, WARPS = 4;
};
/* Built for sm_90 (not sm_80 / sm_89), this row's kernels (exact and PAD: the same spill in
 * their SASS) make ptxas warn of a spill (8 bytes stored, 48 loaded): one 64-bit value (the query
 * tile's first row m0 as int64) is stored once before the loop, loaded once per key tile, issued
 * among the S = Q K^T mma.sync and used by the mask test after them, and five times in the
 * epilogue (SASS of CUDA 13.0). One L1-resident load in a key tile's ~1300 instructions (256
 * HMMA) is below 0.1% of them and hidden behind the mma.sync; keeping it in a register would take
 * more than the 255 that two CTAs per SM (__launch_bounds__(128, 2)) leave. So the four spill
 * warnings of a clean build (fp16, bf16 x exact, PAD) are expected. */
template <> struct cd_sm80_fwd_tile<128, false> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 64, WARPS = 4;
};
/* Softcap, large tiles: half the keys of a tile. With the rows above the tanh pushed ptxas past
 * 255 registers (with tanh.approx, the cheaper tanh: 108 / 64 bytes (W 64) and 60 / 48 bytes
 * (W 128) of spill stores / loads inside the key loop, sm_80, CUDA 13.0); half as many S
 * accumulators (64 / 32 fewer registers) leaves room (docs/kernels/sm80_fwd.md section 2). */
template <> struct cd_sm80_fwd_tile<64, false, true> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 64, WARPS = 4;
};
template <> struct cd_sm80_fwd_tile<128, false, true> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 32, WARPS = 4;
};
template <bool SOFTCAP> struct cd_sm80_fwd_tile<64, true, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 4;
};
template <bool SOFTCAP> struct cd_sm80_fwd_tile<128, true, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 4;
};
/* W = 96 (dispatch.h CUDADENT_SM80_W96; docs/kernels/sm80_fwd.md "W = 96"): the W 128 shapes,
 * which its registers fit better. Large 128 x 64, 4 warps of 32 rows: O 96 + S 64 = 160
 * accumulators a thread (W 128: 192), 72 KiB: two CTAs per SM on sm_80 and sm_90 (W 128: one on
 * sm_80); 128 keys (O 96 + S 128 = 224) would leave too few registers for the fragments.
 * Softcap, large: 32 keys as W 128 (O 96 + S 32 = 128): with 64 keys ptxas spilled 16 / 16 bytes
 * (sm_90, CUDA 13.0), where W 128's softcap row spills none. Small 64 x 64 (O 48 + S 32), 60 KiB.
 * FA2's d96 forward: 128 x 64, 4 warps. */
template <> struct cd_sm80_fwd_tile<96, false> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 64, WARPS = 4;
};
template <> struct cd_sm80_fwd_tile<96, false, true> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 32, WARPS = 4;
};
template <bool SOFTCAP> struct cd_sm80_fwd_tile<96, true, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 4;
};
#if CUDADENT_SM80_FWD_WIDE8
/* W = 192, 256 with dispatch.h CUDADENT_SM80_FWD_WIDE8 (docs/kernels/sm80_fwd.md "W 192 / 256 with
 * 8 warps"): large 128 x 64, 8 warps of 16 rows (FA2's d256 forward tile on sm_80 / sm_90), so a
 * K / V tile in shared memory feeds 128 query rows, not 64, and a key tile holds 64 keys, not 32
 * (half the barriers and O rescales a key). O 96 / 128 + S 32 accumulators a thread, 255
 * registers with __launch_bounds__(256, 1); 144 KiB (W 192: fits sm_80 and sm_90) / 192 KiB
 * (W 256: sm_90 only), one CTA per SM: cd_sm80_fwd_launch takes it only where the device's
 * opt-in shared memory holds it (cd_sm80_fwd_large_fits), else the small tile, gate 0's 64 x 32,
 * which also stays the small-grid tile. Softcap alike (no spill). */
#if CUDADENT_SM80_FWD_SINGLE_BUF
/* With dispatch.h CUDADENT_SM80_FWD_SINGLE_BUF (docs/kernels/sm80_fwd.md section 11): FA2's H200
 * tile instead, 64 x 64, 4 warps of 16 rows, K and V single buffered (fwd_single.cuh;
 * cd_sm80_fwd_single below): O 96 / 128 + S 32 accumulators a thread, 255 registers with
 * __launch_bounds__(128, 2); 72 KiB (W 192) / 96 KiB (W 256), taken where the device holds two
 * CTAs (cd_sm80_fwd_large_fits: sm_90 both, sm_80 W 192). Softcap alike. */
template <bool SOFTCAP> struct cd_sm80_fwd_tile<192, false, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 4;
};
template <bool SOFTCAP> struct cd_sm80_fwd_tile<256, false, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 64, WARPS = 4;
};
#else
template <bool SOFTCAP> struct cd_sm80_fwd_tile<192, false, SOFTCAP> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 64, WARPS = 8;
};
template <bool SOFTCAP> struct cd_sm80_fwd_tile<256, false, SOFTCAP> {
  static constexpr int BLOCK_M = 128, BLOCK_N = 64, WARPS = 8;
};
#endif
template <bool SOFTCAP> struct cd_sm80_fwd_tile<192, true, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 32, WARPS = 4;
};
template <bool SOFTCAP> struct cd_sm80_fwd_tile<256, true, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 32, WARPS = 4;
};
#else
template <bool SMALL, bool SOFTCAP> struct cd_sm80_fwd_tile<192, SMALL, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 32, WARPS = 4;
};
template <bool SMALL, bool SOFTCAP> struct cd_sm80_fwd_tile<256, SMALL, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 32, WARPS = 4;
};
#endif

/* 1 where width W's tile (SMALL: its small tile) is dispatch.h CUDADENT_SM80_FWD_SINGLE_BUF's
 * single-buffered one (fwd_single.cuh): W 192 / 256 large tiles with that gate and WIDE8. */
template <int W, bool SMALL> struct cd_sm80_fwd_single {
  static constexpr bool VALUE =
      CUDADENT_SM80_FWD_WIDE8 && CUDADENT_SM80_FWD_SINGLE_BUF && W > 128 && !SMALL;
};

/* 1 where width W's large tile may need more shared memory than a device the width runs on
 * offers (CUDADENT_SM80_FWD_WIDE8's W 192 / 256 rows): the launcher then checks the device
 * (cd_sm80_fwd_large_fits) and falls back to the small tile, which alone must fit. */
template <int W> struct cd_sm80_fwd_large_optional {
  static constexpr bool VALUE = CUDADENT_SM80_FWD_WIDE8 && W > 128;
};

/* Shared memory the width's kernels need: the largest of its tiles (the softcap tiles are
 * never larger than the others); where the large tile is optional (cd_sm80_fwd_large_optional),
 * the small tile's. */
template <int W> constexpr int cd_sm80_fwd_smem_need() {
  typedef cd_sm80_fwd_tile<W, false> L;
  typedef cd_sm80_fwd_tile<W, true> S;
  static_assert(cd_sm80_fwd_tile<W, false, true>::BLOCK_N <= L::BLOCK_N &&
                    cd_sm80_fwd_tile<W, false, true>::BLOCK_M <= L::BLOCK_M &&
                    cd_sm80_fwd_tile<W, true, true>::BLOCK_N <= S::BLOCK_N &&
                    cd_sm80_fwd_tile<W, true, true>::BLOCK_M <= S::BLOCK_M,
                "softcap tiles within the others");
  return !cd_sm80_fwd_large_optional<W>::VALUE &&
                 cd_sm80_fwd_smem_bytes<W, L::BLOCK_M, L::BLOCK_N>() >
                     cd_sm80_fwd_smem_bytes<W, S::BLOCK_M, S::BLOCK_N>()
             ? cd_sm80_fwd_smem_bytes<W, L::BLOCK_M, L::BLOCK_N>()
             : cd_sm80_fwd_smem_bytes<W, S::BLOCK_M, S::BLOCK_N>();
}
static_assert(cd_sm80_fwd_smem_need<256>() <= 99 * 1024 &&
                  cd_sm80_fwd_smem_need<192>() <= 99 * 1024 &&
                  cd_sm80_fwd_smem_need<96>() <= 99 * 1024,
              "the W 96 / 192 / 256 tiles fit sm_86 / sm_89 (docs/kernels/sm80_fwd.md)");

/* The width of a call: the smallest compiled width that holds both head dims (head_dim_v 0:
 * = head_dim); 96 is compiled where CUDADENT_SM80_W96 is 1. */
static int cd_sm80_fwd_width(const cudadent_attn_fwd_params_t *p) {
  const int d = p->head_dim > p->head_dim_v ? p->head_dim : p->head_dim_v;
#if CUDADENT_SM80_W96
  if (d > 64 && d <= 96) return 96;
#endif
  return d <= 64 ? 64 : d <= 128 ? 128 : d <= 192 ? 192 : 256;
}

#if CUDADENT_SM80_FWD_WIDE8
/* 1 if the current device's opt-in shared memory per block holds width W's large tile (always
 * where the width's supports() check covers it: cd_sm80_fwd_smem_need); 0 if not, or if the
 * device cannot be asked (the small tile's launch then reports the error). The single-buffered
 * tile (cd_sm80_fwd_single) needs room for CD_SM80_FWD_SINGLE_MIN_CTAS of it, the configuration
 * it is built for: an SM holds the opt-in maximum per block plus 1 KiB (sm_80 163 + 1, sm_90 227
 * + 1), and each CTA reserves 1 KiB, so two tiles in the opt-in maximum per block is a little
 * stricter than two CTAs an SM (96 KiB at W 256: sm_90 yes, sm_80 no; 72 KiB at W 192: both;
 * sm_86 / sm_89: neither). */
template <int W, bool SOFTCAP> static int cd_sm80_fwd_large_fits() {
  typedef cd_sm80_fwd_tile<W, false, SOFTCAP> L;
  constexpr bool SINGLE = cd_sm80_fwd_single<W, false>::VALUE;
  constexpr int NEED = cd_sm80_fwd_smem_bytes<W, L::BLOCK_M, L::BLOCK_N, SINGLE>() *
                       (SINGLE ? CD_SM80_FWD_SINGLE_MIN_CTAS : 1);
  if constexpr (NEED <= cd_sm80_fwd_smem_need<W>()) {
    return 1;
  } else {
    int optin = 0;
    if (cudadent_current_smem_optin(&optin) != cudaSuccess) return 0;
    return optin >= NEED; /* cached per device (device_info.c) */
  }
}
#endif

template <typename T, int W, bool PAD, bool SOFTCAP, bool VARLEN>
static cudaError_t cd_sm80_fwd_launch(const cudadent_attn_fwd_params_t *p, int small,
                                      cudaStream_t stream) {
  typedef cd_sm80_fwd_tile<W, false, SOFTCAP> L;
  typedef cd_sm80_fwd_tile<W, true, SOFTCAP> S;
#if CUDADENT_SM80_FWD_WIDE8
  if (!small && !cd_sm80_fwd_large_fits<W, SOFTCAP>()) small = 1; /* sm_86 / sm_89; W 256: sm_80 */
#endif
  return small ? cd_sm80_fwd_run<T, W, S::BLOCK_M, S::BLOCK_N, S::WARPS, PAD, SOFTCAP, VARLEN>(
                     p, stream)
               : cd_sm80_fwd_run<T, W, L::BLOCK_M, L::BLOCK_N, L::WARPS, PAD, SOFTCAP, VARLEN,
                                 cd_sm80_fwd_single<W, false>::VALUE>(p, stream);
}

/* The variant of width W: softcap -> PAD + SOFTCAP; head dims below W (or W > 128, where no
 * exact variant is compiled) -> PAD; else the exact kernel (W 64, 96, 128). */
template <typename T, int W, bool VARLEN>
static cudaError_t cd_sm80_fwd_variant(const cudadent_attn_fwd_params_t *p, int small,
                                       cudaStream_t stream) {
  constexpr bool EXACT = W <= 128; /* an exact (unpadded, no softcap) kernel is compiled */
  if (p->softcap > 0.f) return cd_sm80_fwd_launch<T, W, true, true, VARLEN>(p, small, stream);
  if (!EXACT || p->head_dim != W || (p->head_dim_v != W && p->head_dim_v != 0))
    return cd_sm80_fwd_launch<T, W, true, false, VARLEN>(p, small, stream);
  /* W > 128: the same as above */
  return cd_sm80_fwd_launch<T, W, !EXACT, false, VARLEN>(p, small, stream);
}

/* VARLEN: the varlen kernels (fwd_varlen.cu instantiates them), else the dense ones (fwd.cu) */
template <typename T, bool VARLEN>
static cudaError_t cd_sm80_fwd_width_switch(const cudadent_attn_fwd_params_t *p, int small,
                                            cudaStream_t stream) {
  switch (cd_sm80_fwd_width(p)) {
    case 64: return cd_sm80_fwd_variant<T, 64, VARLEN>(p, small, stream);
#if CUDADENT_SM80_W96
    case 96: return cd_sm80_fwd_variant<T, 96, VARLEN>(p, small, stream);
#endif
    case 128: return cd_sm80_fwd_variant<T, 128, VARLEN>(p, small, stream);
    case 192: return cd_sm80_fwd_variant<T, 192, VARLEN>(p, small, stream);
    default: return cd_sm80_fwd_variant<T, 256, VARLEN>(p, small, stream);
  }
}

/* The varlen launch (fwd_varlen.cu): small as cd_sm80_fwd_dispatch decided it (0 / 1). */
cudaError_t cd_sm80_fwd_varlen_launch(const cudadent_attn_fwd_params_t *p, int small,
                                      cudaStream_t stream);

#endif /* CUDADENT_SM80_FWD_TILES_CUH */
