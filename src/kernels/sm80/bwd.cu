/*
 * bwd.cu - attention backward on the portable tensor-core path (mma.sync m16n8k16, sm_80+),
 * FlashAttention-2 style: dQ, dK, dV of O = softmax(scale * Q K^T) V, given dO, O and the
 * forward's LSE. head_dim and head_dim_v: any multiples of 8 in [8, 256]; softcap (flash-attn's).
 *
 * Kernels are templates over the dtype, the width D in {64, 128, 192, 256} (the smallest >=
 * max(head_dim, head_dim_v): every tile row has D elements, columns past the real dims are
 * zero-filled on load and never stored; bwd_parts.cuh's header), PAD (the column bounds are
 * applied; false only for W 64 / 128 with head_dim = head_dim_v = W, the code of before) and
 * SOFTCAP (main kernel only). Instantiations per dtype: main 10 (64 and 128: exact, padded,
 * padded + softcap; 192 and 256: padded, padded + softcap), pre and dq 6 each.
 *
 * Three kernels per call, on one stream (1 and 3 in bwd_prepost.cuh; the tile table, layout,
 * warp products and loaders in bwd_parts.cuh; kernel 2 and the host side here):
 *   1. cd_sm80_bwd_pre   delta[b,h,i] = sum_d dO[b,i,h,d] * O[b,i,h,d] (fp32), and zeroes the
 *                        fp32 dQ accumulator rows (every split slice, padded rows too).
 *   2. cd_sm80_bwd_main  one CTA per (key tile, KV head, batch); see below.
 *   3. cd_sm80_bwd_dq    dQ = softmax_scale * (sum of the dQ accumulator slices, in slice order),
 *                        converted to the input dtype; one CTA per (query tile, head, batch).
 *
 * cd_sm80_bwd_main. The CTA keeps K and V of one key tile [BLOCK_N, D] in shared memory and dK, dV
 * in registers, and walks every (query head of its KV group, query tile that sees the key tile):
 *     S  = Q K^T                          [BLOCK_M, BLOCK_N]  (warps SDP_WARPS_M x rest)
 *     P  = exp2(S * scale * log2e - LSE * log2e)   (masked entries 0; LSE = -inf rows: P = 0)
 *          softcap: t = tanh(S * scale / softcap), P = exp2(t * softcap * log2e - LSE * log2e)
 *     dP = dO V^T                         [BLOCK_M, BLOCK_N]  (same warp layout as S)
 *     dS = P * (dP - delta)               softcap: times 1 - t^2 (t recomputed, never stored)
 *     dV += P^T dO                        [BLOCK_N, D]        (warps DKV_WARPS_N x rest)
 *     dK += dS^T Q                        [BLOCK_N, D]        (same layout as dV)
 *     dQacc += dS K                       [BLOCK_M, D]        (warps DQ_WARPS_M x rest), added
 *                                         to the fp32 workspace with red.global.add, in mma
 *                                         fragment order (cd_sm80_bwd_dq_frag): 16-byte
 *                                         vector reds
 * The workspace: dQ accumulator [splits][batch][heads_q][sq_pad][D] fp32 (D the width, not
 * head_dim: the kernels write every column, zeros past head_dim), then delta
 * [batch][heads_q][sq_pad] fp32; each part 256-byte aligned (cudadent_sm80_bwd_workspace_size).
 * GQA/MQA: the query heads sharing a KV head are looped over inside the CTA, so dK/dV are summed
 * in registers: no extra pass over global memory, and dK/dV are deterministic in every mode.
 * Deterministic mode: the grid's x dimension is a fixed number of "splits"; split s handles key
 * tiles s, s + splits, ... one after the other and adds its dQ into its own fp32 slice. Inside a
 * slice each element is added by one thread, in program order, so every sum has a fixed order;
 * kernel 3 adds the slices in slice order. Non-deterministic mode: one key tile per CTA, one
 * shared slice, atomic order left to the hardware.
 * All 8 warps do all the work (no warp specialization); every matrix product is a warp tile of
 * m16n8k16 mma.sync fed by ldmatrix from shared memory.
 *
 * Shared memory (16-bit elements; every tile row-major, its 16-byte chunks XOR-swizzled by
 * row % 8 so that ldmatrix and the fragment stores are free of bank conflicts; sizes per width in
 * the tile table, 136.5 to 162 KiB: one CTA per SM, sm_80 / sm_90 class devices only):
 *     sQ  [2][BLOCK_M][D]   double-buffered query tile
 *     sdO [2][BLOCK_M][D]   double-buffered dO tile
 *     sK  [BLOCK_N][D], sV [BLOCK_N][D]
 *     sP  [BLOCK_M][BLOCK_N], sdS [BLOCK_M][BLOCK_N]   (P and dS in the input dtype)
 *   The epilogue stages dK in sQ and dV in sdO before coalesced 16-byte stores.
 *
 * Pipeline per query tile: wait for its Q/dO (cp.async) + barrier; issue the cp.async of the next
 * tile into the other buffer; S and dP products; P, dS to shared memory; barrier; dV, dK and dQ
 * products (dQ first where the table says DQ_FIRST), dQ reductions to global. Two barriers per
 * query tile.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "device_info.h"
#include "dispatch.h"
#include "kernels/sm80/bwd_parts.cuh"
#include "kernels/sm80/bwd_prepost.cuh"

/* ---- kernel 2: the main loop ---------------------------------------------------------------------- */

