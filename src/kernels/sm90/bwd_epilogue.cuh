/*
 * bwd_epilogue.cuh - the Hopper backward's dK / dV out, at the end of a narrow row's main kernel
 * (bwd_kernel.cuh cd_sm90_bwd_body): both consumer warpgroups (256 threads) are past their last
 * block, so the Q / dO stages are free; each thread holds its keys' dK (unscaled) and dV
 * fragments, D / 2 fp32 each (key_in_block0 and + 8, columns 8 j + 2 (lane % 4) + {0, 1}).
 *
 * cd_sm90_bwd_epilogue_rows: dK (scaled by softmax_scale) and dV staged in the Q and
 *   dO stages as [BN keys][D] rows whose 16-byte chunks are XOR-swizzled (cd_sm90_bwd_stage_chunk:
 *   the fragment stores then hit 32 banks), then written out as 16-byte row chunks by the 256 threads (keys past
 *   seqlen_k and columns past the real dims are not written: they are another head's in memory).
 *   (TMA tensor stores instead were measured slower, session 23: docs/kernels/sm90_bwd.md 2.1e.)
 */
#ifndef CUDADENT_SM90_BWD_EPILOGUE_CUH
#define CUDADENT_SM90_BWD_EPILOGUE_CUH

#include <cuda.h>
#include <stdint.h>

#include "kernels/sm90/bwd_parts.cuh" /* cd_sm90_bwd_args */
#include "kernels/sm90/named_barriers.cuh"
#include "kernels/sm90/ptx_sm90.cuh"

/* The staging's place of 16-byte chunk c in key row `key`. A warp's fragment store covers 8 keys x
 * 4 words of one chunk. Rows of a multiple of 128 bytes (d64, d128) start on bank 0: the chunk
 * XOR key % 8 spreads the 8 keys. d96's rows of 192 bytes start on bank 0 or 16 by key % 2, so
 * the chunk XOR (key / 2) % 4, which stays within the row's 12 chunks, spreads the rest. */
template <int D> __device__ __forceinline__ int cd_sm90_bwd_stage_chunk(int c, int key) {
  if constexpr (D * 2 % 128 == 0) return c ^ (key & 7);
  else return c ^ ((key >> 1) & 3);
}

template <int D, bool kFp16, int BN>
__device__ __forceinline__ void cd_sm90_bwd_epilogue_rows(const float (&dk)[D / 2], const float (&dv)[D / 2],
                                                          const cd_sm90_bwd_args &args, uint32_t sQ, uint32_t sDO,
                                                          int key_in_block0, int lane, int k0, int k_tok0, int hk,
                                                          int b, int head_dim, int head_dim_v) {
  cd_named_bar_sync(CD_SM90_BAR_BWD_EPILOGUE, 256);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = key_in_block0 + 8 * r;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      const uint32_t off = key * (D * 2) + (cd_sm90_bwd_stage_chunk<D>(j, key) << 4) + 4 * (lane & 3);
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sQ + off),
                   "r"(cd_pack2<kFp16>(dk[4 * j + 2 * r] * args.scale, dk[4 * j + 2 * r + 1] * args.scale))
                   : "memory");
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sDO + off),
                   "r"(cd_pack2<kFp16>(dv[4 * j + 2 * r], dv[4 * j + 2 * r + 1]))
                   : "memory");
    }
  }
  cd_named_bar_sync(CD_SM90_BAR_BWD_EPILOGUE, 256);
  constexpr int CPR = D / 8; /* 16-byte chunks a row */
  /* the real dims' chunks (multiples of 8: whole chunks); the columns past them are zeros here
   * (zero-filled Q, dO) and another head's in memory */
  const int cpr_k = head_dim / 8, cpr_v = head_dim_v / 8;
  for (int idx = threadIdx.x - 128; idx < BN * CPR; idx += 256) {
    const int row = idx / CPR, c = idx % CPR, key = k0 + row;
    if (key >= args.seqlen_k) break; /* rows are in order: the rest are past it too */
    const uint32_t off = row * (D * 2) + (cd_sm90_bwd_stage_chunk<D>(c, row) << 4);
    uint4 vk, vv;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(vk.x), "=r"(vk.y), "=r"(vk.z), "=r"(vk.w) : "r"(sQ + off) : "memory");
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(vv.x), "=r"(vv.y), "=r"(vv.z), "=r"(vv.w) : "r"(sDO + off) : "memory");
    if (c < cpr_k)
      *reinterpret_cast<uint4 *>((uint16_t *)args.dk + b * args.dk_sb + (int64_t)(k_tok0 + key) * args.dk_ss +
                                 hk * args.dk_sh + 8 * c) = vk;
    if (c < cpr_v)
      *reinterpret_cast<uint4 *>((uint16_t *)args.dv + b * args.dv_sb + (int64_t)(k_tok0 + key) * args.dv_ss +
                                 hk * args.dv_sh + 8 * c) = vv;
  }
}

#endif /* CUDADENT_SM90_BWD_EPILOGUE_CUH */
