"""Full and sampled softmax over the shared output layer."""

from __future__ import annotations

import math

import torch
from torch import nn

from spacy_elmo.pretrain import softmax as softmax_module
from spacy_elmo.pretrain.softmax import (
    LogUniformSampler,
    SoftmaxLoss,
    exact_nll_sum,
    full_softmax_nll,
    sampled_softmax_nll,
)


def layer(vocab_size=50, dim=8, seed=0):
    torch.manual_seed(seed)
    return nn.Linear(dim, vocab_size)


def test_sampler_follows_the_log_uniform_distribution():
    sampler = LogUniformSampler(20)
    draws = sampler.sample(200_000, torch.Generator().manual_seed(0))
    assert draws.min() >= 0 and draws.max() < 20
    observed = torch.bincount(draws, minlength=20).double() / draws.numel()
    expected = sampler.log_probability(torch.arange(20)).double().exp()
    assert math.isclose(float(expected.sum()), 1.0, rel_tol=1e-6)
    torch.testing.assert_close(observed, expected, atol=3e-3, rtol=0)


def test_exact_nll_in_chunks_equals_one_pass(monkeypatch):
    output = layer()
    hidden, targets = torch.randn(37, 8), torch.randint(0, 50, (37,))
    whole = full_softmax_nll(hidden, output, targets).sum()
    monkeypatch.setattr(softmax_module, "MAX_LOGITS_PER_CHUNK", 50 * 4)
    torch.testing.assert_close(exact_nll_sum(hidden, output, targets), whole)


def test_sampled_loss_matches_the_formula_with_accidental_hits_removed():
    output = layer()
    sampler = LogUniformSampler(50)
    hidden, targets = torch.randn(2, 8), torch.tensor([0, 3])
    negatives = torch.tensor([0, 1, 7, 7])
    nll = sampled_softmax_nll(hidden, output, targets, negatives, sampler).detach()
    with torch.no_grad():
        scores = output(hidden)
        log_expected = sampler.log_probability(torch.arange(50)) + math.log(4)
        for row, target in enumerate(targets.tolist()):
            true = scores[row, target] - log_expected[target]
            others = [scores[row, n] - log_expected[n] for n in negatives.tolist() if n != target]
            expected = torch.logsumexp(torch.stack([true, *others]), 0) - true
            torch.testing.assert_close(nll[row], expected)


def test_sampled_gradient_points_the_way_the_full_gradient_does():
    """With many draws the sampled softmax is a consistent estimator: same gradient direction."""
    output = layer(vocab_size=30)
    hidden, targets = torch.randn(64, 8), torch.randint(0, 30, (64,))
    full = torch.autograd.grad(full_softmax_nll(hidden, output, targets).mean(), output.weight)[0]
    sampler = LogUniformSampler(30)
    negatives = sampler.sample(5000, torch.Generator().manual_seed(0))
    sampled_loss = sampled_softmax_nll(hidden, output, targets, negatives, sampler).mean()
    sampled = torch.autograd.grad(sampled_loss, output.weight)[0]
    assert nn.functional.cosine_similarity(full.flatten(), sampled.flatten(), dim=0) > 0.95


def test_full_softmax_is_used_when_negatives_cover_the_vocabulary():
    assert not SoftmaxLoss(10, n_negatives=0).sampled
    assert not SoftmaxLoss(10, n_negatives=10).sampled
    assert SoftmaxLoss(10, n_negatives=4).sampled


def test_training_takes_the_sampled_loss_with_fresh_negatives_or_the_exact_one():
    output = layer(vocab_size=40)
    hidden, targets = torch.randn(30, 8), torch.randint(0, 40, (30,))
    loss = SoftmaxLoss(40, n_negatives=7, seed=3)
    first, second = loss.training_nll_sum(hidden, output, targets), loss.training_nll_sum(hidden, output, targets)
    loss.generator.manual_seed(3)
    negatives = loss.sampler.sample(7, loss.generator)
    torch.testing.assert_close(first, sampled_softmax_nll(hidden, output, targets, negatives, loss.sampler).sum())
    assert not torch.equal(first, second)  # other negatives on the second call
    exact = SoftmaxLoss(40).training_nll_sum(hidden, output, targets)
    torch.testing.assert_close(exact, full_softmax_nll(hidden, output, targets).sum())
