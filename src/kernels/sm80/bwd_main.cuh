/*
 * bwd_main.cuh - kernel 2 of the sm80 backward (bwd.cu's header says what it computes and how),
 * cd_sm80_bwd_main and its varlen twin cd_sm80_bwd_main_varlen (one body, a template bool
 * VARLEN), and the templates that launch one instantiation's three kernels. Included by bwd.cu
 * (the dense instantiations) and bwd_varlen.cu (the varlen ones), so the two compile side by side.
 */
#ifndef CUDADENT_SM80_BWD_MAIN_CUH
#define CUDADENT_SM80_BWD_MAIN_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "device_info.h"
#include "dispatch.h"
#include "kernels/sm80/bwd_parts.cuh"
#include "kernels/sm80/bwd_prepost.cuh"

/* ---- kernel 2: the main loop ---------------------------------------------------------------------- */

/* The kernel's body (the __global__ kernels below: dense and varlen; LARGE: the width's large
 * tile, cd_sm80_bwd_tile). */
template <typename T, int D, bool PAD, bool SOFTCAP, bool VARLEN, bool LARGE = false>
__device__ __forceinline__ void cd_sm80_bwd_main_body(const cd_sm80_bwd_args_t a,
                                                      const cd_sm80_bwd_varlen_args_t v) {
  typedef cd_sm80_bwd_shape<D, LARGE> Sh;
  typedef typename Sh::Tile Tl;
  constexpr int BM = Sh::BM, BN = Sh::BN, THREADS = Sh::THREADS;
  constexpr int S_MT = Sh::S_TM / 16, S_NT = Sh::S_TN / 8;
  constexpr int KV_MT = Sh::KV_TN / 16, KV_NT = Sh::KV_TD / 8;
  constexpr int Q_MT = Sh::Q_TM / 16, Q_NT = Sh::Q_TD / 8;
  constexpr int KV_IL = Sh::KV_IL, Q_IL = Sh::Q_IL;
  extern __shared__ __align__(128) unsigned char smem[];
  const uint32_t s0 = cd_smem_addr(smem);
  const uint32_t sQ = s0 + Sh::OFF_Q, sdO = s0 + Sh::OFF_DO, sK = s0 + Sh::OFF_K, sV = s0 + Sh::OFF_V;
  const uint32_t sP = s0 + Sh::OFF_P, sdS = s0 + Sh::OFF_DS;

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, t = lane & 3;
  const int hk = blockIdx.y, b = blockIdx.z;
  /* warp coordinates in the three layouts */
  const int s_row0 = (warp % Tl::SDP_WARPS_M) * Sh::S_TM;
  const int s_col0 = (warp / Tl::SDP_WARPS_M) * Sh::S_TN;
  const int kv_row0 = (warp % Tl::DKV_WARPS_N) * Sh::KV_TN;
  const int kv_col0 = cd_sm80_bwd_wcol<Sh::KV_TD, KV_IL>(warp / Tl::DKV_WARPS_N);
  const int q_row0 = (warp % Tl::DQ_WARPS_M) * Sh::Q_TM;
  const int q_col0 = cd_sm80_bwd_wcol<Sh::Q_TD, Q_IL>(warp / Tl::DQ_WARPS_M);

  const cd_sm80_bwd_ldm_t l_s_a = cd_sm80_bwd_ldm_a<D, false>(s_row0, lane), l_s_b = cd_sm80_bwd_ldm_b<D, false>(s_col0, lane);
  const cd_sm80_bwd_ldm_t l_kv_a = cd_sm80_bwd_ldm_a<BN, true>(kv_row0, lane), l_kv_b = cd_sm80_bwd_ldm_b<D, true>(kv_col0, lane);
  const cd_sm80_bwd_ldm_t l_q_a = cd_sm80_bwd_ldm_a<BN, false>(q_row0, lane), l_q_b = cd_sm80_bwd_ldm_b<D, true>(q_col0, lane);

  /* VARLEN: sequence b's ranges (cd_sm80_bwd_varlen_seq); dense: the call's lengths */
  cd_sm80_bwd_seq_t sv = {0, 0, 0, 0, 0};
  int n_blocks_v = 0;
  if (VARLEN) {
    sv = cd_sm80_bwd_varlen_seq<BM>(a, v, b);
    n_blocks_v = (sv.sk + BN - 1) / BN;
  }
  const int sq = VARLEN ? sv.sq : a.sq, sk = VARLEN ? sv.sk : a.sk;
  const int n_blocks = VARLEN ? n_blocks_v : a.n_blocks;

  const long long off = (long long)sk - sq; /* bottom-right alignment */
  const int m_tiles = (sq + BM - 1) / BM;
  float *dq_slice = a.dq_acc + (a.det ? (int64_t)blockIdx.x * a.slice : 0);
  if (VARLEN) dq_slice += sv.acc0 * D; /* the sequence's accumulator rows */

  for (int n = blockIdx.x; n < n_blocks; n += gridDim.x) {
    const int n0 = n * BN;
    const int kvalid = min(BN, sk - n0);
    /* query tiles that see any key of [n0, n0 + kvalid): common/mask_rule.cuh cd_mask_q_blocks,
     * written out with this loop's clamps (the call compiled to different code; issue 22) */
    int m_begin = 0, m_end = m_tiles;
    if (a.wr >= 0) {
      const long long lo = (long long)n0 - off - a.wr; /* first row whose right edge reaches n0 */
      m_begin = lo <= 0 ? 0 : (int)min((long long)m_tiles, lo / BM);
    }
    if (a.wl >= 0) {
      const long long hi = (long long)n0 + kvalid - 1 - off + a.wl; /* last row whose left edge <= last key */
      m_end = hi < 0 ? 0 : (int)min((long long)m_tiles, hi / BM + 1);
    }
    const int m_count = max(0, m_end - m_begin);
    const int iters = m_count * a.group;

    float dk[KV_MT][KV_NT][4], dv[KV_MT][KV_NT][4];
    cd_sm80_bwd_zero(dk);
    cd_sm80_bwd_zero(dv);

    if (iters > 0) {
      const uint16_t *kg = VARLEN ? (const uint16_t *)a.k + ((int64_t)sv.k0 + n0) * a.k_ss + (int64_t)hk * a.k_sh
                                  : (const uint16_t *)a.k + b * a.k_sb + (int64_t)n0 * a.k_ss + hk * a.k_sh;
      const uint16_t *vg = VARLEN ? (const uint16_t *)a.v + ((int64_t)sv.k0 + n0) * a.v_ss + (int64_t)hk * a.v_sh
                                  : (const uint16_t *)a.v + b * a.v_sb + (int64_t)n0 * a.v_ss + hk * a.v_sh;
      cd_sm80_bwd_load_tile<BN, D, THREADS, PAD>(sK, kg, a.k_ss, kvalid, tid, a.dim_qk);
      cd_sm80_bwd_load_tile<BN, D, THREADS, PAD>(sV, vg, a.v_ss, kvalid, tid, a.dim_v);
      cd_sm80_bwd_load_query_tile<D, PAD, VARLEN, LARGE>(a, s0, 0, b, hk * a.group, m_begin, tid, &sv,
                                                  v.total_q); /* with K, V: one group */

      int h = hk * a.group, m = m_begin;
      for (int it = 0; it < iters; ++it) {
        const int buf = it & 1;
        const int m0 = m * BM;
        /* next (head, tile) */
        int h_next = h, m_next = m + 1;
        if (m_next == m_end) { m_next = m_begin; ++h_next; }

        cd_cp_async_wait<0>();
        __syncthreads(); /* this tile's Q/dO landed for all threads; buffers of it-1 are free */
        if (it + 1 < iters)
          cd_sm80_bwd_load_query_tile<D, PAD, VARLEN, LARGE>(a, s0, buf ^ 1, b, h_next, m_next, tid, &sv, v.total_q);
        const uint32_t sQb = sQ + buf * Sh::Q_TILE, sdOb = sdO + buf * Sh::Q_TILE;

        /* S = Q K^T, dP = dO V^T */
        float s[S_MT][S_NT][4], dp[S_MT][S_NT][4];
        cd_sm80_bwd_zero(s);
        cd_sm80_bwd_zero(dp);
        cd_sm80_bwd_warp_gemm<T, S_MT, S_NT, D / 16, D, false, D, false>(s, sQb, l_s_a, sK, l_s_b);
        cd_sm80_bwd_warp_gemm<T, S_MT, S_NT, D / 16, D, false, D, false>(dp, sdOb, l_s_a, sV, l_s_b);

        /* LSE (log2 units; +inf for padded or fully masked rows so that P = 0) and delta per row */
        /* the accumulator's (batch, head) block; VARLEN: the head's (dq_slice is the sequence's) */
        const int64_t bh = VARLEN ? (int64_t)h : (int64_t)b * a.hq + h;
        const float *lse_s = (const float *)(smem + Sh::OFF_LSE) + buf * BM;
        const float *dlt_s = (const float *)(smem + Sh::OFF_DELTA) + buf * BM;
        float lse2[S_MT][2], dlt[S_MT][2];
#pragma unroll
        for (int mt = 0; mt < S_MT; ++mt)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            const int r = s_row0 + mt * 16 + g + 8 * hh;
            const float x = lse_s[r];
            lse2[mt][hh] = (m0 + r < sq && x != -__int_as_float(0x7f800000))
                               ? x * SM80_BWD_LOG2E : __int_as_float(0x7f800000);
            dlt[mt][hh] = dlt_s[r];
          }

        /* softcap: S becomes t = tanh(S scale / softcap), in place (masked entries then -inf) */
        if (SOFTCAP) {
#pragma unroll
          for (int mt = 0; mt < S_MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < S_NT; ++nt)
#pragma unroll
              for (int e = 0; e < 4; ++e) s[mt][nt][e] = cd_softcap_tanh(s[mt][nt][e] * a.cap_in);
        }

        /* masking: is any entry of this tile invisible? (rows past sq are handled by LSE; the
         * rule of common/mask_rule.cuh in this kernel's diagonal offsets) */
        const long long base = (long long)n0 - m0 - off; /* j - i - off = base + col - row */
        bool need_mask = kvalid < BN;
        if (a.wr >= 0 && base + (BN - 1) > a.wr) need_mask = true;
        if (a.wl >= 0 && base - (BM - 1) < -(long long)a.wl) need_mask = true;
        if (need_mask) {
          /* visible iff col < kvalid && col - row <= lim_r && col - row >= lim_l */
          const long long big = 1 << 20;
          const int lim_r = a.wr < 0 ? (int)big : (int)max(-big, min(big, (long long)a.wr - base));
          const int lim_l = a.wl < 0 ? -(int)big : (int)max(-big, min(big, -(long long)a.wl - base));
#pragma unroll
          for (int mt = 0; mt < S_MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < S_NT; ++nt)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const int row = s_row0 + mt * 16 + g + 8 * (e >> 1);
                const int col = s_col0 + nt * 8 + 2 * t + (e & 1);
                const int d = col - row;
                if (col >= kvalid || d > lim_r || d < lim_l) s[mt][nt][e] = -__int_as_float(0x7f800000);
              }
        }

        /* P and dS, to shared memory in the input dtype. Softcap: P = exp2(t softcap log2e - LSE
         * log2e), dS = P (dP - delta) (1 - t^2); a masked t = -inf gives P = 0 and a factor
         * max(1 - t^2, 0) = 0 (not -inf: 0 * -inf would be NaN) */
#pragma unroll
        for (int mt = 0; mt < S_MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < S_NT; ++nt)
#pragma unroll
            for (int hh = 0; hh < 2; ++hh) {
              const float x0 = s[mt][nt][2 * hh], x1 = s[mt][nt][2 * hh + 1];
              const float mul = SOFTCAP ? a.cap_out : a.scale_log2;
              const float p0 = cd_exp2(fmaf(x0, mul, -lse2[mt][hh]));
              const float p1 = cd_exp2(fmaf(x1, mul, -lse2[mt][hh]));
              float ds0 = p0 * (dp[mt][nt][2 * hh] - dlt[mt][hh]);
              float ds1 = p1 * (dp[mt][nt][2 * hh + 1] - dlt[mt][hh]);
              if (SOFTCAP) {
                ds0 *= fmaxf(fmaf(-x0, x0, 1.f), 0.f);
                ds1 *= fmaxf(fmaf(-x1, x1, 1.f), 0.f);
              }
              const int row = s_row0 + mt * 16 + g + 8 * hh, col = s_col0 + nt * 8 + 2 * t;
              const uint32_t o = cd_sm80_bwd_swz<BN>(row, col);
              *(uint32_t *)(smem + Sh::OFF_P + o) = cd_pack2<T>(p0, p1);
              *(uint32_t *)(smem + Sh::OFF_DS + o) = cd_pack2<T>(ds0, ds1);
            }
        __syncthreads(); /* sP, sdS complete */

        if (!Tl::DQ_FIRST) {
          /* dV += P^T dO, dK += dS^T Q */
          cd_sm80_bwd_warp_gemm<T, KV_MT, KV_NT, BM / 16, BN, true, D, true, KV_IL>(dv, sP, l_kv_a, sdOb, l_kv_b);
          cd_sm80_bwd_warp_gemm<T, KV_MT, KV_NT, BM / 16, BN, true, D, true, KV_IL>(dk, sdS, l_kv_a, sQb, l_kv_b);
        }
        /* dQacc += dS K, reduced into the fp32 accumulator in fragment order
         * (see cd_sm80_bwd_dq_frag) */
        {
          float dq[Q_MT][Q_NT][4];
          cd_sm80_bwd_zero(dq);
          cd_sm80_bwd_warp_gemm<T, Q_MT, Q_NT, BN / 16, BN, false, D, true, Q_IL>(dq, sdS, l_q_a, sK, l_q_b);
          float *dst = dq_slice + (bh * a.sq_pad + m0) * D + (warp * Q_MT * Q_NT * 32 + lane) * 4;
#pragma unroll
          for (int mt = 0; mt < Q_MT; ++mt)
#pragma unroll
            for (int nt = 0; nt < Q_NT; ++nt)
              cd_red_add_f32x4(dst + (mt * Q_NT + nt) * 128, dq[mt][nt][0], dq[mt][nt][1], dq[mt][nt][2],
                               dq[mt][nt][3]);
        }
        if (Tl::DQ_FIRST) {
          cd_sm80_bwd_warp_gemm<T, KV_MT, KV_NT, BM / 16, BN, true, D, true, KV_IL>(dv, sP, l_kv_a, sdOb, l_kv_b);
          cd_sm80_bwd_warp_gemm<T, KV_MT, KV_NT, BM / 16, BN, true, D, true, KV_IL>(dk, sdS, l_kv_a, sQb, l_kv_b);
        }
        h = h_next;
        m = m_next;
      }
    }

    /* epilogue: dK (scaled), dV via shared memory to global */
    __syncthreads(); /* all reads of sQ/sdO done */
    {
      /* the lane id re-read here (volatile) keeps the compiler from precomputing the staging
       * addresses before the loop, where they would occupy registers (spills on sm_80) */
      uint32_t elane;
      asm volatile("mov.u32 %0, %%laneid;\n" : "=r"(elane));
      cd_sm80_bwd_stage<T, KV_MT, KV_NT, D, KV_IL>(smem + Sh::OFF_Q, dk, kv_row0, kv_col0, a.scale, (int)elane);
      cd_sm80_bwd_stage<T, KV_MT, KV_NT, D, KV_IL>(smem + Sh::OFF_DO, dv, kv_row0, kv_col0, 1.f, (int)elane);
    }
    __syncthreads(); /* staged tiles complete */
    uint16_t *dkg = VARLEN ? (uint16_t *)a.dk + ((int64_t)sv.k0 + n0) * a.dk_ss + (int64_t)hk * a.dk_sh
                           : (uint16_t *)a.dk + b * a.dk_sb + (int64_t)n0 * a.dk_ss + hk * a.dk_sh;
    uint16_t *dvg = VARLEN ? (uint16_t *)a.dv + ((int64_t)sv.k0 + n0) * a.dv_ss + (int64_t)hk * a.dv_sh
                           : (uint16_t *)a.dv + b * a.dv_sb + (int64_t)n0 * a.dv_ss + hk * a.dv_sh;
    cd_sm80_bwd_store_tile<BN, D, THREADS, PAD>(dkg, a.dk_ss, smem + Sh::OFF_Q, kvalid, tid, a.dim_qk);
    cd_sm80_bwd_store_tile<BN, D, THREADS, PAD>(dvg, a.dv_ss, smem + Sh::OFF_DO, kvalid, tid, a.dim_v);
    __syncthreads(); /* staging buffers are reloaded by the next key tile */
  }
}


