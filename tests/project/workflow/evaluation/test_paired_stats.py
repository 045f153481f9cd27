"""scripts/workflow/evaluation/paired_stats.py on constructed cases whose answer is known."""

from __future__ import annotations

import itertools

import numpy
import pytest

from scripts.workflow.evaluation import paired_stats
from scripts.workflow.evaluation.paired_stats import compare, pair_seeds, verdict


def tagger_counts(correct, total):
    """Rows (correct, total, predicted) with predicted == total (matching tokenization)."""
    correct, total = numpy.asarray(correct), numpy.asarray(total)
    return numpy.stack([correct, total, total], axis=1)


def random_ner(rng, n_docs, n_seeds):
    return {seed: rng.integers(0, 4, size=(n_docs, 3)) for seed in range(n_seeds)}


def test_identical_systems_differ_by_nothing():
    counts = random_ner(numpy.random.default_rng(1), 60, 3)
    result = compare("ner", counts, {seed: c.copy() for seed, c in counts.items()}, resamples=2000, rounds=2000)
    assert result.difference == 0.0
    assert result.p_value == 1.0
    assert result.ci_low <= 0.0 <= result.ci_high
    assert result.verdict == "no significant difference"
    assert result.p_method == "approximate randomization"


def test_better_on_every_document_by_a_constant():
    rng = numpy.random.default_rng(2)
    totals = rng.integers(10, 30, size=80)
    baseline = {seed: tagger_counts(totals - 3 - (seed % 2), totals) for seed in range(3)}
    other = {seed: tagger_counts(totals - 1 - (seed % 2), totals) for seed in range(3)}  # +2 tokens/doc
    result = compare("tagger", baseline, other)
    expected = numpy.mean([2 * 80 / totals.sum()] * 3)
    assert result.difference == pytest.approx(expected, abs=1e-12)
    assert result.p_value < 0.01
    assert result.p_value == pytest.approx(1 / 10_001)  # no swap pattern reaches it by chance
    assert 0 < result.ci_low <= result.difference <= result.ci_high
    assert result.verdict == "gain"
    flipped = compare("tagger", other, baseline)
    assert flipped.difference == pytest.approx(-expected) and flipped.verdict == "loss"
    assert flipped.ci_high < 0


def test_exact_p_value_by_hand():
    """Four documents of 10 tokens; the other system gets 3, 1, 1, 1 more tokens right.

    A swap flips the sign of a document's difference; |sum| >= 6 only for + + + + and
    - - - -: p = 2 / 16.
    """
    baseline = {0: tagger_counts([5, 6, 7, 4], [10] * 4)}
    other = {0: tagger_counts([8, 7, 8, 5], [10] * 4)}
    result = compare("tagger", baseline, other)
    assert result.p_method == "exact" and result.rounds == 16
    assert result.difference == pytest.approx(6 / 40)
    assert result.p_value == pytest.approx(2 / 16)
    monte_carlo = compare("tagger", baseline, other, exact_limit=1, rounds=20_000)
    assert monte_carlo.p_method == "approximate randomization"
    assert monte_carlo.p_value == pytest.approx(2 / 16, abs=0.01)  # 4 standard errors


def test_exact_p_value_matches_brute_force_for_ner_with_seeds():
    """F1 is not additive: check the enumeration against a plain loop over swap patterns."""
    rng = numpy.random.default_rng(3)
    baseline, other = random_ner(rng, 7, 2), random_ner(rng, 7, 2)

    def f1(counts):
        tp, fp, fn = counts.sum(axis=0)
        return 2 * tp / (2 * tp + fp + fn)

    def d(a, b):
        return numpy.mean([f1(b[s]) - f1(a[s]) for s in (0, 1)])

    observed = d(baseline, other)
    extreme = 0
    for pattern in itertools.product((False, True), repeat=7):
        swap = numpy.array(pattern)[:, None]
        a = {s: numpy.where(swap, other[s], baseline[s]) for s in (0, 1)}
        b = {s: numpy.where(swap, baseline[s], other[s]) for s in (0, 1)}
        extreme += abs(d(a, b)) >= abs(observed) - 1e-12
    result = compare("ner", baseline, other)
    assert result.difference == pytest.approx(observed, abs=1e-12)
    assert result.p_method == "exact"
    assert result.p_value == extreme / 128


