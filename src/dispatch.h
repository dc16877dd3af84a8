/*
 * dispatch.h - the table of kernels and the contract between api.c and every launcher.
 *
 * api.c validates the params completely and then normalizes them (see cudadent_normalize_*):
 *   - causal != 0 has been folded into window_right = 0; head_dim_v == 0 has become head_dim;
 *   - window_left >= seqlen_k and window_right >= seqlen_q (no effect on any row) become -1;
 *   - batch, seqlen_q, seqlen_k are > 0 (zero-size calls never reach a launcher);
 *   - every pointer is non-NULL (lse may be NULL in the forward only), 16-byte aligned, every
 *     stride in bytes a multiple of 16, stride_dim == 1;
 *   - the workspace is at least what the launcher's *_workspace_size returned, 256-byte aligned;
 *   - the CUDADENT_MAX_* limits of cudadent.h hold (so 64-row tile counts fit int32 with room),
 *     no stride is 0 on a dimension of size > 1 (strides of size-1 dimensions are 0), every
 *     stride is below 2^40 bytes, and o, dq, dk, dv do not overlap themselves.
 *   - the params use only features (CUDADENT_FEATURE_*) the launcher's row implements.
 * Launchers therefore check nothing again. They launch on the given stream, allocate nothing,
 * never synchronize, and return the launch's cudaError_t (cudaGetLastError() after the launch).
 * All global offsets inside kernels are computed in int64.
 */
#ifndef CUDADENT_DISPATCH_H
#define CUDADENT_DISPATCH_H

#include <cuda_runtime_api.h>
#include "cudadent.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the kernels: one family per (architecture, direction), each a row of dispatch.c's table.
 * supports(p): the family runs these (normalized) params at all (dtype, head_dim, and for some a
 * device property); preferred(p): the default dispatch takes it (a heuristic; not asked where a
 * path is forced); workspace(p): bytes; launch: on the stream, returning the launch's error. */

/* portable tensor-core path (src/kernels/sm80), sm_80 and newer */
int cudadent_sm80_fwd_supports(const cudadent_attn_fwd_params_t *p);
size_t cudadent_sm80_fwd_workspace_size(const cudadent_attn_fwd_params_t *p);
cudaError_t cudadent_sm80_fwd(const cudadent_attn_fwd_params_t *p, void *workspace,
                              cudaStream_t stream);

int cudadent_sm80_bwd_supports(const cudadent_attn_bwd_params_t *p);
size_t cudadent_sm80_bwd_workspace_size(const cudadent_attn_bwd_params_t *p);
cudaError_t cudadent_sm80_bwd(const cudadent_attn_bwd_params_t *p, void *workspace,
                              cudaStream_t stream);

/* Hopper path (src/kernels/sm90), sm_90a only */
int cudadent_sm90_fwd_supports(const cudadent_attn_fwd_params_t *p);
int cudadent_sm90_fwd_preferred(const cudadent_attn_fwd_params_t *p); /* enough work */
size_t cudadent_sm90_fwd_workspace_size(const cudadent_attn_fwd_params_t *p);
cudaError_t cudadent_sm90_fwd(const cudadent_attn_fwd_params_t *p, void *workspace,
                              cudaStream_t stream);

int cudadent_sm90_bwd_supports(const cudadent_attn_bwd_params_t *p);
int cudadent_sm90_bwd_preferred(const cudadent_attn_bwd_params_t *p); /* not det + masked */
size_t cudadent_sm90_bwd_workspace_size(const cudadent_attn_bwd_params_t *p);
cudaError_t cudadent_sm90_bwd(const cudadent_attn_bwd_params_t *p, void *workspace,
                              cudaStream_t stream);

/* ---- features: what a call may ask beyond a dense call with head_dim_v == head_dim (cudadent.h,
 * "features of layout v2"); a row lists the ones its kernels implement, dispatch gives a call only
 * to a row that implements every feature it uses (the kernels' supports() never see the rest). */