template <typename T, int D, bool PAD, bool SOFTCAP>
__global__ void __launch_bounds__(cd_sm80_bwd_tile<D>::WARPS * 32, cd_sm80_bwd_tile<D>::CTAS_PER_SM)
cd_sm80_bwd_main(const cd_sm80_bwd_args_t a) {
  typedef cd_sm80_bwd_shape<D> Sh;
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
  const int s_row0 = (warp % cd_sm80_bwd_tile<D>::SDP_WARPS_M) * Sh::S_TM;
  const int s_col0 = (warp / cd_sm80_bwd_tile<D>::SDP_WARPS_M) * Sh::S_TN;
  const int kv_row0 = (warp % cd_sm80_bwd_tile<D>::DKV_WARPS_N) * Sh::KV_TN;
  const int kv_col0 = cd_sm80_bwd_wcol<Sh::KV_TD, KV_IL>(warp / cd_sm80_bwd_tile<D>::DKV_WARPS_N);
  const int q_row0 = (warp % cd_sm80_bwd_tile<D>::DQ_WARPS_M) * Sh::Q_TM;
  const int q_col0 = cd_sm80_bwd_wcol<Sh::Q_TD, Q_IL>(warp / cd_sm80_bwd_tile<D>::DQ_WARPS_M);

  const cd_sm80_bwd_ldm_t l_s_a = cd_sm80_bwd_ldm_a<D, false>(s_row0, lane), l_s_b = cd_sm80_bwd_ldm_b<D, false>(s_col0, lane);
  const cd_sm80_bwd_ldm_t l_kv_a = cd_sm80_bwd_ldm_a<BN, true>(kv_row0, lane), l_kv_b = cd_sm80_bwd_ldm_b<D, true>(kv_col0, lane);
  const cd_sm80_bwd_ldm_t l_q_a = cd_sm80_bwd_ldm_a<BN, false>(q_row0, lane), l_q_b = cd_sm80_bwd_ldm_b<D, true>(q_col0, lane);

  const long long off = (long long)a.sk - a.sq; /* bottom-right alignment */
  const int m_tiles = (a.sq + BM - 1) / BM;
  float *dq_slice = a.dq_acc + (a.det ? (int64_t)blockIdx.x * a.slice : 0);

  for (int n = blockIdx.x; n < a.n_blocks; n += gridDim.x) {
    const int n0 = n * BN;
    const int kvalid = min(BN, a.sk - n0);
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
      const uint16_t *kg = (const uint16_t *)a.k + b * a.k_sb + (int64_t)n0 * a.k_ss + hk * a.k_sh;
      const uint16_t *vg = (const uint16_t *)a.v + b * a.v_sb + (int64_t)n0 * a.v_ss + hk * a.v_sh;
      cd_sm80_bwd_load_tile<BN, D, THREADS, PAD>(sK, kg, a.k_ss, kvalid, tid, a.dim_qk);
      cd_sm80_bwd_load_tile<BN, D, THREADS, PAD>(sV, vg, a.v_ss, kvalid, tid, a.dim_v);
      cd_sm80_bwd_load_query_tile<D, PAD>(a, s0, 0, b, hk * a.group, m_begin, tid); /* with K, V: one group */

      int h = hk * a.group, m = m_begin;
      for (int it = 0; it < iters; ++it) {
        const int buf = it & 1;
        const int m0 = m * BM;
        /* next (head, tile) */
        int h_next = h, m_next = m + 1;
        if (m_next == m_end) { m_next = m_begin; ++h_next; }

        cd_cp_async_wait<0>();
        __syncthreads(); /* this tile's Q/dO landed for all threads; buffers of it-1 are free */
        if (it + 1 < iters) cd_sm80_bwd_load_query_tile<D, PAD>(a, s0, buf ^ 1, b, h_next, m_next, tid);
        const uint32_t sQb = sQ + buf * Sh::Q_TILE, sdOb = sdO + buf * Sh::Q_TILE;

        /* S = Q K^T, dP = dO V^T */
        float s[S_MT][S_NT][4], dp[S_MT][S_NT][4];
        cd_sm80_bwd_zero(s);
        cd_sm80_bwd_zero(dp);
        cd_sm80_bwd_warp_gemm<T, S_MT, S_NT, D / 16, D, false, D, false>(s, sQb, l_s_a, sK, l_s_b);
        cd_sm80_bwd_warp_gemm<T, S_MT, S_NT, D / 16, D, false, D, false>(dp, sdOb, l_s_a, sV, l_s_b);

        /* LSE (log2 units; +inf for padded or fully masked rows so that P = 0) and delta per row */
        const int64_t bh = (int64_t)b * a.hq + h;
        const float *lse_s = (const float *)(smem + Sh::OFF_LSE) + buf * BM;
        const float *dlt_s = (const float *)(smem + Sh::OFF_DELTA) + buf * BM;
        float lse2[S_MT][2], dlt[S_MT][2];
#pragma unroll
        for (int mt = 0; mt < S_MT; ++mt)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh) {
            const int r = s_row0 + mt * 16 + g + 8 * hh;
            const float x = lse_s[r];
            lse2[mt][hh] = (m0 + r < a.sq && x != -__int_as_float(0x7f800000))
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

        if (!cd_sm80_bwd_tile<D>::DQ_FIRST) {
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
        if (cd_sm80_bwd_tile<D>::DQ_FIRST) {
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
    cd_sm80_bwd_store_tile<BN, D, THREADS, PAD>((uint16_t *)a.dk + b * a.dk_sb + (int64_t)n0 * a.dk_ss + hk * a.dk_sh,
                                                a.dk_ss, smem + Sh::OFF_Q, kvalid, tid, a.dim_qk);
    cd_sm80_bwd_store_tile<BN, D, THREADS, PAD>((uint16_t *)a.dv + b * a.dv_sb + (int64_t)n0 * a.dv_ss + hk * a.dv_sh,
                                                a.dv_ss, smem + Sh::OFF_DO, kvalid, tid, a.dim_v);
    __syncthreads(); /* staging buffers are reloaded by the next key tile */
  }
}

/* ---- host side ---------------------------------------------------------------------------------- */

/* The width a call runs: the smallest W in {64, 128, 192, 256} >= max(head_dim, head_dim_v);
 * 0 where either is not a multiple of 8 in [8, 256]. head_dim_v 0 means head_dim (the head-dim
 * queries ask before api.c normalizes it). */
static int cd_sm80_bwd_width(const cudadent_attn_bwd_params_t *p) {
  const int d = p->head_dim, dv = p->head_dim_v ? p->head_dim_v : p->head_dim;
  if (d < 8 || d > 256 || d % 8 != 0 || dv < 8 || dv > 256 || dv % 8 != 0) return 0;
  const int m = d > dv ? d : dv;
  return (m + 63) / 64 * 64;
}

/* A tile-table or shape constant of width w (64, 128, 192 or 256). */
#define CD_SM80_BWD_OF_WIDTH(w, T, member)                                           \
  ((w) == 64 ? T<64>::member : (w) == 128 ? T<128>::member : (w) == 192 ? T<192>::member \
                                                                         : T<256>::member)

static int cd_sm80_bwd_block_m(int w) { return CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_tile, BLOCK_M); }
static int cd_sm80_bwd_block_n(int w) { return CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_tile, BLOCK_N); }
static int cd_sm80_bwd_ctas_per_sm(int w) { return CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_tile, CTAS_PER_SM); }
static int cd_sm80_bwd_smem(int w) { return CD_SM80_BWD_OF_WIDTH(w, cd_sm80_bwd_shape, SMEM); }

