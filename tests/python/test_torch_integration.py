"""The custom ops as torch sees them: opcheck, torch.compile(fullgraph=True), CUDA graph capture,
fake tensors (these last run without a GPU)."""
import pytest

from conftest import STRICT
from helpers import randn, requires_cuda, skip_if_kernel_missing, torch

import cudadent

from torch._subclasses.fake_tensor import FakeTensorMode


def _qkv(B=2, Sq=128, Sk=128, Hq=4, Hkv=2, D=64, dtype=torch.bfloat16, grad=True, seed=0):
    q = randn((B, Sq, Hq, D), dtype, seed)
    k = randn((B, Sk, Hkv, D), dtype, seed + 1)
    v = randn((B, Sk, Hkv, D), dtype, seed + 2)
    return tuple(t.requires_grad_(grad) for t in (q, k, v))


# ---- without a GPU: fake tensors -----------------------------------------------------------------

def test_fake_shapes_without_gpu():
    with FakeTensorMode():
        q = torch.empty(2, 100, 8, 64, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(2, 70, 2, 64, dtype=torch.bfloat16, device="cuda")
        out, lse = torch.ops.cudadent.attn_fwd(q, k, k, 0.125, True, -1, -1, False)
        assert out.shape == (2, 100, 8, 64) and out.is_contiguous() and out.dtype == q.dtype
        assert lse.shape == (2, 8, 100) and lse.dtype == torch.float32
        qt = torch.empty(2, 8, 100, 64, dtype=torch.bfloat16, device="cuda").transpose(1, 2)
        dq, dk, dv = torch.ops.cudadent.attn_bwd(out, qt, k, k, out, lse, 0.125)
        assert dq.stride() == qt.stride() and dk.shape == k.shape


def test_fake_shapes_head_dim_v_and_softcap_without_gpu():
    """v's head dim may differ from q/k's: out and dout have v's, dv has v's shape; the fake
    implementations agree (torch.compile traces them)."""
    with FakeTensorMode():
        q = torch.empty(2, 100, 8, 192, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(2, 70, 2, 192, dtype=torch.bfloat16, device="cuda")
        v = torch.empty(2, 70, 2, 128, dtype=torch.bfloat16, device="cuda")
        out, lse = torch.ops.cudadent.attn_fwd(q, k, v, 0.07, True, -1, -1, False, 30.0)
        assert out.shape == (2, 100, 8, 128) and lse.shape == (2, 8, 100)
        dq, dk, dv = torch.ops.cudadent.attn_bwd(out, q, k, v, out, lse, 0.07, True, -1, -1,
                                                 False, 30.0)
        assert dq.shape == q.shape and dk.shape == k.shape and dv.shape == v.shape
        with pytest.raises(cudadent.ShapeError, match=r"dout has shape .*head_dim_v"):
            torch.ops.cudadent.attn_bwd(q, q, k, v, out, lse, 0.07)


def test_export_has_no_graph_break_without_gpu():
    class M(torch.nn.Module):
        def forward(self, q, k, v):
            return cudadent.attention(q, k, v, causal=True) * 2

    with FakeTensorMode(allow_non_fake_inputs=True):
        q = torch.empty(2, 64, 4, 64, dtype=torch.bfloat16, device="cuda")
        k = torch.empty(2, 64, 2, 64, dtype=torch.bfloat16, device="cuda")
        v = torch.empty(2, 64, 2, 64, dtype=torch.bfloat16, device="cuda")
        ep = torch.export.export(M(), (q, k, v))
    targets = [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]
    assert "cudadent.attn_fwd.default" in targets


# ---- on a GPU ------------------------------------------------------------------------------------

def _call_or_skip(fn):
    try:
        return fn()
    except cudadent.CudadentError as e:
        skip_if_kernel_missing(e)


@requires_cuda
@pytest.mark.parametrize("causal,window", [(False, (-1, -1)), (True, (-1, -1)), (False, (16, 8))])
def test_opcheck_attn_fwd(causal, window):
    args = (0.125, causal, window[0], window[1], True)
    q, k, v = _qkv(grad=False)
    _call_or_skip(lambda: cudadent.attention(q, k, v, causal=causal, window=window))
    torch.library.opcheck(torch.ops.cudadent.attn_fwd.default, (q, k, v) + args)
    # with gradients (the autograd formula; deterministic=True: opcheck compares two runs)
    q, k, v = (t.detach().requires_grad_(True) for t in (q, k, v))
    _call_or_skip(lambda: cudadent.attention(q, k, v, causal=causal, window=window).sum()
                  .backward())
    torch.library.opcheck(torch.ops.cudadent.attn_fwd.default, (q, k, v) + args)


@requires_cuda
def test_opcheck_attn_bwd():
    q, k, v = _qkv(grad=False)
    out, lse = _call_or_skip(lambda: torch.ops.cudadent.attn_fwd(q, k, v, 0.125, True, -1, -1,
                                                                 True))
    dout = randn(out.shape, out.dtype, 5)
    _call_or_skip(lambda: torch.ops.cudadent.attn_bwd(dout, q, k, v, out, lse, 0.125, True))
    torch.library.opcheck(torch.ops.cudadent.attn_bwd.default,
                          (dout, q, k, v, out, lse, 0.125, True, -1, -1, True))


@requires_cuda
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_compile_fullgraph_forward_and_backward(dynamic):
    torch._dynamo.reset()

    def loss_fn(q, k, v):
        out = cudadent.attention(q, k, v, causal=True, deterministic=True)
        return (out.float() ** 2).mean()

    # forward only (inference graph)
    compiled = torch.compile(loss_fn, fullgraph=True, dynamic=dynamic)
    for seqlen in (128, 192):  # a second shape: recompiles (static) or reuses (dynamic)
        q, k, v = _qkv(Sq=seqlen, Sk=seqlen, seed=seqlen, grad=False)
        ref = _call_or_skip(lambda: loss_fn(q, k, v))
        torch.testing.assert_close(compiled(q, k, v), ref)
    # forward and backward (training graph)
    torch._dynamo.reset()
    compiled = torch.compile(loss_fn, fullgraph=True, dynamic=dynamic)
    for seqlen in (128, 192):
        q, k, v = _qkv(Sq=seqlen, Sk=seqlen, seed=seqlen)
        ref = loss_fn(q, k, v)
        ref_grads = _call_or_skip(lambda: torch.autograd.grad(ref, (q, k, v)))
        got = compiled(q, k, v)
        grads = torch.autograd.grad(got, (q, k, v))
        torch.testing.assert_close(got, ref)
        for a, b in zip(grads, ref_grads):
            torch.testing.assert_close(a, b, atol=2e-3, rtol=2e-2)


@requires_cuda
def test_compile_flash_attn_func_and_strided_qkv():
    torch._dynamo.reset()

    def f(x, w):
        B, S, _ = x.shape
        qkv = (x @ w).view(B, S, 3, 4, 64)
        q, k, v = qkv.unbind(2)
        return cudadent.flash_attn_func(q, k, v, causal=True).sum()

    x = randn((2, 96, 256), torch.bfloat16, 1)
    w = randn((256, 768), torch.bfloat16, 2).mul_(0.05).requires_grad_(True)
    ref = _call_or_skip(lambda: f(x, w))
    (gw_ref,) = _call_or_skip(lambda: torch.autograd.grad(ref, (w,)))
    got = torch.compile(f, fullgraph=True)(x, w)
    (gw,) = torch.autograd.grad(got, (w,))
    torch.testing.assert_close(got, ref, atol=1e-1, rtol=1e-2)
    torch.testing.assert_close(gw, gw_ref, atol=1e-1, rtol=5e-2)


# head_dim_v != head_dim with softcap (issue 27's kernels), and a head dim the package pads (59):
# compiled with fullgraph=True, forward and backward, against eager; and captured in a CUDA graph.
COMPILE_DIMS = [(192, 128, 30.0), (59, 59, 0.0)]


@requires_cuda
@pytest.mark.parametrize("D,Dv,softcap", COMPILE_DIMS, ids=["d192v128-cap30", "d59-padded"])
def test_compile_fullgraph_head_dims_and_softcap(D, Dv, softcap):
    torch._dynamo.reset()

    def loss_fn(q, k, v):
        out = cudadent.flash_attn_func(q, k, v, causal=True, softcap=softcap, deterministic=True)
        return (out.float() ** 2).mean()

    q = randn((2, 96, 4, D), torch.bfloat16, 40).requires_grad_(True)
    k = randn((2, 96, 2, D), torch.bfloat16, 41).requires_grad_(True)
    v = randn((2, 96, 2, Dv), torch.bfloat16, 42).requires_grad_(True)
    ref = _call_or_skip(lambda: loss_fn(q, k, v))
    ref_grads = _call_or_skip(lambda: torch.autograd.grad(ref, (q, k, v)))
    got = torch.compile(loss_fn, fullgraph=True)(q, k, v)
    grads = torch.autograd.grad(got, (q, k, v))
    torch.testing.assert_close(got, ref)
    for a, b in zip(grads, ref_grads):
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, atol=2e-3, rtol=2e-2)


def _replay_equals_eager(step, refills):
    """Capture step() in a CUDA graph (after a warm-up on the capture stream), write new inputs
    into the same memory (refills: (tensor, seed) pairs), replay, and assert the graph's outputs
    equal an eager step()'s bit for bit."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up outside capture, on the capture stream
        step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static = step()
    with torch.no_grad():
        for t, seed in refills:
            t.copy_(randn(t.shape, t.dtype, seed))
    g.replay()
    torch.cuda.synchronize()
    eager = step()
    for a, b in zip(static, eager):
        assert torch.equal(a, b)


@requires_cuda
@pytest.mark.parametrize("D,Dv,softcap", COMPILE_DIMS, ids=["d192v128-cap30", "d59-padded"])
def test_cuda_graph_capture_head_dims_and_softcap(D, Dv, softcap):
    q, k = (randn((2, 80, 4 // h, D), torch.bfloat16, 50 + h).requires_grad_(True)
            for h in (1, 2))
    v = randn((2, 80, 2, Dv), torch.bfloat16, 53).requires_grad_(True)
    dout = randn((2, 80, 4, Dv), torch.bfloat16, 54)

    def step():
        out = cudadent.flash_attn_func(q, k, v, causal=True, softcap=softcap, deterministic=True)
        return (out,) + torch.autograd.grad(out, (q, k, v), dout)

    _call_or_skip(step)
    _replay_equals_eager(step, ((q, 60), (k, 61), (v, 62), (dout, 63)))


@requires_cuda
def test_cuda_graph_capture_forward_and_backward():
    q, k, v = _qkv(seed=3)
    dout = randn(q.shape, q.dtype, 4)
    backward = False

    def step():
        out = cudadent.attention(q, k, v, causal=True, deterministic=True)
        if not backward:
            return (out,)
        return (out,) + torch.autograd.grad(out, (q, k, v), dout)

    with torch.no_grad():
        _call_or_skip(step)
    backward = True
    try:
        step()
    except cudadent.CudadentError as e:
        if STRICT or not isinstance(e, (cudadent.UnsupportedArchError,
                                        cudadent.UnsupportedFeatureError,
                                        cudadent.UnsupportedHeadDimError)):
            raise
        backward = False  # no backward kernel built: capture the forward alone
    _replay_equals_eager(step, ((q, 10), (k, 11), (v, 12), (dout, 13)))


@requires_cuda
def test_runs_on_current_stream_and_device_guard():
    q, k, v = _qkv(grad=False, seed=7)
    ref = _call_or_skip(lambda: cudadent.attention(q, k, v))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out = cudadent.attention(q, k, v)
    s.synchronize()
    assert torch.equal(out, ref)


@requires_cuda
def test_eager_fast_path_matches_the_custom_op():
    """attention() in eager mode skips the dispatcher (ops.attention_fwd); the results are the
    op's, bit for bit."""
    from cudadent import ops
    q, k, v = _qkv(seed=21)
    dout = randn(q.shape, q.dtype, 22)
    results = {}
    try:
        for fast in (True, False):
            ops.EAGER_FAST_PATH = fast
            out, lse = cudadent.attention(q, k, v, causal=True, deterministic=True,
                                          return_lse=True)
            assert ("EagerAttention" in type(out.grad_fn).__name__) == fast
            results[fast] = (out, lse) + _call_or_skip(
                lambda: torch.autograd.grad(out, (q, k, v), dout))
    finally:
        ops.EAGER_FAST_PATH = True
    for a, b in zip(results[True], results[False]):
        assert torch.equal(a, b)


@requires_cuda
@pytest.mark.parametrize("grad", [False, True])
def test_repeated_signature_reads_new_data(poison_outputs, monkeypatch, grad):
    """Calls of one signature after the first take the launch-parameter cache (ops.py): each
    call must read its own inputs and write its own outputs (fresh data, fresh output buffers,
    an input at another address with the same layout), forward and backward, each against its
    own float64 reference. Only the first call of a signature runs the Python checks."""
    from cudadent import ops
    from helpers import attention_ref, check_criterion
    scale = 0.125
    ops.clear_launch_caches()
    full_path = {"fwd": 0, "bwd": 0}
    check_qkv, check_bwd_extra = ops.check_qkv, ops.check_bwd_extra

    def counted_check_qkv(*a):
        full_path["fwd"] += 1
        return check_qkv(*a)

    def counted_check_bwd_extra(*a):
        full_path["bwd"] += 1
        full_path["fwd"] -= 1  # the backward's full path checks q, k, v too
        return check_bwd_extra(*a)
    monkeypatch.setattr(ops, "check_qkv", counted_check_qkv)
    monkeypatch.setattr(ops, "check_bwd_extra", counted_check_bwd_extra)
    for seed in (0, 10, 20):
        q, k, v = _qkv(B=2, Sq=130, Sk=200, Hq=4, Hkv=2, D=64, dtype=torch.float16, grad=grad,
                       seed=seed)
        out, lse = _call_or_skip(lambda: cudadent.attention(q, k, v, causal=True,
                                                            return_lse=True))
        ref, ref_lse = attention_ref(q, k, v, scale, causal=True)
        lowp, _ = attention_ref(q, k, v, scale, causal=True, dtype=q.dtype)
        case = f"seed {seed} grad {grad}"
        check_criterion("repeated_signature", case, "o", out, ref, lowp)
        assert float((lse.double() - ref_lse).abs().max()) < 1e-3, case
        if grad:
            dout = randn(out.shape, out.dtype, seed + 7)
            dq, dk, dv = torch.autograd.grad(out, (q, k, v), dout)
            qd, kd, vd = (t.detach().double().requires_grad_(True) for t in (q, k, v))
            rq, rk, rv = torch.autograd.grad(attention_ref(qd, kd, vd, scale, causal=True)[0],
                                             (qd, kd, vd), dout.double())
            ql, kl, vl = (t.detach().requires_grad_(True) for t in (q, k, v))
            lq, lk, lv = torch.autograd.grad(
                attention_ref(ql, kl, vl, scale, causal=True, dtype=q.dtype)[0], (ql, kl, vl), dout)
            for name, x, r, lp in (("dq", dq, rq, lq), ("dk", dk, rk, lk), ("dv", dv, rv, lv)):
                check_criterion("repeated_signature", case, name, x, r, lp)
    # the first forward (and backward) of the signature took the full path, the other two the cache
    assert full_path == {"fwd": 1, "bwd": 1 if grad else 0}, full_path


@requires_cuda
def test_threads_share_no_prepared_launch():
    """Two threads calling one signature at once (the launch-parameter caches are per thread,
    ops.py): each thread's outputs, forward and backward, are bitwise those of the same inputs
    run alone on the main thread, on each thread's own stream."""
    import threading
    results, errors = {}, []
    inputs = {t: _qkv(B=2, Sq=200, Sk=200, Hq=4, Hkv=2, D=64, seed=10 * t) for t in range(2)}
    douts = {t: randn((2, 200, 4, 64), torch.bfloat16, 100 + t) for t in range(2)}

    def run(t, reps):
        q, k, v = inputs[t]
        # deterministic: the backward's dQ is then bit-reproducible
        out = _call_or_skip(lambda: cudadent.attention(q, k, v, causal=True, deterministic=True))
        for _ in range(reps - 1):  # the later calls of the signature take the prepared launch
            out = cudadent.attention(q, k, v, causal=True, deterministic=True)
        return (out,) + torch.autograd.grad(out, (q, k, v), douts[t])

    alone = {t: run(t, 1) for t in range(2)}
    torch.cuda.synchronize()

    def worker(t):
        try:
            stream = torch.cuda.Stream()
            with torch.cuda.stream(stream):
                results[t] = run(t, 50)
            stream.synchronize()
        except Exception as e:  # reported below: an exception in a thread does not fail the test
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for t in range(2):
        for name, a, b in zip(("out", "dq", "dk", "dv"), results[t], alone[t]):
            assert torch.equal(a, b), f"thread {t}: {name} differs from the single-thread run"