enum {
  CUDADENT_FEATURE_HEAD_DIM_V = 1u << 0,    /* head_dim_v != head_dim */
  CUDADENT_FEATURE_SOFTCAP = 1u << 1,       /* softcap > 0 */
  CUDADENT_FEATURE_VARLEN = 1u << 2,        /* cu_seqlens_q / cu_seqlens_k */
  CUDADENT_FEATURE_SEQUSED_K = 1u << 3,     /* seqused_k */
  CUDADENT_FEATURE_SEQLENS_CHECK = 1u << 4  /* seqlens_report: the device-side check */
};
#define CUDADENT_FEATURE_COUNT 5
/* The name of feature bit i (0 <= i < CUDADENT_FEATURE_COUNT): "softcap", ... */
const char *cudadent_feature_name(int i);
/* The features these (normalized: head_dim_v != 0) params use. */
unsigned cudadent_fwd_features(const cudadent_attn_fwd_params_t *p);
unsigned cudadent_bwd_features(const cudadent_attn_bwd_params_t *p);

/* dtype bits of a row (1u << cudadent_dtype_t) */
#define CUDADENT_DTYPES_16BIT ((1u << CUDADENT_DTYPE_FP16) | (1u << CUDADENT_DTYPE_BF16))

/* 1: the portable forward's row lists varlen (with seqused_k and the device check). Its GPU
 * tests (tests/test_gpu_varlen.c) passed on an H100 in session 18 (both dispatches, memcheck
 * clean); 0 would refuse such calls as not implemented yet. The host tests read it too. */
#define CUDADENT_SM80_FWD_VARLEN 1

/* 1: the portable forward and backward are compiled for a width 96 too (issue 27,
 * docs/kernels/sm80_fwd.md and sm80_bwd.md "W = 96"), and a call with max(head_dim, head_dim_v) in
 * (64, 96] runs it instead of the width 128 (a quarter of whose products are on zero columns):
 * dense and varlen, with and without softcap; 24 forward and 28 backward kernels more a GPU
 * architecture (ptxas: no spill; no W 64 / 128 / 192 / 256 kernel changes). Built in session 27;
 * run on an H200 in session 29 (forced onto sm80: gpu_dims_fwd 40/40, gpu_dims_bwd 41/41, memcheck
 * clean; d96 h21 bf16 over the width 128: forward +24 / +24 / +26%, backward +20 / +18 / +21% at
 * b8 2k, causal b8 2k, causal b2 8k). On since session 30: the package bench's 5.36 difference
 * from SDPA's flash backend (d96 causal b8 s2048, session 29) was the bench's input race, not this
 * kernel (dev/sm80_fwd/w96_repro.sh at 66ca667, on an H200: FA2's reference wrong only with the
 * race forced; cudadent within 1.01e-2 of fp32 on every run, bit-identical across runs,
 * racecheck clean).
 * 0 compiles none of them and rounds such calls up to 128. */
#ifndef CUDADENT_SM80_W96
#define CUDADENT_SM80_W96 1
#endif

/* 1: the portable forward's widths 192 and 256 get a large tile (issue 27; docs/kernels/sm80_fwd.md
 * "W 192 / 256 with 8 warps"): 128 query rows x 64 keys, 8 warps of 16 rows, one CTA per SM (FA2's
 * d256 forward tile on sm_80 / sm_90), so each K / V tile feeds 128 rows instead of 64. Taken where
 * the small-tile rule picks large tiles and the device's opt-in shared memory holds it (W 192:
 * 144 KiB, sm_80 and sm_90; W 256: 192 KiB, sm_90 only); elsewhere, and for small grids, the
 * 64 x 32 tile of gate 0. Dense and varlen, with and without softcap: 16 forward kernels more a
 * GPU architecture (ptxas: no spill; the other kernels' SASS unchanged). Built in session 28, on
 * in session 29 after an H200 run (forced onto sm80: 21 check runs ok, large tiles forced or not,
 * gpu_dims_fwd 40/40, gpu_varlen_fwd 21/21, gpu_softcap_hopper_fwd 9/9, memcheck and racecheck
 * clean; bf16 over gate 0: d256 h8 +6% (causal b32 512) to +19% (b32 512), d192/128 h10 +1.4%
 * (causal b32 512) to +15%). 0 compiles none of them and dispatches as before. */
#ifndef CUDADENT_SM80_FWD_WIDE8
#define CUDADENT_SM80_FWD_WIDE8 1
#endif

