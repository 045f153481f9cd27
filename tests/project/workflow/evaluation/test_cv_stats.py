"""scripts/workflow/evaluation/cv_stats.py on constructed cases whose answer is known.

As in test_pooled_stats: documents alike leave the score where it is, so what moves ``D*`` is a
draw written down by hand (biLMs, one fold's seeds, one fold's documents). Tagger counts with
``predicted == total`` make the score correct / total, linear in the corrects, so a
cross-validated run's difference is the folds' differences in correct tokens over all tokens.
"""

from __future__ import annotations

import math
import re

import numpy
import pytest

from scripts.workflow.evaluation import cv_stats, paired_stats, pooled_stats
from scripts.workflow.evaluation.cv_stats import compare_cv


def rows(correct, total=10):
    correct = numpy.asarray(correct)
    totals = numpy.full_like(correct, total)
    return numpy.stack([correct, totals, totals], axis=1)


def alike(correct, n_docs=20):
    return rows([correct] * n_docs)


def within(count, n, probability, sds=4.0):
    return abs(count / n - probability) <= sds * math.sqrt(probability * (1 - probability) / n)


def frequencies(boot, values):
    return {value: int(numpy.sum(numpy.isclose(boot, value, atol=1e-12))) for value in values}


def draws(task, baseline, others, resamples, resample_seeds=True):
    """D* of every resample, from the same inputs as compare_cv."""
    folds = sorted(baseline)
    seeds = cv_stats.common_seeds(baseline, others)
    base = [paired_stats.stack_counts(task, baseline[k], seeds, "b") for k in folds]
    other = [
        numpy.stack([paired_stats.stack_counts(task, runs[k], seeds, n) for n, runs in others.items()]) for k in folds
    ]
    return cv_stats.resampled_differences(task, base, other, resamples, 0, resample_seeds)


def test_each_folds_seeds_are_drawn_on_their_own():
    """Two folds of 20 documents of 10 tokens whose seed 0 gains and seed 1 loses one token per
    document (D = 0). A slot's difference is 20 (d0 + d1) / 400, d in {-1, +1} the drawn seed of
    each fold; drawn per fold, D* (the mean over two slots) takes -0.1, -0.05, 0, +0.05, +0.1 with
    probabilities 1, 4, 6, 4, 1 in 16. Drawn once for both folds (d0 = d1) it could never take
    -0.05 or +0.05."""
    baseline = {k: {0: alike(5), 1: alike(5)} for k in (0, 1)}
    other = {"bilm0": {k: {0: alike(6), 1: alike(4)} for k in (0, 1)}}
    result = compare_cv("tagger", baseline, other, resamples=200, rounds=100)
    assert result.difference == pytest.approx(0.0, abs=1e-15) and result.n_docs == (20, 20)
    resamples = 32_000
    boot = draws("tagger", baseline, other, resamples)
    counts = frequencies(boot, [k * 0.05 for k in (-2, -1, 0, 1, 2)])
    for k, probability in zip((-2, -1, 0, 1, 2), (1 / 16, 4 / 16, 6 / 16, 4 / 16, 1 / 16)):
        assert within(counts[k * 0.05], resamples, probability), k
    assert sum(counts.values()) == resamples


def test_the_biLMs_follow_the_binomial_law():
    """Effects +x, +x, -x on three biLMs, every fold and seed alike: D* = (x/3)(#plus - #minus)
    as in pooled_stats; P(D* <= 0) = 7/27, so p estimates 14/27."""
    baseline = {k: {0: alike(5), 1: alike(5)} for k in range(3)}
    others = {
        "bilm0": {k: {0: alike(6), 1: alike(6)} for k in range(3)},
        "bilm1": {k: {0: alike(6), 1: alike(6)} for k in range(3)},
        "bilm2": {k: {0: alike(4), 1: alike(4)} for k in range(3)},
    }
    resamples = 27_000
    result = compare_cv("tagger", baseline, others, resamples=resamples, rounds=100)
    x = 0.1
    assert result.difference == pytest.approx(x / 3, abs=1e-12)
    assert result.differences == pytest.approx((x, x, -x), abs=1e-12)
    assert (result.ci_low, result.ci_high) == pytest.approx((-x, x), abs=1e-12)
    beyond = result.p_value * (1 + resamples) / 2 - 1
    assert within(round(beyond), resamples, 7 / 27) and result.verdict == "varies"
    boot = draws("tagger", baseline, others, resamples)
    counts = frequencies(boot, [-x, -x / 3, x / 3, x])
    for value, probability in zip((-x, -x / 3, x / 3, x), (1 / 27, 6 / 27, 12 / 27, 8 / 27)):
        assert within(counts[value], resamples, probability), value


