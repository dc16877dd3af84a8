"""Synthetic training data for the training bench: token sequences from a fixed random Markov chain.

A model trained on them has something to learn, so its loss falls during a short run (and the
loss curves of two attention implementations can be compared where they move), and nothing is
downloaded. The chain: every token of a vocabulary of V has `branching` distinct successors,
drawn uniformly, with probabilities softmax(temperature * N(0, 1)); all of it from one seed
(torch's CPU generator, so the same seed gives the same chain and the same sequences on any
machine). A sequence starts at a uniformly drawn token.

The best mean loss a model can reach on sequences of length S (next-token cross-entropy over
positions 1..S-1, as transformers' causal-LM loss) is
    (1 / (S-1)) * sum_{t=0}^{S-2} sum_i P(x_t = i) * H_i,
where H_i is the entropy of token i's successors and P(x_0) is uniform: at most log(branching),
far below the log(V) of an untrained model. `optimal_loss` computes it.
"""
import math

__all__ = ["MarkovChain"]


class MarkovChain:
    """A sparse random Markov chain over `vocab` tokens; torch tensors on the CPU.

    successors: [V, branching] int64, distinct within a row; probs: [V, branching] float64,
    rows summing to 1."""

    def __init__(self, vocab, branching=4, temperature=1.0, seed=0):
        import torch
        if vocab < 2 or not 1 <= branching <= vocab:
            raise ValueError(f"MarkovChain: need vocab >= 2 and 1 <= branching <= vocab, "
                             f"got vocab={vocab}, branching={branching}")
        self.vocab, self.branching, self.seed = int(vocab), int(branching), int(seed)
        g = torch.Generator().manual_seed(self.seed)
        succ = torch.randint(self.vocab, (self.vocab, self.branching), generator=g)
        while True:  # redraw rows that name a successor twice (rare when branching << vocab)
            s, _ = succ.sort(dim=1)
            dup = (s[:, 1:] == s[:, :-1]).any(dim=1) if self.branching > 1 else \
                torch.zeros(self.vocab, dtype=torch.bool)
            n = int(dup.sum())
            if n == 0:
                break
            if self.branching * 2 > self.vocab:  # dense rows: permutations, not redraws
                succ[dup] = torch.stack([torch.randperm(self.vocab, generator=g)[:self.branching]
                                         for _ in range(n)])
            else:
                succ[dup] = torch.randint(self.vocab, (n, self.branching), generator=g)
        self.successors = succ
        logits = torch.randn(self.vocab, self.branching, generator=g, dtype=torch.float64)
        self.probs = torch.softmax(logits * temperature, dim=1)
        cdf = self.probs.cumsum(dim=1)
        cdf[:, -1] = 1.0
        self._cdf = cdf

    def row_entropy(self):
        """[V] float64: the entropy (nats) of each token's next-token distribution."""
        import torch
        p = self.probs
        return -(p * torch.log(p.clamp_min(1e-300))).sum(dim=1)

    def step_distribution(self, dist):
        """The distribution of x_{t+1} given that of x_t ([V] float64)."""
        import torch
        out = torch.zeros(self.vocab, dtype=torch.float64)
        return out.index_add_(0, self.successors.reshape(-1),
                              (dist[:, None] * self.probs).reshape(-1))

    def optimal_loss(self, seqlen):
        """The mean next-token loss (nats) of the true chain on sequences of `seqlen` tokens
        started uniformly: the floor a model's training loss approaches."""
        import torch
        if seqlen < 2:
            raise ValueError(f"optimal_loss: seqlen must be >= 2, got {seqlen}")
        h = self.row_entropy()
        dist = torch.full((self.vocab,), 1.0 / self.vocab, dtype=torch.float64)
        total = 0.0
        for _ in range(seqlen - 1):
            total += float((dist * h).sum())
            dist = self.step_distribution(dist)
        return total / (seqlen - 1)

    @property
    def log_vocab(self):
        return math.log(self.vocab)

    def sample(self, n, seqlen, seed=0):
        """[n, seqlen] int64 CPU tensor of sequences from the chain; the same (chain, n, seqlen,
        seed) always gives the same tensor."""
        import torch
        if n < 1 or seqlen < 1:
            raise ValueError(f"sample: need n >= 1 and seqlen >= 1, got n={n}, seqlen={seqlen}")
        g = torch.Generator().manual_seed(int(seed))
        x = torch.empty(n, seqlen, dtype=torch.int64)
        x[:, 0] = torch.randint(self.vocab, (n,), generator=g)
        u = torch.rand(max(seqlen - 1, 1), n, generator=g, dtype=torch.float64)  # [step, row]
        last = self.branching - 1
        for t in range(1, seqlen):
            prev = x[:, t - 1]
            j = torch.searchsorted(self._cdf[prev], u[t - 1].unsqueeze(1), right=True).squeeze(1)
            x[:, t] = self.successors[prev, j.clamp_(max=last)]
        return x

    def describe(self):
        return (f"Markov chain: vocab {self.vocab}, {self.branching} successors a token, "
                f"seed {self.seed}")