/* 1 (with CUDADENT_SM80_FWD_WIDE8 at 1): the portable forward's widths 192 and 256 get FA2's own
 * H200 configuration as their large tile instead of the 8-warp one (issue 27;
 * docs/kernels/sm80_fwd.md section 11): 64 query rows x 64 keys, 4 warps of 16 rows, K and V
 * single-buffered (Q + K + V: 72 KiB at W 192, 96 KiB at W 256), FA2's two-barrier pipeline per
 * key tile (fwd_single.cuh), two CTAs per SM. Taken where the small-tile rule picks large tiles
 * and the device's opt-in shared memory per block holds two such CTAs (sm_90 both widths; sm_80
 * W 192 only: 2 x 96 KiB > 164); elsewhere, and for small grids, the 64 x 32 tile of gate 0.
 * Dense and varlen, with and without softcap: it replaces the 8-warp tile's 16 kernels a GPU
 * architecture with 16 others (the other kernels' SASS unchanged). 2: the same, with the grid
 * running the query tiles of one (batch, head) consecutively (fwd_single.cuh; FA2's grid order,
 * an L2 question of its own: sm80_fwd.md section 11.3). Built in session 33, not run on a GPU.
 * 0 dispatches as before. */
#ifndef CUDADENT_SM80_FWD_SINGLE_BUF
#define CUDADENT_SM80_FWD_SINGLE_BUF 0
#endif

/* 1: the portable backward's width 256 gets a large tile (docs/kernels/sm80_bwd.md "W 256 with
 * 64 x 64"): 64 query rows x 64 keys, 8 warps (FA2's d256 backward tile, with the 32 x 64's warp layout:
 * FA2's spilled), against the 32 x 64 of gate 0, which pays ~24% more ldmatrix traffic and
 * twice the barriers a FLOP. 209 KiB of shared memory with the double-buffered Q / dO: taken
 * where the device's opt-in shared memory per block holds it (sm_90: 227 KiB), else the 32 x 64
 * (sm_80: 163 KiB); compiled as trap stubs for the architectures that cannot hold it. Dense and
 * varlen, padded and softcap: 16 kernels more a GPU architecture (main and dQ convert). With it,
 * W 256's dQ accumulator rows are padded to 64 (a multiple of both tiles' BLOCK_M). Read by the
 * .cu files only (bwd.cu, bwd_main.cuh). Built in session 29; on since session 30 after an H200
 * run (forced onto sm80: 12 check shapes, gpu_dims_bwd 41/41, gpu_varlen_bwd 31/31,
 * gpu_softcap_hopper_bwd 16/16, memcheck and racecheck clean; d256 h8 bf16 over gate 0: +10%
 * (causal b32 512) to +15%). 0 compiles none of it and dispatches as before. */
#ifndef CUDADENT_SM80_BWD_W256_M64
#define CUDADENT_SM80_BWD_W256_M64 1
#endif

/* 1: the Hopper forward's row lists varlen (with seqused_k and the device check; issue 28,
 * docs/kernels/sm90_fwd.md section 2.6: src/kernels/sm90/fwd_varlen*), so varlen forwards with
 * enough work run there on H100 / H200 and a forced CUDADENT_KERNEL_FWD=sm90 takes them. Its GPU
 * tests passed on an H100 in session 19 (tests/test_gpu_varlen.c forced onto sm90 and under the
 * default dispatch; compute-sanitizer memcheck, racecheck and synccheck clean on the sequence-end
 * cases and ragged CLI shapes); 0 would send varlen forwards to the portable kernel again. */
#define CUDADENT_SM90_FWD_VARLEN 1

/* 1: the Hopper forward's row lists softcap (issue 27, docs/kernels/sm90_fwd.md "Softcap": the
 * softcap kernels of its d128 and d256 rows, varlen ones of the d128 row (since session 21);
 * its supports() leaves those with both head dims up to 64, and varlen ones with a head dim over
 * 128, to the portable kernel), so Gemma 2's forwards run there on H100 /
 * H200; the backward stays portable for softcap. Its GPU tests passed on an H200 in session 20
 * (tests/test_gpu_softcap.c gpu_softcap_hopper_fwd forced onto sm90 8 passed + 1 skipped (the d64
 * case the row leaves to sm80), 9/9 under the default dispatch; gpu_dims_fwd forced onto sm90 39
 * passed + 1 skipped; compute-sanitizer memcheck clean on gpu_softcap_hopper_fwd/05), and it ran
 * 1.47x (d128) / 2.44x (d256) the portable softcap forward (b4 sq4096 h16 bf16, non-causal);
 * 0 sends softcap forwards to the portable kernel again (the kernels are then compiled but never
 * launched). The GPU tests read it too. */
