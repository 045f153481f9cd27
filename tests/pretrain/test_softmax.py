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


def test_fused_full_softmax_gives_the_same_loss_and_gradients():
    output = layer(vocab_size=300)
    hidden = torch.randn(1000, 8, requires_grad=True)  # several row blocks, the last one partial
    targets = torch.randint(0, 300, (1000,))
    plain = full_softmax_nll(hidden, output, targets).sum() * 0.5
    expected = torch.autograd.grad(plain, [hidden, output.weight, output.bias])
    fused = softmax_module.fused_full_softmax_nll_sum(hidden, output, targets) * 0.5
    actual = torch.autograd.grad(fused, [hidden, output.weight, output.bias])
    torch.testing.assert_close(fused, plain)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-5)
    assert softmax_module.fused_full_softmax_nll_sum(hidden[:0], output, targets[:0]) == 0


def test_fused_sampled_softmax_gives_the_same_loss_and_gradients():
    # Float64 throughout, against the autograd-recorded formula with the same negatives:
    # accidental hits (a negative equal to a target) and repeated negatives included.
    output = layer(vocab_size=40).double()
    sampler = LogUniformSampler(40)
    hidden = torch.randn(30, 8, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 40, (30,))
    negatives = torch.cat([targets[:3], torch.tensor([5, 5, 17, 39])])
    params = [hidden, output.weight, output.bias]
    log_true = sampler.log_probability(targets).double() + math.log(7)
    log_neg = sampler.log_probability(negatives).double() + math.log(7)
    with torch.no_grad():
        hits = negatives[None, :] == targets[:, None]
    true = (hidden * output.weight[targets]).sum(-1) + output.bias[targets] - log_true
    neg = (hidden @ output.weight[negatives].t() + output.bias[negatives] - log_neg).masked_fill(hits, float("-inf"))
    plain = (torch.logsumexp(torch.cat([true[:, None], neg], 1), 1) - true).sum() * 0.5
    expected = torch.autograd.grad(plain, params)
    fused = softmax_module.fused_sampled_nll_sum(hidden, output, targets, negatives, sampler) * 0.5
    actual = torch.autograd.grad(fused, params)
    torch.testing.assert_close(fused, plain, rtol=1e-12, atol=1e-12)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-10, atol=1e-12)
    assert hits.any() and output.weight.grad is None
    # In float32 the training entry point takes it, and agrees with the recorded path.
    loss = SoftmaxLoss(40, n_negatives=7, seed=3)
    layer32, hidden32 = output.float(), hidden.detach().float()
    fused32 = loss.training_nll_sum(hidden32, layer32, targets)
    loss.generator.manual_seed(3)
    negatives32 = loss.sampler.sample(7, loss.generator)
    recorded = sampled_softmax_nll(hidden32, layer32, targets, negatives32, loss.sampler).sum()
    torch.testing.assert_close(recorded, fused32)