template <typename T, int D, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(cd_sm80_bwd_tile<D>::WARPS * 32, cd_sm80_bwd_tile<D>::CTAS_PER_SM)
cd_sm80_bwd_main(const cd_sm80_bwd_args_t a) {
  const cd_sm80_bwd_varlen_args_t none = {NULL, NULL, NULL, 0, 0}; /* never read */
  cd_sm80_bwd_main_body<T, D, PAD, SOFTCAP, false>(a, none);
}

/* varlen: the same body on ragged batches (bwd.cu's header, "Varlen") */
template <typename T, int D, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(cd_sm80_bwd_tile<D>::WARPS * 32, cd_sm80_bwd_tile<D>::CTAS_PER_SM)
cd_sm80_bwd_main_varlen(const cd_sm80_bwd_args_t a, const cd_sm80_bwd_varlen_args_t v) {
  cd_sm80_bwd_main_body<T, D, PAD, SOFTCAP, true>(a, v);
}

/* The large tile's kernels (dispatch.h CUDADENT_SM80_BWD_W256_M64: W 256's 64 x 64), dense and
 * varlen: the same body. Where the architecture being compiled cannot hold the tile's shared
 * memory (sm_80, sm_86, sm_89: CD_SM80_BWD_ARCH_SMEM) the body is not compiled, a trap instead;
 * the launcher never runs them there (cd_sm80_bwd_large_fits). */
