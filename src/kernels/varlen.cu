/*
 * varlen.cu - the architecture-neutral parts of a varlen call (cudadent.h, "features of layout
 * v2"), launched by api.c on the call's stream, no synchronization:
 *   - the opt-in check (seqlens_report non-NULL): one CTA of 256 threads scans cu_seqlens_q,
 *     cu_seqlens_k and seqused_k, each thread keeping the first bad entry it sees as a 64-bit key
 *     (array << 32 | index), a shared atomicMin keeps the first of all, and thread 0 writes the
 *     cudadent_seqlens_report_t (status 0 when none). Per entry, in this order: FIRST_NOT_ZERO
 *     (index 0), DECREASING, TOO_LONG (index: the sequence's end entry), BAD_TOTAL (index batch);
 *     seqused_k[i]: BAD_USED when < 0 or above cu_seqlens_k[i+1] - cu_seqlens_k[i]. O(batch).
 *   - the gap fill of the forward: tokens of q in no sequence's clamped range get O = 0 and
 *     LSE = -inf. The clamped ranges [lo_b, hi_b) and the gaps [hi_{b-1}, lo_b) (hi_{-1} = 0,
 *     lo_batch = total_q) chain from 0 to total_q, so every token in no range lies in some gap;
 *     the fill writes every gap, and the forward kernel, launched after it on the same stream,
 *     overwrites the gap tokens that some other (overlapping, invalid) range does hold. Grid:
 *     batch + 1 gaps (grid x) x 16 CTAs (grid y) striding over a gap's (token, head, 16-byte chunk); with valid
 *     arrays every gap is empty and each CTA reads two entries and returns.
 *   - the gap fill of the backward, the same chains: dQ = 0 for the tokens of q in no sequence's
 *     clamped query range, dK = dV = 0 for the tokens of k in no sequence's used keys
 *     [lo_b, lo_b + seqused_k[b]) (the unused keys of a sequence lie in the gap after it). Launched
 *     before the backward's kernels, which overwrite what a range does hold.
 */
#include <stdint.h>

#include "dispatch.h"

namespace {

__device__ __forceinline__ int64_t clamp64(int64_t x, int64_t lo, int64_t hi) {
  return x < lo ? lo : x > hi ? hi : x;
}

/* The error of entry i of array arr (0: cu_seqlens_q, 1: cu_seqlens_k, 2: seqused_k), 0 if none. */
__device__ int entry_error(const int32_t *cu, int i, int batch, int total, int max_len) {
  const int v = cu[i];
  if (i == 0) return v != 0 ? CUDADENT_SEQLENS_FIRST_NOT_ZERO : 0;
  const int prev = cu[i - 1];
  if (v < prev) return CUDADENT_SEQLENS_DECREASING;
  if ((int64_t)v - prev > max_len) return CUDADENT_SEQLENS_TOO_LONG;
  if (i == batch && v != total) return CUDADENT_SEQLENS_BAD_TOTAL;
  return 0;
}

__global__ void varlen_check_kernel(const int32_t *cu_q, const int32_t *cu_k,
                                    const int32_t *seqused_k, int batch, int total_q, int total_k,
                                    int max_q, int max_k, cudadent_seqlens_report_t *report) {
  __shared__ unsigned long long first;
  if (threadIdx.x == 0) first = ~0ull;
  __syncthreads();
  unsigned long long mine = ~0ull;
  for (int arr = 0; arr < 3 && mine == ~0ull; ++arr) {
    const int n = arr < 2 ? batch + 1 : (seqused_k != NULL ? batch : 0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      int bad;
      if (arr == 0) bad = entry_error(cu_q, i, batch, total_q, max_q);
      else if (arr == 1) bad = entry_error(cu_k, i, batch, total_k, max_k);
      else bad = seqused_k[i] < 0 || (int64_t)seqused_k[i] > (int64_t)cu_k[i + 1] - cu_k[i];
      if (bad) {
        mine = ((unsigned long long)arr << 32) | (unsigned)i; /* a thread's first is its lowest */
        break;
      }
    }
  }
  if (mine != ~0ull) atomicMin(&first, mine);
  __syncthreads();
  if (threadIdx.x != 0) return;
  cudadent_seqlens_report_t r = {0, 0, 0, 0};
  if (first != ~0ull) {
    const int arr = (int)(first >> 32), i = (int)(first & 0xffffffffu);
    r.array = arr;
    r.index = i;
    if (arr == 0) {
      r.status = entry_error(cu_q, i, batch, total_q, max_q);
      r.value = cu_q[i];
    } else if (arr == 1) {
      r.status = entry_error(cu_k, i, batch, total_k, max_k);
      r.value = cu_k[i];
    } else {
      r.status = CUDADENT_SEQLENS_BAD_USED;
      r.value = seqused_k[i];
    }
  }
  *report = r;
}

/* Gap g (0 <= g <= batch): tokens [hi_{g-1}, lo_g) of q (clamped as cudadent.h says). */
__global__ void varlen_fill_gaps_kernel(const int32_t *cu_q, int batch, int total_q, int max_q,
                                        uint16_t *o, int64_t o_ss, int64_t o_sh, int heads,
                                        int chunks, float *lse) {
  const int g = blockIdx.x;
  int64_t start = 0, end = total_q;
  if (g > 0) { /* hi of sequence g - 1 */
    const int64_t lo = clamp64(cu_q[g - 1], 0, total_q);
    start = clamp64(cu_q[g], lo, lo + max_q < total_q ? lo + max_q : total_q);
  }
  if (g < batch) end = clamp64(cu_q[g], 0, total_q);
  if (end <= start) return;
  const int64_t per_token = (int64_t)heads * chunks, work = (end - start) * per_token;
  for (int64_t w = blockIdx.y * (int64_t)blockDim.x + threadIdx.x; w < work;
       w += (int64_t)gridDim.y * blockDim.x) {
    const int64_t t = start + w / per_token;
    const int h = (int)(w % per_token / chunks), c = (int)(w % chunks);
    *reinterpret_cast<uint4 *>(o + t * o_ss + h * o_sh + c * 8) = make_uint4(0u, 0u, 0u, 0u);
    if (lse != NULL && c == 0) lse[(int64_t)h * total_q + t] = -__int_as_float(0x7f800000);
  }
}

/* Gap g (0 <= g <= batch) of an array's clamped ranges: tokens [end_{g-1}, lo_g) with end the
 * range's end (used != NULL: lo + the used entries, clamped as cudadent.h says); x (x_chunks
 * 16-byte chunks a head) and y (may be NULL) zeroed there. */
__global__ void varlen_zero_gaps_kernel(const int32_t *cu, const int32_t *used, int batch, int total,
                                        int max_len, int heads, uint16_t *x, int64_t x_ss,
                                        int64_t x_sh, int x_chunks, uint16_t *y, int64_t y_ss,
                                        int64_t y_sh, int y_chunks) {
  const int g = blockIdx.x;
  int64_t start = 0, end = total;
  if (g > 0) { /* the end of range g - 1 */
    const int64_t lo = clamp64(cu[g - 1], 0, total);
    start = clamp64(cu[g], lo, lo + max_len < total ? lo + max_len : total);
    if (used != NULL) start = lo + clamp64(used[g - 1], 0, start - lo);
  }
  if (g < batch) end = clamp64(cu[g], 0, total);
  if (end <= start) return;
  const int chunks = x_chunks + (y != NULL ? y_chunks : 0);
  const int64_t per_token = (int64_t)heads * chunks, work = (end - start) * per_token;
  for (int64_t w = blockIdx.y * (int64_t)blockDim.x + threadIdx.x; w < work;
       w += (int64_t)gridDim.y * blockDim.x) {
    const int64_t t = start + w / per_token;
    const int h = (int)(w % per_token / chunks), c = (int)(w % chunks);
    uint16_t *dst = c < x_chunks ? x + t * x_ss + h * x_sh + c * 8
                                 : y + t * y_ss + h * y_sh + (c - x_chunks) * 8;
    *reinterpret_cast<uint4 *>(dst) = make_uint4(0u, 0u, 0u, 0u);
  }
}

}  // namespace