/* Number of dQ slices: 1, or in deterministic mode enough splits of the key tiles to fill the
 * device's multiprocessors with (batch * heads_kv * splits) CTAs, CTAS_PER_SM per SM. */
static int cd_sm80_bwd_splits(const cudadent_attn_bwd_params_t *p) {
  if (!p->deterministic) return 1;
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudadent_device_sm_count(dev, &sms) != cudaSuccess ||
      sms <= 0) {
    (void)cudaGetLastError(); /* no device: size for a large one; the launch re-checks */
    sms = 132;
  }
  const int w = cd_sm80_bwd_width(p);
  sms *= cd_sm80_bwd_ctas_per_sm(w);
  const int bn = cd_sm80_bwd_block_n(w);
  const int n_blocks = (p->seqlen_k + bn - 1) / bn;
  const long long ctas = (long long)p->batch * p->heads_kv;
  long long s = ctas >= sms ? 1 : sms / ctas;
  if (s > n_blocks) s = n_blocks;
  return s < 1 ? 1 : (int)s;
}

static int64_t cd_sm80_bwd_sq_pad(const cudadent_attn_bwd_params_t *p) {
  const int bm = cd_sm80_bwd_block_m(cd_sm80_bwd_width(p));
  return ((int64_t)p->seqlen_q + bm - 1) / bm * bm;
}

