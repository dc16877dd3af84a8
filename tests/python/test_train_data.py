"""The training bench's synthetic data (cudadent.train_data.MarkovChain) and its loss loop, on
the CPU: deterministic, valid, and learnable (the loss of a small model falls well below
log V). Needs torch (CPU is enough); the loss-loop test needs transformers too."""
import math

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

from cudadent.train_data import MarkovChain  # noqa: E402


def test_deterministic():
    a, b = MarkovChain(512, seed=3), MarkovChain(512, seed=3)
    assert torch.equal(a.successors, b.successors) and torch.equal(a.probs, b.probs)
    assert torch.equal(a.sample(4, 64, seed=7), b.sample(4, 64, seed=7))
    assert not torch.equal(a.sample(4, 64, seed=7), a.sample(4, 64, seed=8))
    c = MarkovChain(512, seed=4)
    assert not torch.equal(a.successors, c.successors)


def test_chain_is_a_sparse_transition_matrix():
    chain = MarkovChain(1000, branching=4, seed=0)
    assert chain.successors.shape == (1000, 4) and chain.probs.shape == (1000, 4)
    s, _ = chain.successors.sort(dim=1)
    assert (s[:, 1:] != s[:, :-1]).all(), "a row names a successor twice"
    assert ((chain.successors >= 0) & (chain.successors < 1000)).all()
    assert torch.allclose(chain.probs.sum(dim=1), torch.ones(1000, dtype=torch.float64))
    # a small vocabulary with dense rows still gets distinct successors
    small = MarkovChain(6, branching=5, seed=1)
    assert all(len(set(row.tolist())) == 5 for row in small.successors)


def test_samples_follow_the_chain():
    chain = MarkovChain(64, branching=4, seed=0)
    x = chain.sample(256, 200, seed=1)
    assert x.shape == (256, 200) and x.dtype == torch.int64
    prev, nxt = x[:, :-1].reshape(-1), x[:, 1:].reshape(-1)
    assert (chain.successors[prev] == nxt[:, None]).any(dim=1).all(), "an impossible transition"
    # empirical next-token frequencies of a frequent token match its row of probabilities
    tok = int(torch.bincount(prev, minlength=64).argmax())
    seen = nxt[prev == tok]
    freq = torch.tensor([(seen == s).sum().item() for s in chain.successors[tok]],
                        dtype=torch.float64) / len(seen)
    assert len(seen) > 1000
    assert (freq - chain.probs[tok]).abs().max() < 0.05


def test_learnable_entropy_well_below_log_vocab():
    chain = MarkovChain(4096, branching=4, seed=0)
    h = chain.row_entropy()
    assert (h <= math.log(4) + 1e-9).all()
    best = chain.optimal_loss(2048)
    assert 0.1 < best < 0.25 * chain.log_vocab  # ~1.1 nats against log(4096) = 8.3
    # the first position is the uniform start; later ones follow the chain
    assert chain.optimal_loss(2) == pytest.approx(float(h.mean()))


def test_bad_arguments():
    with pytest.raises(ValueError):
        MarkovChain(1)
    with pytest.raises(ValueError):
        MarkovChain(8, branching=9)
    with pytest.raises(ValueError):
        MarkovChain(8).sample(0, 4)
    with pytest.raises(ValueError):
        MarkovChain(8).optimal_loss(1)


def test_loss_loop_learns_on_cpu():
    """The bench's loss check on the CPU (tiny Llama, fp32, SDPA's CPU kernels and eager): every
    curve falls from about log V, and the two attentions agree to within a few 1e-3."""
    pytest.importorskip("transformers", reason="transformers is not installed")
    from cudadent import train_bench
    out = train_bench.loss_check("tiny", ["sdpa", "eager"], steps=40, device="cpu",
                                 dtype=torch.float32, profile=False)
    assert out["errors"] == {}
    for name in ("sdpa", "eager"):
        curve = out["curves"][name]
        assert len(curve) == 40 and all(math.isfinite(v) for v in curve)
        assert abs(curve[0] - out["log_vocab"]) < 0.5
        assert curve[-1] < curve[0] - 1.5, f"{name}: {curve[0]:.3f} -> {curve[-1]:.3f}"
    diff = max(abs(a - b) for a, b in zip(out["curves"]["sdpa"], out["curves"]["eager"]))
    assert diff < 5e-2
    assert out["agreement"]["passed"] is None  # no cudadent curve on the CPU
