/*
 * fwd_launch.cuh - the portable forward's launch of one compiled configuration
 * (cd_sm80_fwd_run: the kernel's argument struct from the normalized params, the shared-memory
 * limit, the grid); fwd_tiles.cuh picks the configuration. The kernels: fwd_kernel.cuh.
 */
#ifndef CUDADENT_SM80_FWD_LAUNCH_CUH
#define CUDADENT_SM80_FWD_LAUNCH_CUH

#include "kernels/sm80/fwd_kernel.cuh"
#include "kernels/sm80/fwd_single.cuh"

/* Launch one configuration on the (normalized) params: fills the argument struct, raises the
 * dynamic shared-memory limit once per device, launches, returns cudaGetLastError(). SINGLE:
 * fwd_single.cuh's kernels (K and V single buffered), else fwd_kernel.cuh's. */
template <typename T, int D, int BLOCK_M, int BLOCK_N, int WARPS, bool PAD, bool SOFTCAP,
          bool VARLEN, bool SINGLE = false>
static cudaError_t cd_sm80_fwd_run(const cudadent_attn_fwd_params_t *p, cudaStream_t stream) {
  constexpr int SMEM = cd_sm80_fwd_smem_bytes<D, BLOCK_M, BLOCK_N, SINGLE>();
  /* only the kernel of the call's kind is instantiated */
  const void *kernel;
  if constexpr (VARLEN && SINGLE)
    kernel = (const void *)cd_sm80_fwd_single_varlen_kernel<T, D, BLOCK_M, BLOCK_N, WARPS, PAD,
                                                            SOFTCAP>;
  else if constexpr (SINGLE)
    kernel = (const void *)cd_sm80_fwd_single_kernel<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP>;
  else if constexpr (VARLEN)
    kernel = (const void *)cd_sm80_fwd_varlen_kernel<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP>;
  else
    kernel = (const void *)cd_sm80_fwd_kernel<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP>;

  /* one-time, per device: allow more than 48 KiB of dynamic shared memory (idempotent, so a
   * race between threads only repeats it) */
  static cudadent_device_once_t attr_done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               SMEM);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }

  cd_sm80_fwd_args_t a;
  a.q = p->q.data;
  a.k = p->k.data;
  a.v = p->v.data;
  a.o = p->o.data;
  a.lse = p->lse;
  a.q_sb = p->q.stride_batch; a.q_ss = p->q.stride_seq; a.q_sh = p->q.stride_head;
  a.k_sb = p->k.stride_batch; a.k_ss = p->k.stride_seq; a.k_sh = p->k.stride_head;
  a.v_sb = p->v.stride_batch; a.v_ss = p->v.stride_seq; a.v_sh = p->v.stride_head;
  a.o_sb = p->o.stride_batch; a.o_ss = p->o.stride_seq; a.o_sh = p->o.stride_head;
  a.batch = p->batch;
  a.heads_q = p->heads_q;
  a.group = p->heads_q / p->heads_kv;
  a.m_blocks = (p->seqlen_q + BLOCK_M - 1) / BLOCK_M;
  a.mask.seqlen_q = p->seqlen_q;
  a.mask.seqlen_k = p->seqlen_k;
  a.mask.window_left = p->window_left;
  a.mask.window_right = p->window_right;
  a.qk_chunks = p->head_dim / 8;
  /* head_dim_v is never 0 after api.c; dev drivers that call the launcher directly may leave it 0 */
  a.v_chunks = (p->head_dim_v != 0 ? p->head_dim_v : p->head_dim) / 8;
  if (SOFTCAP) { /* scores kept as t = tanh(s / softcap), in units of softcap (kernel header) */
    a.scale = p->softcap;
    a.softcap_pre = p->softmax_scale / p->softcap;
  } else {
    a.scale = p->softmax_scale;
    a.softcap_pre = 0.f;
  }
  a.scale_log2 = a.scale * 1.4426950408889634f;

  const int64_t ctas = (int64_t)p->batch * p->heads_q * a.m_blocks;
  if (ctas > 0x7fffffff) return cudaErrorInvalidConfiguration; /* 1-D grid limit */
  if constexpr (VARLEN) {
    /* batch = sequences, seqlen_q / seqlen_k = max_seqlen_q / max_seqlen_k (the grid's
     * bounds); stride_batch is 0 after api.c (a (1, total, heads, dim) tensor), never read */
    cd_sm80_fwd_varlen_args_t v;
    v.cu_seqlens_q = p->cu_seqlens_q;
    v.cu_seqlens_k = p->cu_seqlens_k;
    v.seqused_k = p->seqused_k;
    v.total_q = p->total_q;
    v.total_k = p->total_k;
    if constexpr (SINGLE)
      cd_sm80_fwd_single_varlen_kernel<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP>
          <<<(unsigned)ctas, WARPS * 32, SMEM, stream>>>(a, v);
    else
      cd_sm80_fwd_varlen_kernel<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP>
          <<<(unsigned)ctas, WARPS * 32, SMEM, stream>>>(a, v);
  } else if constexpr (SINGLE) {
    cd_sm80_fwd_single_kernel<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP>
        <<<(unsigned)ctas, WARPS * 32, SMEM, stream>>>(a);
  } else {
    cd_sm80_fwd_kernel<T, D, BLOCK_M, BLOCK_N, WARPS, PAD, SOFTCAP>
        <<<(unsigned)ctas, WARPS * 32, SMEM, stream>>>(a);
  }
  return cudaGetLastError();
}

#endif /* CUDADENT_SM80_FWD_LAUNCH_CUH */