static size_t cd_sm80_bwd_align(size_t x) { return (x + 255) / 256 * 256; }

/* Bytes of one dQ accumulator slice: every (batch, query head, padded query row) has W fp32
 * columns, W the width (the kernels write all of them; columns past head_dim hold zeros). */
static size_t cd_sm80_bwd_acc_bytes(const cudadent_attn_bwd_params_t *p) {
  const int64_t rows = (int64_t)p->batch * p->heads_q * cd_sm80_bwd_sq_pad(p);
  return cd_sm80_bwd_align((size_t)rows * cd_sm80_bwd_width(p) * sizeof(float));
}

/* dtype, head_dim and head_dim_v (multiples of 8 in [8, 256]); and, where a device is present,
 * enough shared memory per block for the width's tile (sm_80 and sm_90 have it; sm_86 / sm_89,
 * at 99 KiB, have it for no width: no backward there yet). */
extern "C" int cudadent_sm80_bwd_supports(const cudadent_attn_bwd_params_t *p) {
  if (p->dtype != CUDADENT_DTYPE_BF16 && p->dtype != CUDADENT_DTYPE_FP16) return 0;
  const int w = cd_sm80_bwd_width(p);
  if (w == 0) return 0;
  const int need = cd_sm80_bwd_smem(w);
  int dev = 0, optin = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || cudadent_device_smem_optin(dev, &optin) != cudaSuccess) {
    (void)cudaGetLastError(); /* no device: the call fails later, at the device check */
    return 1;
  }
  return optin >= need;
}