extern "C" cudaError_t cudadent_varlen_check(const int32_t *cu_seqlens_q,
                                             const int32_t *cu_seqlens_k, const int32_t *seqused_k,
                                             int batch, int total_q, int total_k, int max_seqlen_q,
                                             int max_seqlen_k, cudadent_seqlens_report_t *report,
                                             cudaStream_t stream) {
  varlen_check_kernel<<<1, 256, 0, stream>>>(cu_seqlens_q, cu_seqlens_k, seqused_k, batch,
                                             total_q, total_k, max_seqlen_q, max_seqlen_k, report);
  return cudaGetLastError();
}

extern "C" cudaError_t cudadent_varlen_fill_gaps(const cudadent_attn_fwd_params_t *p,
                                                 cudaStream_t stream) {
  if (p->total_q == 0) return cudaSuccess;
  const dim3 grid((unsigned)p->batch + 1, 16); /* batch + 1 <= 65536 gaps in x */
  varlen_fill_gaps_kernel<<<grid, 128, 0, stream>>>(
      p->cu_seqlens_q, p->batch, p->total_q, p->seqlen_q, static_cast<uint16_t *>(p->o.data),
      p->o.stride_seq, p->o.stride_head, p->heads_q, p->head_dim_v / 8, p->lse);
  return cudaGetLastError();
}

extern "C" cudaError_t cudadent_varlen_bwd_fill_gaps(const cudadent_attn_bwd_params_t *p,
                                                     cudaStream_t stream) {
  if (p->total_q > 0)
    varlen_zero_gaps_kernel<<<dim3((unsigned)p->batch + 1, 16), 128, 0, stream>>>(
        p->cu_seqlens_q, NULL, p->batch, p->total_q, p->seqlen_q, p->heads_q,
        static_cast<uint16_t *>(p->dq.data), p->dq.stride_seq, p->dq.stride_head, p->head_dim / 8,
        NULL, 0, 0, 0);
  if (p->total_k > 0)
    varlen_zero_gaps_kernel<<<dim3((unsigned)p->batch + 1, 16), 128, 0, stream>>>(
        p->cu_seqlens_k, p->seqused_k, p->batch, p->total_k, p->seqlen_k, p->heads_kv,
        static_cast<uint16_t *>(p->dk.data), p->dk.stride_seq, p->dk.stride_head, p->head_dim / 8,
        static_cast<uint16_t *>(p->dv.data), p->dv.stride_seq, p->dv.stride_head,
        p->head_dim_v / 8);
  return cudaGetLastError();
}