template <typename T, int D, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(cd_sm80_bwd_tile<D, true>::WARPS * 32, cd_sm80_bwd_tile<D, true>::CTAS_PER_SM)
cd_sm80_bwd_main_large(const cd_sm80_bwd_args_t a) {
  const cd_sm80_bwd_varlen_args_t none = {NULL, NULL, NULL, 0, 0}; /* never read */
  if constexpr (cd_sm80_bwd_shape<D, true>::SMEM <= CD_SM80_BWD_ARCH_SMEM)
    cd_sm80_bwd_main_body<T, D, PAD, SOFTCAP, false, true>(a, none);
  else
    __trap(); /* a tile this architecture cannot hold: never launched on it */
}

template <typename T, int D, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(cd_sm80_bwd_tile<D, true>::WARPS * 32, cd_sm80_bwd_tile<D, true>::CTAS_PER_SM)
cd_sm80_bwd_main_varlen_large(const cd_sm80_bwd_args_t a, const cd_sm80_bwd_varlen_args_t v) {
  if constexpr (cd_sm80_bwd_shape<D, true>::SMEM <= CD_SM80_BWD_ARCH_SMEM)
    cd_sm80_bwd_main_body<T, D, PAD, SOFTCAP, true, true>(a, v);
  else
    __trap(); /* as above */
}

