"""The output softmax over the vocabulary (``BiLM.softmax``, shared by both directions): full,
or sampled with a log-uniform proposal.

The sampled softmax (Jean et al. 2015, bilm-tf's ``tf.nn.sampled_softmax_loss``) scores the true
word against ``n_negatives`` words drawn from a Zipf-like distribution, each logit corrected by
the log of its expected count, accidental hits removed. It is a training surrogate only:
perplexity is always the exact full softmax's.
"""

from __future__ import annotations

import math
from typing import Optional

import torch
from torch import nn
from torch.autograd.function import once_differentiable

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


class _FusedSoftmaxNllSum(torch.autograd.Function):
    """Summed full-softmax NLL whose gradients are computed in the forward pass: the loss ends the
    graph, so the logits' gradient (``softmax - onehot``) is known with them, and each block of rows
    is done while in cache, never materialising ``(N, V)``. The backward pass only scales."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets):  # type: ignore[override]
        with torch.autocast(hidden.device.type, enabled=False):
            h32, w32, b32 = hidden.float(), weight.float(), bias.float()
            grad_hidden = torch.empty_like(h32)
            grad_weight = torch.zeros_like(w32)
            grad_bias = torch.zeros_like(b32)
            total = torch.zeros((), dtype=torch.float64, device=hidden.device)
            rows = max(32, min(512, (1 << 22) // max(1, weight.shape[0])))
            for start in range(0, h32.shape[0], rows):
                block, block_targets = h32[start : start + rows], targets[start : start + rows, None]
                probs = torch.addmm(b32, block, w32.t())
                probs.sub_(probs.amax(dim=1, keepdim=True)).exp_()
                norm = probs.sum(dim=1, keepdim=True)
                total += (norm.log() - probs.gather(1, block_targets).log()).sum(dtype=torch.float64)
                probs.div_(norm)
                probs.scatter_add_(1, block_targets, probs.new_full(block_targets.shape, -1.0))
                torch.mm(probs, w32, out=grad_hidden[start : start + rows])
                grad_weight.addmm_(probs.t(), block)
                grad_bias.add_(probs.sum(dim=0))
        ctx.save_for_backward(grad_hidden, grad_weight, grad_bias)
        ctx.dtypes = (hidden.dtype, weight.dtype, bias.dtype)
        return total.float()

    @staticmethod
    def backward(ctx, grad_total):  # type: ignore[override]
        grad_hidden, grad_weight, grad_bias = ctx.saved_tensors
        hidden_dtype, weight_dtype, bias_dtype = ctx.dtypes
        return (
            (grad_hidden * grad_total).to(hidden_dtype),
            (grad_weight * grad_total).to(weight_dtype),
            (grad_bias * grad_total).to(bias_dtype),
            None,
        )


def fused_full_softmax_nll_sum(hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor) -> torch.Tensor:
    """``full_softmax_nll(...).sum()``, faster and in less memory (see :class:`_FusedSoftmaxNllSum`)."""
    return _FusedSoftmaxNllSum.apply(hidden, output.weight, output.bias, targets)


def exact_nll_sum(hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor) -> torch.Tensor:
    """The summed exact NLL, in row chunks so a large vocabulary never needs (N, V) at once."""
    rows = max(1, MAX_LOGITS_PER_CHUNK // max(1, output.out_features))
    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, hidden.shape[0], rows):
        total = total + full_softmax_nll(hidden[start : start + rows], output, targets[start : start + rows]).sum()
    return total


def log_expected_counts(
    sampler: LogUniformSampler,
    targets: torch.Tensor,
    negatives: torch.Tensor,
    device: torch.device,
    dtype: Optional[torch.dtype] = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log of how often the draws are expected to hit each target and each negative: the
    correction that makes the sampled logits estimate the full softmax."""
    log_draws = math.log(negatives.shape[0])
    return tuple(  # type: ignore[return-value]
        sampler.log_probability(ids).to(device=device, dtype=dtype) + log_draws for ids in (targets, negatives)
    )


def sampled_softmax_nll(
    hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor, negatives: torch.Tensor, sampler: LogUniformSampler
) -> torch.Tensor:
    """Sampled-softmax NLL of each row's target against the shared ``negatives``, ``(N,)``."""
    n_rows = targets.shape[0]
    log_expected_true, log_expected_neg = log_expected_counts(sampler, targets, negatives, hidden.device)

    # One gather for targets and negatives: each gather's backward fills a (V, P) gradient.
    ids = torch.cat([targets, negatives])
    weight, bias = output.weight[ids], output.bias[ids]
    true_logits = (hidden * weight[:n_rows]).sum(-1).float() + bias[:n_rows].float() - log_expected_true
    neg_logits = nn.functional.linear(hidden, weight[n_rows:], bias[n_rows:]).float() - log_expected_neg[None, :]
    neg_logits = neg_logits.masked_fill(negatives[None, :] == targets[:, None], float("-inf"))
    logits = torch.cat([true_logits[:, None], neg_logits], dim=1)
    return torch.logsumexp(logits, dim=1) - true_logits