#ifndef CUDADENT_SM90_FWD_SOFTCAP
#define CUDADENT_SM90_FWD_SOFTCAP 1
#endif

/* 1: the portable backward's row lists varlen (with seqused_k and the device check; issue 28,
 * docs/kernels/sm80_bwd.md "Varlen"). Its GPU tests (tests/test_gpu_varlen_bwd.c) passed on an
 * H100 in session 18 (both dispatches, memcheck and racecheck clean); 0 would refuse varlen
 * backwards as not implemented yet. The host and GPU tests read it. */
#define CUDADENT_SM80_BWD_VARLEN 1

/* 1: the Hopper backward's row lists varlen (with seqused_k and the device check; issue 28,
 * docs/kernels/sm90_bwd_varlen.md: src/kernels/sm90/bwd_varlen*), so varlen backwards with head
 * dims up to 128, not deterministic, run there on H100 / H200 and a forced CUDADENT_KERNEL_BWD=sm90
 * takes them (the others go on to the portable backward, the next row). Its GPU tests passed on an
 * H200 in session 20 (tests/test_gpu_varlen_bwd.c forced onto sm90 22 passed + 3 skipped (d256,
 * softcap, deterministic: the portable kernel's), 25/25 under the default dispatch;
 * compute-sanitizer memcheck clean on 4 cases, synccheck on one, racecheck only the dense
 * kernel's known LSE2 / delta bulk-copy report, section 6); on the packed 18-document batch its
 * backward ran 404 TFLOP/s against the portable kernel's 247 (CLI, same process), and `--suite
 * varlen` forward + backward 481 TFLOP/s, 1.64x FlexAttention's document mask (H200);
 * 0 sends varlen backwards to the portable kernel again. The GPU tests read it too. */
#ifndef CUDADENT_SM90_BWD_VARLEN
#define CUDADENT_SM90_BWD_VARLEN 1
#endif

/* 1: the Hopper backward's row lists head dims up to 256 (its wide rows 192 / 128 and 256 / 256,
 * src/kernels/sm90/bwd_wide_kernel.cuh, and every multiple of 8 in (128, 256] rounded up to them;
 * issue 27). Its GPU tests (tests/test_gpu_dims.c gpu_dims_hopper_bwd, 34 cases) passed on an H100
 * in session 19, memcheck and synccheck clean; 0 sends such calls to the portable backward (the
 * kernels are then compiled but never launched). The GPU tests read it too; a build may override
 * it with -DCUDADENT_SM90_BWD_WIDE=0 in both CMAKE_C_FLAGS and CMAKE_CUDA_FLAGS. */
#ifndef CUDADENT_SM90_BWD_WIDE
#define CUDADENT_SM90_BWD_WIDE 1
#endif

/* 1: the Hopper backward's row lists softcap (issue 27, docs/kernels/sm90_bwd_softcap.md: the
 * softcap kernels of its 128 / 128 row, dense and varlen (varlen since session 21); its
 * supports() leaves deterministic softcap calls to the portable backward; the 64 / 64 row's and the
 * wide rows' softcap calls have their own gates below), so that a Gemma 2 training step at d128 runs
 * both directions on the Hopper path. On since session 21: tests/test_gpu_softcap.c
 * gpu_softcap_hopper_bwd passed forced onto sm90 (7 + 3 skipped) and under the default dispatch
 * (10/10) on an H100, compute-sanitizer memcheck and synccheck clean (racecheck: the dense
 * kernel's known LSE2 / delta report only). At 0 softcap backwards run the portable kernel. The
 * GPU tests read it too; a build may override it with -DCUDADENT_SM90_BWD_SOFTCAP=0 in both
 * CMAKE_C_FLAGS and CMAKE_CUDA_FLAGS. */
#ifndef CUDADENT_SM90_BWD_SOFTCAP
#define CUDADENT_SM90_BWD_SOFTCAP 1
#endif

