/*
 * shim.c - a flat C entry to the sm80 backward launcher for dev/sm80_bwd/bench_bwd.py (ctypes), so
 * that it can be timed in one process side by side with PyTorch SDPA's backends. Normalizes the
 * mask as api.c does; checks nothing else (dev only).
 */
#include <string.h>

#include "cudadent.h"
#include "kernels/dev.h"

static cudadent_attn_bwd_params_t make(int dtype, int b, int sq, int sk, int hq, int hkv, int d,
                                       int causal, int wl, int wr, int det, float scale) {
  cudadent_attn_bwd_params_t p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.dtype = (cudadent_dtype_t)dtype;
  p.batch = b; p.seqlen_q = sq; p.seqlen_k = sk; p.heads_q = hq; p.heads_kv = hkv; p.head_dim = d;
  p.softmax_scale = scale;
  p.window_left = wl >= sk ? -1 : wl;
  p.window_right = causal ? 0 : (wr >= sq ? -1 : wr);
  p.deterministic = det;
  return p;
}

size_t shim_bwd_workspace(int dtype, int b, int sq, int sk, int hq, int hkv, int d, int causal,
                          int wl, int wr, int det) {
  cudadent_attn_bwd_params_t p = make(dtype, b, sq, sk, hq, hkv, d, causal, wl, wr, det, 1.f);
  return cudadent_sm80_bwd_workspace_size(&p);
}

/* ptrs: q k v o dout dq dk dv; strides: 8 x (batch, seq, head) in elements */
int shim_bwd(void **ptrs, const long long *strides, const float *lse, void *ws, int dtype, int b,
             int sq, int sk, int hq, int hkv, int d, int causal, int wl, int wr, int det,
             float scale, void *stream) {
  cudadent_attn_bwd_params_t p = make(dtype, b, sq, sk, hq, hkv, d, causal, wl, wr, det, scale);
  cudadent_tensor_t *t[8] = {&p.q, &p.k, &p.v, &p.o, &p.dout, &p.dq, &p.dk, &p.dv};
  for (int i = 0; i < 8; ++i) {
    t[i]->data = ptrs[i];
    t[i]->stride_batch = strides[3 * i];
    t[i]->stride_seq = strides[3 * i + 1];
    t[i]->stride_head = strides[3 * i + 2];
    t[i]->stride_dim = 1;
  }
  p.lse = lse;
  return (int)cudadent_sm80_bwd(&p, ws, (cudaStream_t)stream);
}
