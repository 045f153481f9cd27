"""The output softmax over the vocabulary (``BiLM.softmax``, shared by both directions): full, or
sampled (Jean et al. 2015, bilm-tf's ``sampled_softmax_loss``): the true word against
``n_negatives`` words drawn from a Zipf-like proposal, each logit corrected by the log of its
expected count, accidental hits removed. A training surrogate only: perplexity is always exact.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn

# Rows per chunk when exact logits for a large vocabulary would not fit at once.
MAX_LOGITS_PER_CHUNK = 1 << 24


class LogUniformSampler:
    """Draws ids with ``P(k) = log((k + 2) / (k + 1)) / log(V + 1)``, which fits word
    frequencies when ids are sorted by decreasing count (ours are)."""

    def __init__(self, vocab_size: int) -> None:
        if vocab_size < 1:
            raise ValueError("The sampler needs a non-empty vocabulary")
        self.vocab_size = vocab_size
        self.log_range = math.log(vocab_size + 1)

    def sample(self, n: int, generator: Optional[torch.Generator] = None) -> torch.Tensor:
        """``n`` ids drawn with replacement (by inverting the CDF: O(n), not O(V))."""
        uniform = torch.rand(n, generator=generator, dtype=torch.float64)
        ids = torch.exp(uniform * self.log_range).floor().long() - 1
        return ids.clamp_(0, self.vocab_size - 1)

    def log_probability(self, ids: torch.Tensor) -> torch.Tensor:
        ids = ids.to(torch.float64)
        return (torch.log1p(1.0 / (ids + 1.0)) / self.log_range).log().to(torch.float32)


def full_softmax_nll(hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor) -> torch.Tensor:
    """Exact negative log-likelihood of each row's target, ``(N,)``, in float32."""
    logits = output(hidden).float()
    return nn.functional.cross_entropy(logits, targets, reduction="none")


def exact_nll_sum(hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor) -> torch.Tensor:
    """The summed exact NLL, in row chunks so a large vocabulary never needs (N, V) at once."""
    rows = max(1, MAX_LOGITS_PER_CHUNK // max(1, output.out_features))
    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, hidden.shape[0], rows):
        total = total + full_softmax_nll(hidden[start : start + rows], output, targets[start : start + rows]).sum()
    return total


def sampled_softmax_nll(
    hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor, negatives: torch.Tensor, sampler: LogUniformSampler
) -> torch.Tensor:
    """Sampled-softmax NLL of each row's target against the shared ``negatives``, ``(N,)``."""
    n_rows = targets.shape[0]
    log_draws = math.log(negatives.shape[0])  # each logit less the log of its expected count
    log_expected_true, log_expected_neg = (
        sampler.log_probability(i).to(hidden.device) + log_draws for i in (targets, negatives)
    )
    # One gather for targets and negatives: each gather's backward fills a (V, P) gradient.
    ids = torch.cat([targets, negatives])
    weight, bias = output.weight[ids], output.bias[ids]
    true_logits = (hidden * weight[:n_rows]).sum(-1).float() + bias[:n_rows].float() - log_expected_true
    neg_logits = nn.functional.linear(hidden, weight[n_rows:], bias[n_rows:]).float() - log_expected_neg[None, :]
    neg_logits = neg_logits.masked_fill(negatives[None, :] == targets[:, None], float("-inf"))
    logits = torch.cat([true_logits[:, None], neg_logits], dim=1)
    return torch.logsumexp(logits, dim=1) - true_logits


class SoftmaxLoss:
    """Chooses full or sampled softmax for training; evaluation is always exact."""

    def __init__(self, vocab_size: int, n_negatives: int = 0, seed: int = 0) -> None:
        self.vocab_size = vocab_size
        self.sampled = 0 < n_negatives < vocab_size
        self.n_negatives = n_negatives
        self.sampler = LogUniformSampler(vocab_size) if self.sampled else None
        self.generator = torch.Generator().manual_seed(seed)

    def training_nll_sum(self, hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor) -> torch.Tensor:
        """The sampled surrogate (fresh negatives on every call), or the exact NLL, summed."""
        if self.sampler is None:
            return exact_nll_sum(hidden, output, targets)
        negatives = self.sampler.sample(self.n_negatives, self.generator).to(hidden.device)
        return sampled_softmax_nll(hidden, output, targets, negatives, self.sampler).sum()