/* ---- launching ---------------------------------------------------------------------------------- */

/* 1 where width D has a large tile in this build (dispatch.h CUDADENT_SM80_BWD_W256_M64: W 256's
 * 64 x 64), run where the device holds it (cd_sm80_bwd_large_fits). */
template <int D> constexpr bool cd_sm80_bwd_has_large() { return CUDADENT_SM80_BWD_W256_M64 && D == 256; }

/* The three kernels of one instantiation, on the stream (VARLEN: the varlen kernels, v their
 * second argument; dense: v is not read; LARGE: the width's large tile, its main and dQ kernels;
 * the pre kernel does not depend on the tile). */
template <typename T, int D, bool PAD, bool SOFTCAP, bool VARLEN, bool LARGE = false>
static cudaError_t cd_sm80_bwd_launch(const cd_sm80_bwd_args_t &a, const cd_sm80_bwd_varlen_args_t &v,
                                      cudaStream_t stream) {
  typedef cd_sm80_bwd_shape<D, LARGE> Sh;
  constexpr int ROWS = SM80_BWD_ROW_THREADS / Sh::PRE_TPR;
  /* only the kernels of the call's kind are instantiated */
  const void *main_kernel;
  if constexpr (VARLEN) {
    if constexpr (LARGE) main_kernel = (const void *)cd_sm80_bwd_main_varlen_large<T, D, PAD, SOFTCAP>;
    else main_kernel = (const void *)cd_sm80_bwd_main_varlen<T, D, PAD, SOFTCAP>;
    const int64_t pre_rows = (int64_t)a.hq * v.total_q; /* (head, token) */
    cd_sm80_bwd_pre_varlen<T, D, PAD>
        <<<(unsigned)((pre_rows + ROWS - 1) / ROWS), SM80_BWD_ROW_THREADS, 0, stream>>>(a, v);
  } else {
    if constexpr (LARGE) main_kernel = (const void *)cd_sm80_bwd_main_large<T, D, PAD, SOFTCAP>;
    else main_kernel = (const void *)cd_sm80_bwd_main<T, D, PAD, SOFTCAP>;
    const int64_t pre_rows = (int64_t)a.batch * a.hq * a.sq_pad;
    cd_sm80_bwd_pre<T, D, PAD><<<(unsigned)((pre_rows + ROWS - 1) / ROWS), SM80_BWD_ROW_THREADS, 0, stream>>>(a);
  }
  /* one-time, per device: the dynamic shared-memory limit and the carveout */
  static cudadent_device_once_t attr_done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute(main_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, Sh::SMEM);
    if (err != cudaSuccess) return err;
    err = cudaFuncSetAttribute(main_kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                               cudaSharedmemCarveoutMaxShared);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }
  /* varlen: n_blocks counts the tiles of max_seqlen_k, batch the sequences (host-known bounds;
   * a CTA past its sequence's keys does nothing) */
  const dim3 grid(a.det ? a.splits : a.n_blocks, a.hkv, a.batch);
  if constexpr (VARLEN) {
    if constexpr (LARGE) cd_sm80_bwd_main_varlen_large<T, D, PAD, SOFTCAP><<<grid, Sh::THREADS, Sh::SMEM, stream>>>(a, v);
    else cd_sm80_bwd_main_varlen<T, D, PAD, SOFTCAP><<<grid, Sh::THREADS, Sh::SMEM, stream>>>(a, v);
    /* the query tiles of max_seqlen_q (a.sq); a.sq_pad is the accumulator's rows per head here */
    const dim3 dq_grid((unsigned)((a.sq + Sh::BM - 1) / Sh::BM), (unsigned)a.hq, (unsigned)a.batch);
    if constexpr (LARGE) cd_sm80_bwd_dq_varlen_large<T, D, PAD><<<dq_grid, Sh::THREADS, 0, stream>>>(a, v);
    else cd_sm80_bwd_dq_varlen<T, D, PAD><<<dq_grid, Sh::THREADS, 0, stream>>>(a, v);
  } else {
    if constexpr (LARGE) cd_sm80_bwd_main_large<T, D, PAD, SOFTCAP><<<grid, Sh::THREADS, Sh::SMEM, stream>>>(a);
    else cd_sm80_bwd_main<T, D, PAD, SOFTCAP><<<grid, Sh::THREADS, Sh::SMEM, stream>>>(a);
    /* sq_pad: a multiple of every tile's BLOCK_M of the width (bwd.cu cd_sm80_bwd_block_m) */
    const dim3 dq_grid((unsigned)(a.sq_pad / Sh::BM), (unsigned)a.hq, (unsigned)a.batch);
    if constexpr (LARGE) cd_sm80_bwd_dq_large<T, D, PAD><<<dq_grid, Sh::THREADS, 0, stream>>>(a);
    else cd_sm80_bwd_dq<T, D, PAD><<<dq_grid, Sh::THREADS, 0, stream>>>(a);
  }
  return cudaGetLastError();
}