/* 1: the Hopper backward's wide rows take softcap too (docs/kernels/sm90_bwd_softcap.md, "Wide
 * rows": cd_sm90_bwd_wide_softcap_kernel of bwd_wide_kernel.cuh, rows 256 / 256 and 192 / 128,
 * dense, not deterministic; needs CUDADENT_SM90_BWD_WIDE), so that a Gemma 2 training step at
 * head_dim 256 runs its backward on the Hopper path. On since session 22 (H200,
 * dev/sm90_bwd/gpu_run.sh bwdwidesoftcap on a library built with it): gpu_softcap_hopper_bwd
 * forced onto sm90 14 passed + 2 skipped, 16/16 default, gpu_dims_bwd forced 40 + 1 skipped;
 * memcheck clean on cases 10 (d256) and 13 (192 / 128), synccheck on 10; d256 4k 376 TFLOP/s,
 * 1.78x the portable softcap backward, 0.99x the row without softcap. 0: bwd.cu's supports()
 * leaves softcap calls with a head dim over 128 to the portable backward. The GPU tests read it
 * too; a build may override it with -DCUDADENT_SM90_BWD_WIDE_SOFTCAP=0 in both CMAKE_C_FLAGS and
 * CMAKE_CUDA_FLAGS. */
#ifndef CUDADENT_SM90_BWD_WIDE_SOFTCAP
#define CUDADENT_SM90_BWD_WIDE_SOFTCAP 1
#endif

/* 1 (with CUDADENT_SM90_BWD_SOFTCAP 1): the Hopper backward's supports() also takes the softcap
 * calls of its 64 / 64 row (both head dims up to 64), dense and not deterministic, on that row's
 * softcap kernel (docs/kernels/sm90_bwd_softcap.md: 168 registers, no spill since its dS^T
 * addresses were rewritten). On since session 22 (H200, dev/sm90_bwd/gpu_run.sh bwdsoftcap on a
 * library built with it): the d64 cases of gpu_softcap_hopper_bwd (08, 09) and gpu_dims_bwd (07)
 * pass forced onto sm90 and default, memcheck and synccheck clean on case 08; d64 4k 414 TFLOP/s,
 * 1.64x the portable softcap backward, 0.88x the row without softcap. 0: such calls run the
 * portable backward. The GPU tests read it too; a build may override it with
 * -DCUDADENT_SM90_BWD_D64_SOFTCAP=0 in both CMAKE_C_FLAGS and CMAKE_CUDA_FLAGS. */
#ifndef CUDADENT_SM90_BWD_D64_SOFTCAP
#define CUDADENT_SM90_BWD_D64_SOFTCAP 1
#endif

/* 1 (with CUDADENT_SM90_BWD_SOFTCAP): the Hopper backward's supports() also takes the
 * deterministic softcap calls of its 128 / 128 row (dense, a head dim over 64, both up to 128), on
 * that row's softcap kernel in the deterministic modes (bwd.cu cd_sm90_bwd_softcap_det: the dQ
 * warp's turns, as without softcap; 4 kernels more; not the 64 / 64 row, whose descending-turn
 * softcap kernel spills 44 B). On since session 26 (H200, dev/sm90_bwd/gpu_run.sh bwdsoftcap and
 * sanitizevar on a library built with it): gpu_softcap_hopper_bwd/07 and gpu_dims_bwd_deterministic
 * pass forced onto sm90, memcheck and synccheck clean on three deterministic softcap shapes; d128
 * 4k 490-499 TFLOP/s (causal 465-467), 1.80x (1.82x) the portable deterministic softcap backward,
 * 0.93-0.95x (0.87-0.88x) the non-deterministic softcap kernel. 0: such calls run the portable
 * backward. The GPU tests read it too; a build may override it with
 * -DCUDADENT_SM90_BWD_DET_SOFTCAP=0 in both CMAKE_C_FLAGS and CMAKE_CUDA_FLAGS. */
#ifndef CUDADENT_SM90_BWD_DET_SOFTCAP
#define CUDADENT_SM90_BWD_DET_SOFTCAP 1
#endif

