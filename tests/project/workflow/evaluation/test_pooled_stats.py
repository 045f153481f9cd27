"""scripts/workflow/evaluation/pooled_stats.py on constructed cases whose answer is known.

The cases without document noise give every document the same counts: a corpus-level score
does not change when documents are drawn again, so all that moves ``D*`` is the draw of biLMs
(or of seeds), whose distribution is a binomial one written down by hand.
"""

from __future__ import annotations

import itertools
import math

import numpy
import pytest

from scripts.workflow.evaluation import paired_stats, pooled_stats
from scripts.workflow.evaluation.pooled_stats import compare_pooled, pooled_verdict


def tagger_counts(correct, total):
    """Rows (correct, total, predicted) with predicted == total: the score is correct / total."""
    correct, total = numpy.broadcast_arrays(numpy.asarray(correct), numpy.asarray(total))
    return numpy.stack([correct, total, total], axis=1)


def same_documents(correct: int, n_docs: int = 30, total: int = 10) -> numpy.ndarray:
    """Every document alike: resampling documents leaves the score where it is."""
    return tagger_counts([correct] * n_docs, [total] * n_docs)


def within(count: int, n: int, probability: float, sds: float = 4.0) -> bool:
    """Whether ``count`` successes of ``n`` are within ``sds`` standard errors of ``probability``."""
    return abs(count / n - probability) <= sds * math.sqrt(probability * (1 - probability) / n)


def beyond_of(p_value: float, resamples: int) -> float:
    """The count behind ``p = 2 (1 + count) / (1 + resamples)``."""
    return p_value * (1 + resamples) / 2 - 1


PLUS_PLUS_MINUS = {
    "bilm0": {seed: same_documents(6) for seed in (0, 1)},  # +0.1 over the baseline
    "bilm1": {seed: same_documents(6) for seed in (0, 1)},
    "bilm2": {seed: same_documents(4) for seed in (0, 1)},  # -0.1
}
BASELINE = {seed: same_documents(5) for seed in (0, 1)}


def test_three_bilms_plus_plus_minus_follow_the_binomial_law():
    """Effects +x, +x, -x (x = 0.1): D* = (x / 3) (#plus - #minus), #minus ~ Binomial(3, 1/3).

    P(D* = -x, -x/3, +x/3, +x) = 1/27, 6/27, 12/27, 8/27; P(D* <= 0) = 7/27, so
    p = 2 (1 + count) / (1 + R) estimates 14/27; the 2.5th percentile falls in the -x block
    (1/27 > 2.5%) and the 97.5th in the +x block.
    """
    resamples = 27_000
    result = compare_pooled("tagger", BASELINE, PLUS_PLUS_MINUS, resamples=resamples, rounds=200)
    assert result.difference == pytest.approx(0.1 / 3, abs=1e-12)
    assert result.differences == pytest.approx((0.1, 0.1, -0.1), abs=1e-12)
    assert (result.low, result.high) == pytest.approx((-0.1, 0.1), abs=1e-12)
    assert (result.ci_low, result.ci_high) == pytest.approx((-0.1, 0.1), abs=1e-12)
    assert within(round(beyond_of(result.p_value, resamples)), resamples, 7 / 27)
    assert result.p_value == pytest.approx(14 / 27, abs=0.02)
    assert result.verdict == "varies"
    # the whole distribution, from the same draws
    a = paired_stats.stack_counts("tagger", BASELINE, [0, 1], "baseline")
    b = numpy.stack([paired_stats.stack_counts("tagger", runs, [0, 1], n) for n, runs in PLUS_PLUS_MINUS.items()])
    boot = pooled_stats.resampled_differences("tagger", a, b, resamples, 0, True)
    for value, probability in ((-0.1, 1 / 27), (-0.1 / 3, 6 / 27), (0.1 / 3, 12 / 27), (0.1, 8 / 27)):
        assert within(int(numpy.sum(numpy.isclose(boot, value, atol=1e-12))), resamples, probability), value
    assert int(numpy.sum(boot <= 0)) == round(beyond_of(result.p_value, resamples))


def test_each_biLM_gets_its_own_paired_test():
    result = compare_pooled("tagger", BASELINE, PLUS_PLUS_MINUS, resamples=500, rounds=500)
    assert result.bilms == ("bilm0", "bilm1", "bilm2")
    for own, sign in zip(result.per_bilm, (1, 1, -1)):
        assert own.difference == pytest.approx(sign * 0.1) and own.seeds == ((0, 0), (1, 1))
        assert own.verdict == ("gain" if sign > 0 else "loss") and own.p_value == pytest.approx(1 / 501)
    assert result.difference == pytest.approx(numpy.mean(result.differences), abs=1e-15)