def test_bootstrap_interval_matches_the_normal_approximation():
    """Equal document lengths: d is the mean of per-document differences / length, whose
    bootstrap interval is close to mean +- 1.96 sd / sqrt(n)."""
    rng = numpy.random.default_rng(4)
    n = 400
    base_correct = rng.integers(5, 15, size=n)
    diffs = rng.integers(-2, 4, size=n)
    baseline = {0: tagger_counts(base_correct, [20] * n)}
    other = {0: tagger_counts(base_correct + diffs, [20] * n)}
    result = compare("tagger", baseline, other, rounds=100)
    per_doc = diffs / 20
    half_width = 1.96 * per_doc.std(ddof=1) / numpy.sqrt(n)
    assert result.difference == pytest.approx(per_doc.mean())
    assert result.ci_low == pytest.approx(per_doc.mean() - half_width, abs=0.1 * half_width)
    assert result.ci_high == pytest.approx(per_doc.mean() + half_width, abs=0.1 * half_width)


def test_results_are_reproducible():
    rng = numpy.random.default_rng(5)
    baseline, other = random_ner(rng, 50, 2), random_ner(rng, 50, 2)
    first, second = compare("ner", baseline, other, resamples=700), compare("ner", baseline, other, resamples=700)
    assert first == second
    assert compare("ner", baseline, other, resamples=700, rng_seed=1).ci_low != first.ci_low


def test_seeds_pair_by_number():
    assert pair_seeds([0, 1, 2], [2, 1, 0, 3]) == [(0, 0), (1, 1), (2, 2)]
    assert pair_seeds([None], [None]) == [(None, None)]
    assert pair_seeds([None], [4]) == [(None, 4)]  # one run each
    with pytest.raises(ValueError, match="no seed to pair"):
        pair_seeds([0, 1], [2, 3])
    rng = numpy.random.default_rng(6)
    baseline, other = random_ner(rng, 20, 3), random_ner(rng, 20, 4)
    result = compare("ner", baseline, other, resamples=100, rounds=100)
    assert result.seeds == ((0, 0), (1, 1), (2, 2))
    assert len(result.other_scores) == 3
    f1 = paired_stats.ner_f1
    expected = numpy.mean([f1(other[s].sum(0)) - f1(baseline[s].sum(0)) for s in range(3)])
    assert result.difference == pytest.approx(expected)


def test_swaps_keep_seed_pairs_together():
    """Seed 0 of the other system is better on every document, seed 1 worse by the same: the
    difference is 0 whatever is swapped, if swaps keep the pairs (p = 1)."""
    base = tagger_counts([5] * 12, [10] * 12)
    other = {0: tagger_counts([7] * 12, [10] * 12), 1: tagger_counts([3] * 12, [10] * 12)}
    result = compare("tagger", {0: base, 1: base}, other, rounds=500, resamples=500)
    assert result.difference == pytest.approx(0.0, abs=1e-15)
    assert result.p_value == 1.0


def test_bad_input_is_refused():
    good = {0: numpy.ones((5, 3), dtype=int)}
    with pytest.raises(ValueError, match="unknown task"):
        compare("parser", good, good)
    with pytest.raises(ValueError, match="different documents"):
        compare("ner", good, {0: numpy.ones((6, 3), dtype=int)})
    with pytest.raises(ValueError, match=r"expected \(n_docs, 3\)"):
        compare("ner", good, {0: numpy.ones((5, 2), dtype=int)})
    with pytest.raises(ValueError, match="non-negative integers"):
        compare("ner", good, {0: -numpy.ones((5, 3), dtype=int)})


def test_verdict_needs_p_below_alpha():
    assert verdict(0.03, 0.049) == "gain"
    assert verdict(-0.03, 0.01) == "loss"
    assert verdict(0.03, 0.05) == "no significant difference"
    assert verdict(0.03, None) == "no significant difference"