/* 1 (with CUDADENT_SM90_BWD_D64_SOFTCAP and CUDADENT_SM90_BWD_VARLEN): the Hopper backward's
 * supports() also takes the varlen softcap calls of its 64 / 64 row (both head dims up to 64, not
 * deterministic) on that row's varlen softcap kernel (bwd_varlen.cu; 2 kernels more). Its spill,
 * the reason it was left out in session 21, went with session 22's dS^T address rewrite: 168
 * registers, no spill (CUDA 13.0). On since session 26 (H200, dev/sm90_bwd/gpu_run.sh bwdvarlen on
 * a library built with it): tests/test_gpu_varlen_bwd.c's case 26 passes forced onto sm90 and
 * default, memcheck and synccheck clean on it; a packed causal batch of 18 documents (16k tokens,
 * 32 heads) with softcap 30: 299 TFLOP/s, 1.55x the portable backward, 0.88x without softcap.
 * 0: such calls run the portable backward. The GPU tests read it too; a build may override it
 * with -DCUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP=0 in both CMAKE_C_FLAGS and CMAKE_CUDA_FLAGS. */
#ifndef CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP
#define CUDADENT_SM90_BWD_VARLEN_D64_SOFTCAP 1
#endif

/* 1 (with CUDADENT_SM90_BWD_VARLEN and CUDADENT_SM90_BWD_WIDE): the Hopper backward's supports()
 * also takes the varlen calls of its wide rows (192 / 128 and 256 / 256: a head dim over 128, not
 * deterministic; softcap ones too where CUDADENT_SM90_BWD_WIDE_SOFTCAP is 1), on the wide main
 * kernel's varlen form (bwd_wide_kernel.cuh kVarlen: the narrow rows' unit list, padded layout,
 * pre and post; bwd_varlen.cu; 8 kernels, 168 registers, no spill). On since session 26 (H200, a
 * library built with it): tests/test_gpu_varlen_bwd.c's wide cases (05, 06, 27-30) pass forced
 * onto sm90, memcheck clean on 06, 27, 30, synccheck on 28; a packed causal batch of 18 documents
 * (16k tokens): 192 / 128 (16 heads) 297 TFLOP/s, 1.75x the portable backward; d256 (8 heads)
 * 313, 1.70x; d256 softcap 30 312, 1.72x. 0: such calls run the portable backward. The GPU tests
 * read it too; a build may override it with -DCUDADENT_SM90_BWD_VARLEN_WIDE=0 in both
 * CMAKE_C_FLAGS and CMAKE_CUDA_FLAGS. */
#ifndef CUDADENT_SM90_BWD_VARLEN_WIDE
#define CUDADENT_SM90_BWD_VARLEN_WIDE 1
#endif

/* ---- the table ---- */
/* A row: name (what CUDADENT_KERNEL* names), the compute capabilities it runs on
 * (min_cc <= cc, and cc <= max_cc where max_cc > 0), the head dims its kernels are compiled for
 * (0-terminated, ascending), its dtypes (bits), the features it implements (bits), and the
 * family's functions; preferred == NULL: whenever supports(). A row takes params when it lists
 * their head_dim and dtype, implements their features, and its supports() says yes (which may ask
 * the device, e.g. for shared memory). */
typedef struct cudadent_fwd_kernel {
  const char *name;
  int min_cc, max_cc;
  const int *head_dims;
  unsigned dtypes, features;
  int (*supports)(const cudadent_attn_fwd_params_t *p);
  int (*preferred)(const cudadent_attn_fwd_params_t *p);
  size_t (*workspace)(const cudadent_attn_fwd_params_t *p);
  cudaError_t (*launch)(const cudadent_attn_fwd_params_t *p, void *workspace, cudaStream_t stream);
} cudadent_fwd_kernel_t;

typedef struct cudadent_bwd_kernel {
  const char *name;
  int min_cc, max_cc;
  const int *head_dims;
  unsigned dtypes, features;
  int (*supports)(const cudadent_attn_bwd_params_t *p);
  int (*preferred)(const cudadent_attn_bwd_params_t *p);
  size_t (*workspace)(const cudadent_attn_bwd_params_t *p);
  cudaError_t (*launch)(const cudadent_attn_bwd_params_t *p, void *workspace, cudaStream_t stream);
} cudadent_bwd_kernel_t;