def test_resampled_seeds_follow_the_same_law():
    """One biLM whose seeds gain +x, +x, -x: the seed draw alone moves D*, as the biLM draw did
    above. Without seed resampling nothing moves: the interval is the point x/3, as in
    paired_stats.compare, which keeps the seeds fixed."""
    baseline = {seed: same_documents(5) for seed in (0, 1, 2)}
    other = {"bilm0": {0: same_documents(6), 1: same_documents(6), 2: same_documents(4)}}
    resamples = 27_000
    result = compare_pooled("tagger", baseline, other, resamples=resamples, rounds=100)
    assert result.difference == pytest.approx(0.1 / 3)
    assert (result.ci_low, result.ci_high) == pytest.approx((-0.1, 0.1), abs=1e-12)
    assert within(round(beyond_of(result.p_value, resamples)), resamples, 7 / 27)
    fixed = compare_pooled("tagger", baseline, other, resamples=2000, rounds=100, resample_seeds=False)
    assert (fixed.ci_low, fixed.ci_high) == pytest.approx((0.1 / 3, 0.1 / 3), abs=1e-12)
    assert fixed.p_value == pytest.approx(2 / 2001)  # no resample reaches 0: the floor
    paired = paired_stats.compare("tagger", baseline, other["bilm0"], resamples=2000, rounds=100)
    assert (paired.ci_low, paired.ci_high) == pytest.approx((fixed.ci_low, fixed.ci_high), abs=1e-12)


def random_ner(rng, n_docs, seeds):
    return {seed: rng.integers(0, 4, size=(n_docs, 3)) for seed in seeds}


def test_one_biLM_without_seed_resampling_is_the_paired_bootstrap():
    """Same documents drawn from the same stream: the interval of paired_stats.compare, to float
    rounding (the p-values differ in kind: compare's comes from randomization)."""
    rng = numpy.random.default_rng(11)
    baseline, other = random_ner(rng, 80, (0, 1, 2)), random_ner(rng, 80, (0, 1, 2))
    pooled = compare_pooled("ner", baseline, {"only": other}, resamples=1500, rounds=300, resample_seeds=False)
    paired = paired_stats.compare("ner", baseline, other, resamples=1500, rounds=300)
    assert pooled.difference == pytest.approx(paired.difference, abs=1e-15)
    assert pooled.ci_low == pytest.approx(paired.ci_low, abs=1e-12)
    assert pooled.ci_high == pytest.approx(paired.ci_high, abs=1e-12)
    assert pooled.per_bilm == (paired,)


@pytest.mark.parametrize("resample_seeds", [False, True])
def test_identical_biLMs_are_one_biLM(resample_seeds):
    """Three copies of one biLM's runs: whichever copies are drawn, D* is the one biLM's."""
    rng = numpy.random.default_rng(12)
    baseline, other = random_ner(rng, 60, (0, 1)), random_ner(rng, 60, (0, 1))
    options = {"resamples": 1200, "rounds": 200, "resample_seeds": resample_seeds}
    one = compare_pooled("ner", baseline, {"a": other}, **options)
    three = compare_pooled("ner", baseline, {"a": other, "b": dict(other), "c": dict(other)}, **options)
    assert three.difference == pytest.approx(one.difference, abs=1e-15)
    assert (three.ci_low, three.ci_high) == pytest.approx((one.ci_low, one.ci_high), abs=1e-12)
    assert three.p_value == one.p_value
    assert (three.low, three.high) == pytest.approx((one.difference, one.difference))
    if not resample_seeds:
        paired = paired_stats.compare("ner", baseline, other, resamples=1200, rounds=200)
        assert (three.ci_low, three.ci_high) == pytest.approx((paired.ci_low, paired.ci_high), abs=1e-12)


def noisy_tagger(rng, n_docs=120, gain=0):
    """Documents of 20 tokens; the baseline gets 10-14 right; ``gain`` more tokens right per
    document, give or take one."""
    base = rng.integers(10, 15, size=n_docs)
    return base, base + gain + rng.integers(-1, 2, size=n_docs)