#if CUDADENT_SM80_BWD_W256_M64
/* 1 if the current device's opt-in shared memory per block holds width D's large tile (209 KiB
 * at W 256: sm_90 yes, sm_80 no); 0 if not, or if the device cannot be asked (the small tile's
 * launch then reports the error). Cached per device (device_info.c). */
template <int D> static bool cd_sm80_bwd_large_fits() {
  int optin = 0;
  if (cudadent_current_smem_optin(&optin) != cudaSuccess) return false;
  return optin >= cd_sm80_bwd_shape<D, true>::SMEM;
}
#endif

/* The kernel of width D for a call: the exact one (PAD false) where the tile table has it and
 * head_dim = head_dim_v = D without softcap; else the padded one, with or without softcap. Where
 * D has no exact kernel, the first branch names the padded one too (one instantiation fewer).
 * Where the width has a large tile (cd_sm80_bwd_has_large) and the device holds it, that tile's
 * kernels (LARGE), else the table's tile. */
template <typename T, int D, bool VARLEN, bool LARGE = false>
static cudaError_t cd_sm80_bwd_launch_width(const cd_sm80_bwd_args_t &a, const cd_sm80_bwd_varlen_args_t &v,
                                            bool exact, bool softcap, cudaStream_t stream) {
#if CUDADENT_SM80_BWD_W256_M64
  if constexpr (!LARGE && cd_sm80_bwd_has_large<D>())
    if (cd_sm80_bwd_large_fits<D>()) return cd_sm80_bwd_launch_width<T, D, VARLEN, true>(a, v, exact, softcap, stream);
#endif
  if (softcap) return cd_sm80_bwd_launch<T, D, true, true, VARLEN, LARGE>(a, v, stream);
  if (exact) return cd_sm80_bwd_launch<T, D, !cd_sm80_bwd_tile<D, LARGE>::EXACT, false, VARLEN, LARGE>(a, v, stream);
  return cd_sm80_bwd_launch<T, D, true, false, VARLEN, LARGE>(a, v, stream);
}