/* The kernel for these (normalized) params on a device of compute capability cc (e.g. 90), or a
 * failure status with its message (errors.h): UNSUPPORTED_ARCH when no row fits, or when the
 * environment forces a path (CUDADENT_KERNEL_FWD / CUDADENT_KERNEL_BWD, or CUDADENT_KERNEL for
 * both; read once per process) that is not built, cannot run on this device or does not take
 * these params. A forced path never falls back to another. */
cudadent_status_t cudadent_pick_fwd(const cudadent_attn_fwd_params_t *p, int cc,
                                    const cudadent_fwd_kernel_t **kernel);
cudadent_status_t cudadent_pick_bwd(const cudadent_attn_bwd_params_t *p, int cc,
                                    const cudadent_bwd_kernel_t **kernel);

/* Whether any kernel built into the library takes these params (no device needed): api.c uses it
 * to tell an unsupported head_dim or feature from a missing architecture. */
int cudadent_any_fwd_supports(const cudadent_attn_fwd_params_t *p);
int cudadent_any_bwd_supports(const cudadent_attn_bwd_params_t *p);

/* The same with the features left aside: is there a kernel for this head_dim and dtype at all
 * (api.c's first question, answered with UNSUPPORTED_HEAD_DIM). */
int cudadent_any_fwd_takes_head_dim(const cudadent_attn_fwd_params_t *p);
int cudadent_any_bwd_takes_head_dim(const cudadent_attn_bwd_params_t *p);

/* The union of the features of the rows that take these params' head_dim and dtype (features
 * aside): api.c names the first feature a call uses that is not in it. */
unsigned cudadent_fwd_features_built(const cudadent_attn_fwd_params_t *p);
unsigned cudadent_bwd_features_built(const cudadent_attn_bwd_params_t *p);

/* The head dims of the rows that run on compute capability cc (cc <= 0: every row) and take
 * dtype, ascending, each once. probe != NULL: only those whose row's supports() takes *probe with
 * that head_dim (and features aside), so that device properties count. Writes
 * min(count, capacity) of them to dims; returns the count. */
int cudadent_fwd_head_dims(int cc, cudadent_dtype_t dtype, const cudadent_attn_fwd_params_t *probe,
                           int *dims, int capacity);
int cudadent_bwd_head_dims(int cc, cudadent_dtype_t dtype, const cudadent_attn_bwd_params_t *probe,
                           int *dims, int capacity);

/* Workspace bytes: the most any kernel that could take these params needs, so that the size does
 * not depend on which device runs the call. */
size_t cudadent_fwd_workspace_bound(const cudadent_attn_fwd_params_t *p);
size_t cudadent_bwd_workspace_bound(const cudadent_attn_bwd_params_t *p);

/* ---- fills for zero-length sequences (src/kernels/fill.cu) ---- */
/* Writes 0 to every element of the [batch, seqlen, heads, head_dim] tensor t (16-bit dtype). */
cudaError_t cudadent_fill_zero(cudadent_tensor_t t, int batch, int seqlen, int heads,
                               int head_dim, cudaStream_t stream);
/* Writes value to count contiguous floats. */
cudaError_t cudadent_fill_float(float *data, int64_t count, float value, cudaStream_t stream);

/* ---- varlen, architecture-neutral (src/kernels/varlen.cu) ---- */
/* The opt-in device check of the arrays (cudadent.h): writes *report (device memory). */
cudaError_t cudadent_varlen_check(const int32_t *cu_seqlens_q, const int32_t *cu_seqlens_k,
                                  const int32_t *seqused_k, int batch, int total_q, int total_k,
                                  int max_seqlen_q, int max_seqlen_k,
                                  cudadent_seqlens_report_t *report, cudaStream_t stream);
/* O = 0 and LSE = -inf (lse may be NULL) for the tokens of q in no sequence's clamped range (and
 * some that are in one, which the forward kernel launched after it overwrites). Normalized
 * params (head_dim_v set). */
cudaError_t cudadent_varlen_fill_gaps(const cudadent_attn_fwd_params_t *p, cudaStream_t stream);
/* The backward's: dQ = 0 for the tokens of q in no sequence's clamped range, dK = dV = 0 for the
 * tokens of k in no sequence's used keys (and some that are in one, which the backward's kernels
 * launched after it overwrite). Normalized params. */
cudaError_t cudadent_varlen_bwd_fill_gaps(const cudadent_attn_bwd_params_t *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* CUDADENT_DISPATCH_H */