def test_a_huge_consistent_gain_has_p_at_its_floor():
    rng = numpy.random.default_rng(13)
    base, _ = noisy_tagger(rng)
    baseline = {seed: tagger_counts(base, 20) for seed in (0, 1, 2)}
    others = {
        f"bilm{k}": {seed: tagger_counts(base + 4 + rng.integers(-1, 2, size=base.size), 20) for seed in (0, 1, 2)}
        for k in range(3)
    }
    result = compare_pooled("tagger", baseline, others, resamples=3000, rounds=300)
    assert result.p_value == pytest.approx(2 / 3001)
    assert 0 < result.ci_low <= result.difference <= result.ci_high
    assert result.difference == pytest.approx(0.2, abs=0.01)
    assert result.verdict == "gain" and all(own.verdict == "gain" for own in result.per_bilm)


def test_flipping_every_effect_flips_D_and_keeps_p():
    """Accuracy over fixed token totals is linear in the counts: baseline - delta mirrors
    baseline + delta resample by resample."""
    rng = numpy.random.default_rng(14)
    n_docs = 90
    base = rng.integers(8, 13, size=n_docs)
    baseline = {seed: tagger_counts(base, 20) for seed in (0, 1)}
    deltas = {f"bilm{k}": {seed: rng.integers(-2, 3, size=n_docs) + (k == 0) for seed in (0, 1)} for k in range(3)}
    up = {k: {s: tagger_counts(base + d, 20) for s, d in runs.items()} for k, runs in deltas.items()}
    down = {k: {s: tagger_counts(base - d, 20) for s, d in runs.items()} for k, runs in deltas.items()}
    first = compare_pooled("tagger", baseline, up, resamples=4000, rounds=200)
    flipped = compare_pooled("tagger", baseline, down, resamples=4000, rounds=200)
    assert flipped.difference == pytest.approx(-first.difference, abs=1e-15)
    assert (flipped.ci_low, flipped.ci_high) == pytest.approx((-first.ci_high, -first.ci_low), abs=1e-12)
    assert flipped.p_value == first.p_value
    assert flipped.differences == pytest.approx(tuple(-d for d in first.differences), abs=1e-15)


def test_the_interval_widens_when_biLMs_disagree():
    """Each biLM's own test is decisive (+2, +2 and -2 tokens per document), yet the pooled
    interval covers 0 and is several times wider than any biLM's own: the biLM draw counts."""
    rng = numpy.random.default_rng(15)
    base, _ = noisy_tagger(rng)
    baseline = {seed: tagger_counts(base, 20) for seed in (0, 1, 2)}

    def bilm(gain):
        return {seed: tagger_counts(base + gain + rng.integers(-1, 2, size=base.size), 20) for seed in (0, 1, 2)}

    disagree = compare_pooled("tagger", baseline, {"a": bilm(2), "b": bilm(2), "c": bilm(-2)}, resamples=4000)
    assert [own.verdict for own in disagree.per_bilm] == ["gain", "gain", "loss"]
    assert all(own.p_value < 0.001 for own in disagree.per_bilm)
    assert disagree.ci_low < 0 < disagree.ci_high and disagree.p_value > 0.3
    assert disagree.verdict == "varies"
    widest_own = max(own.ci_high - own.ci_low for own in disagree.per_bilm)
    assert disagree.ci_high - disagree.ci_low > 5 * widest_own
    agree = compare_pooled("tagger", baseline, {"a": bilm(2), "b": bilm(2), "c": bilm(2)}, resamples=4000)
    assert agree.verdict == "gain" and agree.ci_high - agree.ci_low < 2 * widest_own


def test_the_bootstrap_distribution_matches_enumeration():
    """Two biLMs, two seeds, three documents of NER counts: every draw sequence (2^2 biLM draws x
    2^2 seed draws x 3^3 document draws = 432, equally likely) gives the exact law of D*; the
    Monte Carlo mean and P(D* <= 0) must agree with it."""
    rng = numpy.random.default_rng(16)
    baseline = random_ner(rng, 3, (0, 1))
    others = {"a": random_ner(rng, 3, (0, 1)), "b": random_ner(rng, 3, (0, 1))}
    f1 = paired_stats.ner_f1

    def d_star(bilms, seeds, docs):
        rows = list(docs)
        values = [
            f1(others[name][seed][rows].sum(axis=0)) - f1(baseline[seed][rows].sum(axis=0))
            for name in bilms
            for seed in seeds
        ]
        return numpy.mean(values)

    exact = numpy.array(
        [
            d_star(bilms, seeds, docs)
            for bilms in itertools.product("ab", repeat=2)
            for seeds in itertools.product((0, 1), repeat=2)
            for docs in itertools.product(range(3), repeat=3)
        ]
    )
    resamples = 40_000
    a = paired_stats.stack_counts("ner", baseline, [0, 1], "baseline")
    b = numpy.stack([paired_stats.stack_counts("ner", runs, [0, 1], name) for name, runs in others.items()])
    boot = pooled_stats.resampled_differences("ner", a, b, resamples, 3, True)
    assert abs(boot.mean() - exact.mean()) <= 4 * exact.std() / math.sqrt(resamples)
    assert within(int(numpy.sum(boot <= 1e-12)), resamples, float(numpy.mean(exact <= 1e-12)))
    observed = d_star("ab", (0, 1), range(3))
    assert compare_pooled("ner", baseline, others, resamples=10, rounds=10).difference == pytest.approx(observed)