class _FusedSampledNllSum(torch.autograd.Function):
    """:func:`sampled_softmax_nll` summed, with its gradients computed in the forward pass (as in
    :class:`_FusedSoftmaxNllSum`); the weight gradient is two ``index_add_`` calls instead of the
    gathers' generic backward."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, targets, negatives, log_expected_true, log_expected_neg):  # type: ignore[override]
        true_weight, neg_weight = weight[targets], weight[negatives]
        true_logits = (hidden * true_weight).sum(-1) + bias[targets] - log_expected_true
        logits = torch.addmm(bias[negatives] - log_expected_neg, hidden, neg_weight.t())
        logits.masked_fill_(negatives[None, :] == targets[:, None], float("-inf"))
        # Log-sum-exp over [true, negatives] per row, and the softmax over them.
        top = torch.maximum(logits.amax(dim=1), true_logits)
        logits.sub_(top[:, None]).exp_()
        true_exp = (true_logits - top).exp()
        norm = logits.sum(dim=1) + true_exp
        total = (norm.log() + top - true_logits).sum(dtype=torch.float64)
        grad_neg = logits.div_(norm[:, None])  # (N, S): d loss / d negative logits
        grad_true = true_exp / norm - 1.0  # (N,)
        grad_hidden = torch.addmm(true_weight * grad_true[:, None], grad_neg, neg_weight)
        grad_weight = torch.zeros_like(weight)
        grad_weight.index_add_(0, targets, hidden * grad_true[:, None])
        grad_weight.index_add_(0, negatives, grad_neg.t() @ hidden)
        grad_bias = torch.zeros_like(bias)
        grad_bias.index_add_(0, targets, grad_true)
        grad_bias.index_add_(0, negatives, grad_neg.sum(dim=0))
        ctx.save_for_backward(grad_hidden, grad_weight, grad_bias)
        ctx.used = False
        return total.to(hidden.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_total):  # type: ignore[override]
        # Scaled in place, not copied: the stored gradients are used up, so a second pass is refused.
        if ctx.used:
            raise RuntimeError("The sampled softmax's backward pass runs once (retain_graph is not supported)")
        ctx.used = True
        grad_hidden, grad_weight, grad_bias = ctx.saved_tensors
        return (
            grad_hidden.mul_(grad_total),
            grad_weight.mul_(grad_total),
            grad_bias.mul_(grad_total),
            None,
            None,
            None,
            None,
        )


def fused_sampled_nll_sum(
    hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor, negatives: torch.Tensor, sampler: LogUniformSampler
) -> torch.Tensor:
    """``sampled_softmax_nll(...).sum()`` with a hand-written backward (same dtype throughout)."""
    log_expected_true, log_expected_neg = log_expected_counts(sampler, targets, negatives, hidden.device, hidden.dtype)
    return _FusedSampledNllSum.apply(
        hidden, output.weight, output.bias, targets, negatives, log_expected_true, log_expected_neg
    )


class SoftmaxLoss:
    """Chooses full or sampled softmax for training; evaluation is always exact."""

    def __init__(self, vocab_size: int, n_negatives: int = 0, seed: int = 0) -> None:
        self.vocab_size = vocab_size
        self.sampled = 0 < n_negatives < vocab_size
        self.n_negatives = n_negatives
        self.sampler = LogUniformSampler(vocab_size) if self.sampled else None
        self.generator = torch.Generator().manual_seed(seed)

    def training_nll_sum(self, hidden: torch.Tensor, output: nn.Linear, targets: torch.Tensor) -> torch.Tensor:
        """Summed training loss of the rows: the sampled surrogate (fresh negatives on every
        call), or the exact NLL."""
        if self.sampler is None:
            return fused_full_softmax_nll_sum(hidden, output, targets)
        negatives = self.sampler.sample(self.n_negatives, self.generator).to(hidden.device)
        same_dtype = hidden.dtype == output.weight.dtype
        if same_dtype and not torch.is_autocast_enabled(hidden.device.type):
            return fused_sampled_nll_sum(hidden, output, targets, negatives, self.sampler)
        return sampled_softmax_nll(hidden, output, targets, negatives, self.sampler).sum()