/* splits x the dQ accumulator slice (above), then delta: fp32 [batch][heads_q][sq_pad]. */
extern "C" size_t cudadent_sm80_bwd_workspace_size(const cudadent_attn_bwd_params_t *p) {
  const int64_t rows = (int64_t)p->batch * p->heads_q * cd_sm80_bwd_sq_pad(p);
  return (size_t)cd_sm80_bwd_splits(p) * cd_sm80_bwd_acc_bytes(p) + cd_sm80_bwd_align((size_t)rows * sizeof(float));
}

template <typename T, int D, bool PAD, bool SOFTCAP>
static cudaError_t cd_sm80_bwd_launch(const cd_sm80_bwd_args_t &a, cudaStream_t stream) {
  typedef cd_sm80_bwd_shape<D> Sh;
  constexpr int ROWS = SM80_BWD_ROW_THREADS / Sh::PRE_TPR;
  const int64_t pre_rows = (int64_t)a.batch * a.hq * a.sq_pad;
  cd_sm80_bwd_pre<T, D, PAD><<<(unsigned)((pre_rows + ROWS - 1) / ROWS), SM80_BWD_ROW_THREADS, 0, stream>>>(a);
  /* one-time, per device: the dynamic shared-memory limit and the carveout */
  static cudadent_device_once_t attr_done;
  int dev = 0;
  cudaError_t err = cudaGetDevice(&dev);
  if (err != cudaSuccess) return err;
  if (!cudadent_device_once_done(&attr_done, dev)) {
    err = cudaFuncSetAttribute(cd_sm80_bwd_main<T, D, PAD, SOFTCAP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               Sh::SMEM);
    if (err != cudaSuccess) return err;
    err = cudaFuncSetAttribute(cd_sm80_bwd_main<T, D, PAD, SOFTCAP>,
                               cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    if (err != cudaSuccess) return err;
    cudadent_device_once_mark(&attr_done, dev);
  }
  const dim3 grid(a.det ? a.splits : a.n_blocks, a.hkv, a.batch);
  cd_sm80_bwd_main<T, D, PAD, SOFTCAP><<<grid, Sh::THREADS, Sh::SMEM, stream>>>(a);
  const dim3 dq_grid((unsigned)(a.sq_pad / Sh::BM), (unsigned)a.hq, (unsigned)a.batch);
  cd_sm80_bwd_dq<T, D, PAD><<<dq_grid, Sh::THREADS, 0, stream>>>(a);
  return cudaGetLastError();
}

/* The kernel of width D for a call: the exact one (PAD false) where the tile table has it and
 * head_dim = head_dim_v = D without softcap; else the padded one, with or without softcap. Where
 * D has no exact kernel, the first branch names the padded one too (one instantiation fewer). */
template <typename T, int D>
static cudaError_t cd_sm80_bwd_launch_width(const cd_sm80_bwd_args_t &a, bool exact, bool softcap,
                                            cudaStream_t stream) {
  if (softcap) return cd_sm80_bwd_launch<T, D, true, true>(a, stream);
  if (exact) return cd_sm80_bwd_launch<T, D, !cd_sm80_bwd_tile<D>::EXACT, false>(a, stream);
  return cd_sm80_bwd_launch<T, D, true, false>(a, stream);
}

template <typename T>
static cudaError_t cd_sm80_bwd_launch_dtype(const cd_sm80_bwd_args_t &a, int w, bool exact, bool softcap,
                                            cudaStream_t stream) {
  switch (w) {
    case 64: return cd_sm80_bwd_launch_width<T, 64>(a, exact, softcap, stream);
    case 128: return cd_sm80_bwd_launch_width<T, 128>(a, exact, softcap, stream);
    case 192: return cd_sm80_bwd_launch_width<T, 192>(a, exact, softcap, stream);
    default: return cd_sm80_bwd_launch_width<T, 256>(a, exact, softcap, stream);
  }
}

extern "C" cudaError_t cudadent_sm80_bwd(const cudadent_attn_bwd_params_t *p, void *workspace,
                                         cudaStream_t stream) {
  const int w = cd_sm80_bwd_width(p);
  cd_sm80_bwd_args_t a;
  a.q = p->q.data; a.k = p->k.data; a.v = p->v.data; a.o = p->o.data; a.dout = p->dout.data;
  a.dq = p->dq.data; a.dk = p->dk.data; a.dv = p->dv.data;
  a.q_sb = p->q.stride_batch; a.q_ss = p->q.stride_seq; a.q_sh = p->q.stride_head;
  a.k_sb = p->k.stride_batch; a.k_ss = p->k.stride_seq; a.k_sh = p->k.stride_head;
  a.v_sb = p->v.stride_batch; a.v_ss = p->v.stride_seq; a.v_sh = p->v.stride_head;
  a.o_sb = p->o.stride_batch; a.o_ss = p->o.stride_seq; a.o_sh = p->o.stride_head;
  a.do_sb = p->dout.stride_batch; a.do_ss = p->dout.stride_seq; a.do_sh = p->dout.stride_head;
  a.dq_sb = p->dq.stride_batch; a.dq_ss = p->dq.stride_seq; a.dq_sh = p->dq.stride_head;
  a.dk_sb = p->dk.stride_batch; a.dk_ss = p->dk.stride_seq; a.dk_sh = p->dk.stride_head;
  a.dv_sb = p->dv.stride_batch; a.dv_ss = p->dv.stride_seq; a.dv_sh = p->dv.stride_head;
  a.lse = p->lse;
  a.batch = p->batch; a.sq = p->seqlen_q; a.sk = p->seqlen_k;
  a.hq = p->heads_q; a.hkv = p->heads_kv; a.group = p->heads_q / p->heads_kv;
  a.sq_pad = (int)cd_sm80_bwd_sq_pad(p);
  a.n_blocks = (p->seqlen_k + cd_sm80_bwd_block_n(w) - 1) / cd_sm80_bwd_block_n(w);
  a.scale = p->softmax_scale;
  a.scale_log2 = p->softmax_scale * SM80_BWD_LOG2E;
  a.wl = p->window_left;
  a.wr = p->window_right;
  a.det = p->deterministic != 0;
  a.splits = cd_sm80_bwd_splits(p);
  const size_t acc_bytes = cd_sm80_bwd_acc_bytes(p);
  a.slice = (int64_t)(acc_bytes / sizeof(float));
  a.dq_acc = (float *)workspace;
  a.delta = (float *)((char *)workspace + (size_t)a.splits * acc_bytes);
  a.dim_qk = p->head_dim;
  a.dim_v = p->head_dim_v ? p->head_dim_v : p->head_dim;
  const bool softcap = p->softcap > 0.f;
  a.cap_in = softcap ? p->softmax_scale / p->softcap : 0.f;
  a.cap_out = softcap ? p->softcap * SM80_BWD_LOG2E : 0.f;
  const bool exact = a.dim_qk == w && a.dim_v == w;

  if (p->dtype == CUDADENT_DTYPE_BF16) return cd_sm80_bwd_launch_dtype<__nv_bfloat16>(a, w, exact, softcap, stream);
  return cd_sm80_bwd_launch_dtype<__half>(a, w, exact, softcap, stream);
}
