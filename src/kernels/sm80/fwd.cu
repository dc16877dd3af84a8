/*
 * fwd.cu - launchers of the portable (mma.sync, sm_80+) attention forward, and its tile table.
 *
 * The kernel is fwd_kernel.cuh (what it computes, warp roles, shared-memory layout, pipeline).
 * This file picks the kernel's width W, the smallest of {64, 128, 192, 256} that holds
 * max(head_dim, head_dim_v) (head dims: multiples of 8 in [8, 256]), its variant and the tile
 * shape from cd_sm80_fwd_tile (the one table), fills the kernel's argument struct from the
 * normalized params (api.c validated them; nothing is checked again here) and launches on the
 * caller's stream. Instantiated, for {fp16, bf16}:
 *     W = 64, 128:   {large, small tiles} x {exact (head_dim = head_dim_v = W, no softcap),
 *                    PAD (any smaller head_dim / head_dim_v), PAD + SOFTCAP}        12 kernels
 *     W = 192, 256:  one tile x {PAD, PAD + SOFTCAP}                                 4 kernels
 * i.e. 32 kernels. A softcap call with head_dim = head_dim_v = W runs the PAD + SOFTCAP kernel
 * (its column predicates are then all true). Masking is decided per key tile at run time, so no
 * mask variants are compiled; the LSE is written where the pointer is not NULL (run time).
 */
#include <cuda_runtime.h>
#include "device_info.h"
#include "dispatch.h"
#include "kernels/dev.h"
#include "kernels/sm80/fwd_kernel.cuh"

/* ---- the tile table: per width W, large tiles and small tiles ------------------------------
 * BLOCK_M query rows and BLOCK_N keys per tile, WARPS warps of BLOCK_M / WARPS rows each.
 * Shared memory (BLOCK_M + 4 * BLOCK_N) * W * 2 bytes; registers per thread: O (ROWS_W * W / 32)
 * + S (ROWS_W * BLOCK_N / 32) fp32, 255 at most with __launch_bounds__(128, 2).
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
 * The small tiles are the same: a 64-row tile is already the small shape. */
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
template <bool SMALL, bool SOFTCAP> struct cd_sm80_fwd_tile<192, SMALL, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 32, WARPS = 4;
};
template <bool SMALL, bool SOFTCAP> struct cd_sm80_fwd_tile<256, SMALL, SOFTCAP> {
  static constexpr int BLOCK_M = 64, BLOCK_N = 32, WARPS = 4;
};

/* Shared memory the width's kernels need: the largest of its tiles (the softcap tiles are
 * never larger than the others). */
template <int W> constexpr int cd_sm80_fwd_smem_need() {
  typedef cd_sm80_fwd_tile<W, false> L;
  typedef cd_sm80_fwd_tile<W, true> S;
  static_assert(cd_sm80_fwd_tile<W, false, true>::BLOCK_N <= L::BLOCK_N &&
                    cd_sm80_fwd_tile<W, false, true>::BLOCK_M <= L::BLOCK_M &&
                    cd_sm80_fwd_tile<W, true, true>::BLOCK_N <= S::BLOCK_N &&
                    cd_sm80_fwd_tile<W, true, true>::BLOCK_M <= S::BLOCK_M,
                "softcap tiles within the others");
  return cd_sm80_fwd_smem_bytes<W, L::BLOCK_M, L::BLOCK_N>() >
                 cd_sm80_fwd_smem_bytes<W, S::BLOCK_M, S::BLOCK_N>()
             ? cd_sm80_fwd_smem_bytes<W, L::BLOCK_M, L::BLOCK_N>()
             : cd_sm80_fwd_smem_bytes<W, S::BLOCK_M, S::BLOCK_N>();
}
static_assert(cd_sm80_fwd_smem_need<256>() <= 99 * 1024 && cd_sm80_fwd_smem_need<192>() <= 99 * 1024,
              "the W 192 / 256 tiles are chosen to fit sm_86 / sm_89 (docs/kernels/sm80_fwd.md)");

/* The width of a call: the smallest compiled width that holds both head dims (head_dim_v 0:
 * = head_dim). */
static int cd_sm80_fwd_width(const cudadent_attn_fwd_params_t *p) {
  const int d = p->head_dim > p->head_dim_v ? p->head_dim : p->head_dim_v;
  return d <= 64 ? 64 : d <= 128 ? 128 : d <= 192 ? 192 : 256;
}

template <typename T, int W, bool PAD, bool SOFTCAP>
static cudaError_t cd_sm80_fwd_launch(const cudadent_attn_fwd_params_t *p, int small,
                                      cudaStream_t stream) {
  typedef cd_sm80_fwd_tile<W, false, SOFTCAP> L;
  typedef cd_sm80_fwd_tile<W, true, SOFTCAP> S;
  return small
             ? cd_sm80_fwd_run<T, W, S::BLOCK_M, S::BLOCK_N, S::WARPS, PAD, SOFTCAP>(p, stream)
             : cd_sm80_fwd_run<T, W, L::BLOCK_M, L::BLOCK_N, L::WARPS, PAD, SOFTCAP>(p, stream);
}