def test_only_the_seeds_every_run_has_are_pooled():
    rng = numpy.random.default_rng(17)
    baseline = random_ner(rng, 20, (0, 1, 2, 3))
    others = {"a": random_ner(rng, 20, (0, 1, 2)), "b": random_ner(rng, 20, (1, 2, 3, 4))}
    result = compare_pooled("ner", baseline, others, resamples=100, rounds=100)
    assert result.seeds == (1, 2)
    assert [own.seeds for own in result.per_bilm] == [((1, 1), (2, 2))] * 2
    assert result.difference == pytest.approx(numpy.mean(result.differences), abs=1e-15)
    with pytest.raises(ValueError, match="no seed common to the baseline"):
        compare_pooled("ner", baseline, {"a": random_ner(rng, 20, (7,))})


def test_results_are_reproducible():
    rng = numpy.random.default_rng(18)
    baseline = random_ner(rng, 40, (0, 1))
    others = {"a": random_ner(rng, 40, (0, 1)), "b": random_ner(rng, 40, (0, 1))}
    first = compare_pooled("ner", baseline, others, resamples=700, rounds=100)
    assert first == compare_pooled("ner", baseline, others, resamples=700, rounds=100)
    assert compare_pooled("ner", baseline, others, resamples=700, rounds=100, rng_seed=1).ci_low != first.ci_low
    record = first.as_dict()
    assert record["range"] == [first.low, first.high] and set(record["per_bilm"]) == {"a", "b"}
    assert record["ci95"] == [first.ci_low, first.ci_high] and record["resample_seeds"] is True


def test_bad_input_is_refused():
    good = {0: numpy.ones((5, 3), dtype=int)}
    with pytest.raises(ValueError, match="unknown task"):
        compare_pooled("parser", good, {"a": good})
    with pytest.raises(ValueError, match="no biLM to pool"):
        compare_pooled("ner", good, {})
    with pytest.raises(ValueError, match="different documents"):
        compare_pooled("ner", good, {"a": {0: numpy.ones((6, 3), dtype=int)}})
    with pytest.raises(ValueError, match=r"b seed 0: counts of shape"):
        compare_pooled("ner", good, {"a": good, "b": {0: numpy.ones((5, 2), dtype=int)}})
    with pytest.raises(ValueError, match="non-negative integers"):
        compare_pooled("ner", good, {"a": {0: -numpy.ones((5, 3), dtype=int)}})


def test_a_claim_needs_p_below_alpha_and_every_biLM_on_its_side():
    assert pooled_verdict(0.02, 0.01, [0.01, 0.02, 0.03]) == "gain"
    assert pooled_verdict(0.02, 0.01, [0.05, 0.02, -0.001]) == "varies"  # one biLM loses
    assert pooled_verdict(0.02, 0.05, [0.01, 0.02, 0.03]) == "varies"  # p not below 0.05
    assert pooled_verdict(-0.02, 0.01, [-0.01, -0.02, -0.03]) == "loss"
    assert pooled_verdict(0.0, 0.01, [0.0]) == "varies"


def test_a_p_below_005_comes_with_an_interval_that_excludes_0():
    """The p-value inverts the percentile interval: p < 0.05 never where the interval holds 0."""
    rng = numpy.random.default_rng(19)
    significant = 0
    for _ in range(40):
        base = rng.integers(8, 13, size=40)
        baseline = {seed: tagger_counts(base, 20) for seed in (0, 1)}
        shift = rng.normal(0.5, 0.6)
        others = {
            name: {
                seed: tagger_counts(base + rng.integers(-2, 3, size=40) + int(round(shift + rng.normal(0, 0.4))), 20)
                for seed in (0, 1)
            }
            for name in "abc"
        }
        result = compare_pooled("tagger", baseline, others, resamples=1000, rounds=10)
        if result.p_value < 0.05:
            significant += 1
            assert result.ci_low > 0 or result.ci_high < 0, result
    assert significant >= 5  # the check above was exercised