def test_documents_are_drawn_within_their_fold():
    """Fold 0: two documents that both gain 10 of 10 tokens; fold 1: one that gains 10, one that
    gains none. Drawn within the folds, every resample has two documents of each, so D* = (20 + 10
    #draws of the gaining one) / 40: 1/2, 3/4, 1 with probabilities 1/4, 1/2, 1/4 (drawn from the
    four documents together, D* would also take 1/4 and other values)."""
    baseline = {0: {0: rows([0, 0])}, 1: {0: rows([0, 0])}}
    other = {"bilm0": {0: {0: rows([10, 10])}, 1: {0: rows([10, 0])}}}
    result = compare_cv("tagger", baseline, other, resamples=200, rounds=100, resample_seeds=False)
    assert result.difference == pytest.approx(0.75) and result.n_docs == (2, 2)
    resamples = 20_000
    boot = draws("tagger", baseline, other, resamples, resample_seeds=False)
    counts = frequencies(boot, [0.5, 0.75, 1.0])
    assert sum(counts.values()) == resamples
    for value, probability in zip((0.5, 0.75, 1.0), (0.25, 0.5, 0.25)):
        assert within(counts[value], resamples, probability), value


def test_one_fold_one_biLM_without_seed_resampling_is_the_paired_bootstrap():
    """The same documents from the same stream: paired_stats.compare's interval, to float
    rounding; and with several folds and one biLM, the point estimate is the difference of the
    concatenated runs' scores."""
    rng = numpy.random.default_rng(3)
    baseline = {seed: rng.integers(0, 4, size=(60, 3)) for seed in (0, 1, 2)}
    other = {seed: rng.integers(0, 4, size=(60, 3)) for seed in (0, 1, 2)}
    cv = compare_cv("ner", {0: baseline}, {"only": {0: other}}, resamples=1500, rounds=200, resample_seeds=False)
    paired = paired_stats.compare("ner", baseline, other, resamples=1500, rounds=200)
    assert cv.difference == pytest.approx(paired.difference, abs=1e-15)
    assert (cv.ci_low, cv.ci_high) == pytest.approx((paired.ci_low, paired.ci_high), abs=1e-12)
    assert cv.per_bilm == (paired,)
    folds_a = {0: {s: c[:25] for s, c in baseline.items()}, 1: {s: c[25:] for s, c in baseline.items()}}
    folds_b = {0: {s: c[:25] for s, c in other.items()}, 1: {s: c[25:] for s, c in other.items()}}
    two = compare_cv("ner", folds_a, {"only": folds_b}, resamples=300, rounds=100)
    assert two.difference == pytest.approx(paired.difference, abs=1e-15)
    assert two.per_bilm[0].difference == pytest.approx(paired.difference, abs=1e-15)
    assert two.as_dict()["n_docs"] == 60 and two.as_dict()["n_docs_per_fold"] == [25, 35]


def test_a_clear_gain_over_folds_seeds_and_biLMs_is_claimed():
    rng = numpy.random.default_rng(5)
    baseline = {k: {s: rows(rng.integers(3, 6, size=40)) for s in (0, 1, 2)} for k in range(5)}
    others = {
        f"bilm{b}": {k: {s: rows(rng.integers(6, 9, size=40)) for s in (0, 1, 2)} for k in range(5)} for b in range(3)
    }
    result = compare_cv("tagger", baseline, others, resamples=2000, rounds=200)
    assert result.difference > 0.2 and result.ci_low > 0 and result.p_value == pytest.approx(2 / 2001)
    assert result.verdict == "gain" and result.seeds == (0, 1, 2) and result.folds == (0, 1, 2, 3, 4)


@pytest.mark.parametrize(
    "baseline, others, error",
    [
        ({0: {0: alike(5)}}, {"b": {1: {0: alike(5)}}}, "b: folds [1], expected [0]"),
        ({0: {0: alike(5)}}, {"b": {0: {1: alike(5)}}}, "no seed common"),
        (
            {0: {0: alike(5)}},
            {"b": {0: {0: alike(5, n_docs=3)}}},
            "fold 0: the baseline and b were scored on different",
        ),
        ({0: {0: alike(5)}}, {}, "no biLM to pool"),
    ],
)
def test_inputs_that_do_not_pair_are_named(baseline, others, error):
    with pytest.raises(ValueError, match=re.escape(error)):
        compare_cv("tagger", baseline, others, resamples=10, rounds=10)


def test_the_verdict_is_the_pooled_one():
    assert pooled_stats.pooled_verdict(0.1, 0.01, (0.1, 0.05)) == "gain"
