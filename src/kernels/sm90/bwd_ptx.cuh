/*
 * bwd_ptx.cuh - the inline-PTX wrappers the Hopper backward needs beyond ptx_sm90.cuh: 1-d bulk
 * copies (global -> shared) and bulk reductions (shared -> global, add.f32), and the wgmma whose
 * both shared-memory operands are MN-major (dQ = dS K, with dS stored transposed). Each wrapper
 * names its PTX ISA section (version 8.x numbering). sm_90a only.
 */
#ifndef CUDADENT_SM90_BWD_PTX_CUH
#define CUDADENT_SM90_BWD_PTX_CUH

#include <stdint.h>
#include "kernels/common/ptx_sm90.cuh"

/* 9.7.9.25.4.2 cp.async.bulk (global -> shared, non-tensor): bytes (a multiple of 16, both
 * addresses 16-byte aligned) copied to dst, completion counted as transaction bytes on bar. */
__device__ __forceinline__ void bulk_load_1d(uint32_t dst, const void *src, uint32_t bytes,
                                             uint32_t bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
      "l"((uint64_t)src), "r"(bytes), "r"(bar)
      : "memory");
}

/* 9.7.9.25.4.5 cp.reduce.async.bulk (shared -> global, non-tensor, bulk_group completion):
 * dst[i] += src[i] for bytes / 4 floats, each addition atomic at the L2 (.add.f32). */
__device__ __forceinline__ void bulk_reduce_add_f32(float *dst, uint32_t src, uint32_t bytes) {
  asm volatile(
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(
          (uint64_t)dst),
      "r"(src), "r"(bytes)
      : "memory");
}

/* D[64,64] (+)= A[64,16] * B[16,64]; A and B from shared memory, both MN-major (imm-trans-a = 1,
 * imm-trans-b = 1: A stored K rows of 64 contiguous M, B stored K rows of 64 contiguous N)
 * (PTX ISA 9.7.15.5.2 wgmma.mma_async). scale_d == 0: D = A*B. */
#define CD_WGMMA_D32                                                                             \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
  "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define CD_WGMMA_D32_OPERANDS(d)                                                                  \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),    \
      "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),  \
      "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),  \
      "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
template <bool kFp16>
__device__ __forceinline__ void wgmma_m64n64k16_ss_tt(float (&d)[32], uint64_t desc_a,
                                                      uint64_t desc_b, int scale_d) {
  if constexpr (kFp16) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 " CD_WGMMA_D32
                 ", %32, %33, p, 1, 1, 1, 1;\n}\n"
                 : CD_WGMMA_D32_OPERANDS(d)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  } else {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " CD_WGMMA_D32
                 ", %32, %33, p, 1, 1, 1, 1;\n}\n"
                 : CD_WGMMA_D32_OPERANDS(d)
                 : "l"(desc_a), "l"(desc_b), "r"(scale_d));
  }
}
#undef CD_WGMMA_D32
#undef CD_WGMMA_D32_OPERANDS

#endif /* CUDADENT_SM90_BWD_PTX_CUH */