/* The variant of width W: softcap -> PAD + SOFTCAP; head dims below W (or W > 128, where no
 * exact variant is compiled) -> PAD; else the exact kernel. */
template <typename T, int W>
static cudaError_t cd_sm80_fwd_variant(const cudadent_attn_fwd_params_t *p, int small,
                                       cudaStream_t stream) {
  constexpr bool EXACT = W <= 128; /* an exact (unpadded, no softcap) kernel is compiled */
  if (p->softcap > 0.f) return cd_sm80_fwd_launch<T, W, true, true>(p, small, stream);
  if (!EXACT || p->head_dim != W || (p->head_dim_v != W && p->head_dim_v != 0))
    return cd_sm80_fwd_launch<T, W, true, false>(p, small, stream);
  return cd_sm80_fwd_launch<T, W, !EXACT, false>(p, small, stream); /* W > 128: the same as above */
}

template <typename T>
static cudaError_t cd_sm80_fwd_width_switch(const cudadent_attn_fwd_params_t *p, int small,
                                            cudaStream_t stream) {
  switch (cd_sm80_fwd_width(p)) {
    case 64: return cd_sm80_fwd_variant<T, 64>(p, small, stream);
    case 128: return cd_sm80_fwd_variant<T, 128>(p, small, stream);
    case 192: return cd_sm80_fwd_variant<T, 192>(p, small, stream);
    default: return cd_sm80_fwd_variant<T, 256>(p, small, stream);
  }
}

/* small: -1 decide from the grid size, 0 large tiles, 1 small tiles (W 192 / 256: one tile) */
static cudaError_t cd_sm80_fwd_dispatch(const cudadent_attn_fwd_params_t *p, int small,
                                        cudaStream_t stream) {
  if (small < 0) {
    int dev = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err != cudaSuccess) return err;
    if ((err = cudadent_device_sm_count(dev, &sms)) != cudaSuccess) return err; /* cached */
    constexpr int LM = cd_sm80_fwd_tile<64, false>::BLOCK_M;
    static_assert(LM == cd_sm80_fwd_tile<128, false>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<64, false, true>::BLOCK_M &&
                      LM == cd_sm80_fwd_tile<128, false, true>::BLOCK_M,
                  "one large BLOCK_M assumed");
    const int64_t large_ctas = (int64_t)p->batch * p->heads_q * ((p->seqlen_q + LM - 1) / LM);
    const int masked = p->window_left >= 0 || p->window_right >= 0;
    small = masked ? large_ctas < 2 * (int64_t)sms : 2 * large_ctas <= (int64_t)sms;
  }
  return p->dtype == CUDADENT_DTYPE_BF16 ? cd_sm80_fwd_width_switch<__nv_bfloat16>(p, small, stream)
                                         : cd_sm80_fwd_width_switch<__half>(p, small, stream);
}

/* Head dims: multiples of 8 in [8, 256], head_dim_v likewise (dispatch's row lists head_dim;
 * head_dim_v is checked here); and the device's opt-in shared memory per block must hold the
 * width's tiles (every width fits sm_80 / sm_86 / sm_89 / sm_90 today; the check keeps a future
 * tile row honest). */
extern "C" int cudadent_sm80_fwd_supports(const cudadent_attn_fwd_params_t *p) {
  if (p->dtype != CUDADENT_DTYPE_FP16 && p->dtype != CUDADENT_DTYPE_BF16) return 0;
  /* dispatch's head-dim queries ask before api.c's normalization: head_dim_v 0 = head_dim */
  const int d = p->head_dim, dv = p->head_dim_v != 0 ? p->head_dim_v : p->head_dim;
  if (d < 8 || d > 256 || d % 8 != 0 || dv < 8 || dv > 256 || dv % 8 != 0) return 0;
  int need = 0;
  switch (cd_sm80_fwd_width(p)) {
    case 64: need = cd_sm80_fwd_smem_need<64>(); break;
    case 128: need = cd_sm80_fwd_smem_need<128>(); break;
    case 192: need = cd_sm80_fwd_smem_need<192>(); break;
    default: need = cd_sm80_fwd_smem_need<256>(); break;
  }
  int dev = 0, optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudadent_device_smem_optin(dev, &optin) != cudaSuccess) {
    (void)cudaGetLastError(); /* no device: the call fails later, at the device check */
    return 1;
  }
  return optin >= need;
}

extern "C" size_t cudadent_sm80_fwd_workspace_size(const cudadent_attn_fwd_params_t *p) {
  (void)p;
  return 0;
}

extern "C" cudaError_t cudadent_sm80_fwd(const cudadent_attn_fwd_params_t *p, void *workspace,
                                         cudaStream_t stream) {
  (void)workspace;
  return cd_sm80_fwd_dispatch(p, -1, stream);
}

#ifdef CUDADENT_DEV
/* the dev-only entry point (src/kernels/dev.h): the tile size forced */
extern "C" cudaError_t cudadent_dev_sm80_fwd_tiles(const cudadent_attn_fwd_params_t *p, int small,
                                                   cudaStream_t stream) {
  return cd_sm80_fwd_dispatch(p, small < 0 ? -1 : small != 0, stream);
}
#endif
