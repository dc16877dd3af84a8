"""bench_bwd.py - time the sm80 backward (through dev/sm80_bwd/shim.c) side by side with PyTorch
SDPA's FLASH backend backward, in one process on one GPU, on the FA3 suite (16k tokens, hidden
2048, bf16) and a few small shapes. CUDA events, warm-up, median. FLOPs: backward = 2.5 x forward
= 10 B Hq Sq Sk D, halved for causal.

Both backwards get the same inputs: q, k, v, dout random normal; O and LSE from SDPA's flash
forward. Also reports max|ours - flash| / max|flash| per gradient as a sanity check (both are
bf16 kernels; expect ~1e-2 or less).

usage: python3 bench_bwd.py LIB.so [--quick] [--det] [--profile D S CAUSAL]
  --profile: run only our backward on that FA3-suite shape a few times (for ncu)
"""
import ctypes
import math
import statistics
import sys

import torch

lib = ctypes.CDLL(sys.argv[1])
lib.shim_bwd_workspace.restype = ctypes.c_size_t
lib.shim_bwd_workspace.argtypes = [ctypes.c_int] * 11
lib.shim_bwd.restype = ctypes.c_int
lib.shim_bwd.argtypes = ([ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_longlong),
                          ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int] * 11 +
                         [ctypes.c_float, ctypes.c_void_p])
QUICK = "--quick" in sys.argv
DET = "--det" in sys.argv
BF16 = 1
FP16 = 0


def timeit(fn, iters):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)


def run(b, s, h, d, causal, dtype=torch.bfloat16, det_too=False):
    torch.manual_seed(0)
    dev = "cuda"
    q, k, v, do = (torch.randn(b, s, h, d, device=dev, dtype=dtype) for _ in range(4))
    scale = 1.0 / math.sqrt(d)
    qt, kt, vt, dot = (x.transpose(1, 2) for x in (q, k, v, do))  # (b, h, s, d) views
    fwd = torch.ops.aten._scaled_dot_product_flash_attention(qt, kt, vt, 0.0, causal, False, scale=scale)
    out, lse = fwd[0], fwd[1]
    cq, ck, mq, mk, seed, off = fwd[2], fwd[3], fwd[4], fwd[5], fwd[6], fwd[7]

    def flash_bwd():
        return torch.ops.aten._scaled_dot_product_flash_attention_backward(
            dot, qt, kt, vt, out, lse, cq, ck, mq, mk, 0.0, causal, seed, off, scale=scale)

    o_bshd = out.transpose(1, 2)  # (b, s, h, d) view of flash's output
    lse_c = lse[..., :s].contiguous().float()
    dq = torch.empty_like(q)
    dk = torch.empty_like(k)
    dv = torch.empty_like(v)
    tens = [q, k, v, o_bshd, do, dq, dk, dv]
    ptrs = (ctypes.c_void_p * 8)(*[t.data_ptr() for t in tens])
    strides = (ctypes.c_longlong * 24)(*[st for t in tens for st in (t.stride(0), t.stride(1), t.stride(2))])
    dt = BF16 if dtype == torch.bfloat16 else FP16
    stream = torch.cuda.current_stream().cuda_stream

    def ours_fn(det):
        nb = lib.shim_bwd_workspace(dt, b, s, s, h, h, d, int(causal), -1, -1, det)
        ws = torch.empty(max(nb, 256), dtype=torch.uint8, device=dev)

        def f():
            rc = lib.shim_bwd(ptrs, strides, lse_c.data_ptr(), ws.data_ptr(), dt, b, s, s, h, h, d,
                              int(causal), -1, -1, det, scale, stream)
            if rc != 0:
                raise RuntimeError(f"shim_bwd returned cudaError {rc}")
        return f, nb

    f_ours, nb = ours_fn(0)
    f_ours()
    g_flash = flash_bwd()
    torch.cuda.synchronize()
    errs = []
    for mine, ref in ((dq, g_flash[0].transpose(1, 2)), (dk, g_flash[1].transpose(1, 2)), (dv, g_flash[2].transpose(1, 2))):
        errs.append(((mine.float() - ref.float()).abs().max() / ref.float().abs().max()).item())
    flops = 10.0 * b * h * s * s * d * (0.5 if causal else 1.0)
    iters = 10 if s >= 8192 else 20
    t_ours = timeit(f_ours, iters)
    t_flash = timeit(flash_bwd, iters)
    res = dict(b=b, s=s, h=h, d=d, causal=causal, ms_ours=t_ours, ms_flash=t_flash,
               tf_ours=flops / t_ours / 1e9, tf_flash=flops / t_flash / 1e9, errs=errs, ws_mb=nb / 2**20)
    if det_too:
        f_det, nbd = ours_fn(1)
        f_det()
        torch.cuda.synchronize()
        g1 = [x.clone() for x in (dq, dk, dv)]
        f_det()
        torch.cuda.synchronize()
        same = all(torch.equal(x, y) for x, y in zip(g1, (dq, dk, dv)))
        t_det = timeit(f_det, iters)
        res.update(ms_det=t_det, tf_det=flops / t_det / 1e9, det_same=same, ws_det_mb=nbd / 2**20)
    return res