/* VARLEN: the varlen kernels (bwd_varlen.cu instantiates them), else the dense ones (bwd.cu) */
template <typename T, bool VARLEN>
static cudaError_t cd_sm80_bwd_launch_dtype(const cd_sm80_bwd_args_t &a, const cd_sm80_bwd_varlen_args_t &v,
                                            int w, bool exact, bool softcap, cudaStream_t stream) {
  switch (w) {
    case 64: return cd_sm80_bwd_launch_width<T, 64, VARLEN>(a, v, exact, softcap, stream);
#if CUDADENT_SM80_W96
    case 96: return cd_sm80_bwd_launch_width<T, 96, VARLEN>(a, v, exact, softcap, stream);
#endif
    case 128: return cd_sm80_bwd_launch_width<T, 128, VARLEN>(a, v, exact, softcap, stream);
    case 192: return cd_sm80_bwd_launch_width<T, 192, VARLEN>(a, v, exact, softcap, stream);
    default: return cd_sm80_bwd_launch_width<T, 256, VARLEN>(a, v, exact, softcap, stream);
  }
}

/* The varlen launch (bwd_varlen.cu): the args as cudadent_sm80_bwd filled them. */
cudaError_t cd_sm80_bwd_varlen_launch(const cd_sm80_bwd_args_t &a, const cd_sm80_bwd_varlen_args_t &v,
                                      bool bf16, int w, bool exact, bool softcap, cudaStream_t stream);

#endif /* CUDADENT_SM80_BWD_MAIN_CUH */