def profile(d, s, causal):
    b, h = 16384 // s, 2048 // d
    dev = "cuda"
    q, k, v, do, o = (torch.randn(b, s, h, d, device=dev, dtype=torch.bfloat16) for _ in range(5))
    lse = torch.randn(b, h, s, device=dev, dtype=torch.float32) + 8.0
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    tens = [q, k, v, o, do, dq, dk, dv]
    ptrs = (ctypes.c_void_p * 8)(*[t.data_ptr() for t in tens])
    strides = (ctypes.c_longlong * 24)(*[st for t in tens for st in (t.stride(0), t.stride(1), t.stride(2))])
    nb = lib.shim_bwd_workspace(BF16, b, s, s, h, h, d, causal, -1, -1, 0)
    ws = torch.empty(max(nb, 256), dtype=torch.uint8, device=dev)
    for _ in range(4):
        lib.shim_bwd(ptrs, strides, lse.data_ptr(), ws.data_ptr(), BF16, b, s, s, h, h, d, causal, -1, -1, 0,
                     1.0 / math.sqrt(d), torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()


def main():
    if "--profile" in sys.argv:
        i = sys.argv.index("--profile")
        profile(int(sys.argv[i + 1]), int(sys.argv[i + 2]), int(sys.argv[i + 3]))
        return
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    rows = []
    seqs = [512, 2048, 16384] if QUICK else [512, 1024, 2048, 4096, 8192, 16384]
    for d in (64, 128):
        for causal in (False, True):
            for s in seqs:
                b = 16384 // s
                h = 2048 // d
                r = run(b, s, h, d, causal, det_too=DET)
                rows.append(r)
                line = (f"bwd d{d} {'causal' if causal else 'full  '} b{b:2d} h{h:2d} s{s:5d}: "
                        f"ours {r['ms_ours']:8.3f} ms {r['tf_ours']:6.1f} TF/s | flash {r['ms_flash']:8.3f} ms "
                        f"{r['tf_flash']:6.1f} TF/s | ratio {r['tf_ours'] / r['tf_flash']:5.2f} | "
                        f"rel.diff dq {r['errs'][0]:.1e} dk {r['errs'][1]:.1e} dv {r['errs'][2]:.1e}")
                if DET:
                    line += (f" | det {r['ms_det']:8.3f} ms {r['tf_det']:6.1f} TF/s "
                             f"({r['ms_det'] / r['ms_ours']:.2f}x) same={r['det_same']} ws {r['ws_det_mb']:.0f} MB")
                print(line, flush=True)
    print("SUMMARY (TFLOP/s ours / flash):")
    for r in rows:
        print(f"  d{r['d']:3d} {'c' if r['causal'] else 'n'} s{r['s']:5d}: {r['tf_ours']:6.1f} / {r['tf_flash']:6.1f}"
              + (f"  det {r['tf_det']:6.1f}" if DET else ""))


if __name__ == "__main__":
    main()
