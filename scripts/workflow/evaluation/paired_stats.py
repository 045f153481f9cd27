"""Paired comparison of two settings on the same test documents, runs paired by seed.

Why: on a test split of a few hundred documents, the spread between seeds is as large as
the gain to be shown, so a difference of means needs an interval and a p-value that take
both the documents and the seeds into account.

Input, per system and seed: an integer array ``(n_docs, n_fields)`` of per-document counts
on the same test documents in the same order (``scoring`` writes them):

* NER (``task="ner"``): ``tp, fp, fn`` with exact span and label match;
* tagger (``task="tagger"``): ``correct, total, predicted`` (tokens tagged right, gold
  tokens with a tag, predicted tokens scored);
* text classification (``task="textcat"``): ``correct, total`` (Docs classified right, Docs),
  summed per source document: its score is the accuracy correct / total.

The statistic is ``d`` = mean over the paired seeds of the other system's corpus-level score
minus the same mean of the baseline, where the corpus-level score of one run comes from its
counts summed over the documents: NER micro F1 = 2 tp / (2 tp + fp + fn); tagger accuracy =
2 correct / (total + predicted), which is spaCy's ``tag_acc`` (the F-score of the (token,
tag) pairs) and equals correct / total whenever the tokenization matches the gold one.

* **95% interval**: paired bootstrap over documents. Each resample draws ``n_docs``
  documents with replacement, one draw used for every seed and both systems, and computes
  ``d`` on it; the interval is the 2.5th and 97.5th percentile of the resampled ``d``.
* **p-value** (two-sided): paired approximate randomization over documents. In each round
  every document's counts are swapped between the two systems with probability 1/2, the same
  swap for all seeds of that document (baseline seed k with other seed k), and ``d`` is
  recomputed; ``p = (1 + #{|d*| >= |d|}) / (1 + rounds)``. When ``2 ** n_docs`` is at most
  ``exact_limit``, all swap patterns are enumerated instead and
  ``p = #{|d*| >= |d|} / 2 ** n_docs`` exactly.

Both use a fixed RNG seed, so the same inputs give the same numbers. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy

FIELDS: Dict[str, Tuple[str, ...]] = {
    "ner": ("tp", "fp", "fn"),
    "tagger": ("correct", "total", "predicted"),
    "textcat": ("correct", "total"),
}
ALPHA = 0.05
# |d*| >= |d| is tested with this slack: sums in another order differ in the last bits
TIE_TOLERANCE = 1e-12
CHUNK = 500  # resamples computed at once (memory: CHUNK x n_docs floats)

Seed = Optional[int]


def ner_f1(sums: numpy.ndarray) -> numpy.ndarray:
    """Micro F1 from summed ``(tp, fp, fn)`` in the last axis; 0 where there is nothing."""
    tp, fp, fn = sums[..., 0], sums[..., 1], sums[..., 2]
    denominator = 2 * tp + fp + fn
    return numpy.where(denominator > 0, 2 * tp / numpy.maximum(denominator, 1), 0.0)


def tagger_accuracy(sums: numpy.ndarray) -> numpy.ndarray:
    """``2 correct / (total + predicted)`` from summed counts; 0 where there is nothing."""
    correct, total, predicted = sums[..., 0], sums[..., 1], sums[..., 2]
    denominator = total + predicted
    return numpy.where(denominator > 0, 2 * correct / numpy.maximum(denominator, 1), 0.0)


def textcat_accuracy(sums: numpy.ndarray) -> numpy.ndarray:
    """``correct / total`` from summed counts; 0 where there is nothing."""
    correct, total = sums[..., 0], sums[..., 1]
    return numpy.where(total > 0, correct / numpy.maximum(total, 1), 0.0)


SCORES: Dict[str, Callable[[numpy.ndarray], numpy.ndarray]] = {
    "ner": ner_f1,
    "tagger": tagger_accuracy,
    "textcat": textcat_accuracy,
}


@dataclass(frozen=True)
class PairedResult:
    """One comparison: ``other`` minus ``baseline``; scores are fractions (0.5 = 50%)."""

    task: str
    seeds: Tuple[Tuple[Seed, Seed], ...]  # (baseline seed, other seed) per pair
    n_docs: int
    baseline_scores: Tuple[float, ...]  # per paired seed
    other_scores: Tuple[float, ...]
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    p_method: str  # "exact" or "approximate randomization"
    resamples: int
    rounds: int  # swap patterns behind the p-value

    @property
    def verdict(self) -> str:
        return verdict(self.difference, self.p_value)

    def as_dict(self) -> dict:
        return {
            "task": self.task,
            "seeds": [list(pair) for pair in self.seeds],
            "n_docs": self.n_docs,
            "baseline_scores": list(self.baseline_scores),
            "other_scores": list(self.other_scores),
            "difference": self.difference,
            "ci95": [self.ci_low, self.ci_high],
            "p_value": self.p_value,
            "p_method": self.p_method,
            "bootstrap_resamples": self.resamples,
            "permutation_rounds": self.rounds,
            "verdict": self.verdict,
        }


def verdict(difference: float, p_value: Optional[float], alpha: float = ALPHA) -> str:
    """``"gain"`` / ``"loss"`` only where ``p < alpha``, else ``"no significant difference"``."""
    if p_value is None or not p_value < alpha or difference == 0:
        return "no significant difference"
    return "gain" if difference > 0 else "loss"


def pair_seeds(baseline: Sequence[Seed], other: Sequence[Seed]) -> List[Tuple[Seed, Seed]]:
    """Seed k of the baseline with seed k of the other; one run each pairs as it is.

    Raises ValueError when nothing pairs (no common seed number and not one run each).
    """
    common = sorted(set(s for s in baseline if s is not None) & set(s for s in other if s is not None))
    if common:
        return [(seed, seed) for seed in common]
    if len(baseline) == 1 and len(other) == 1:
        return [(baseline[0], other[0])]
    raise ValueError(
        f"no seed to pair: baseline seeds {sorted(baseline, key=str)}, other seeds {sorted(other, key=str)}"
    )


def stack_counts(task: str, runs: Mapping[Seed, numpy.ndarray], seeds: Sequence[Seed], name: str) -> numpy.ndarray:
    """The counts of ``seeds`` as one float array ``(seeds, docs, fields)``, checked: a ValueError
    naming ``name`` and the seed for a wrong shape, negative or non-integer counts, or seeds
    scored on different numbers of documents."""
    arrays = []
    for seed in seeds:
        counts = numpy.asarray(runs[seed])
        if counts.ndim != 2 or counts.shape[1] != len(FIELDS[task]):
            raise ValueError(
                f"{name} seed {seed}: counts of shape {counts.shape}, expected "
                f"(n_docs, {len(FIELDS[task])}) for {task} ({', '.join(FIELDS[task])})"
            )
        if not numpy.issubdtype(counts.dtype, numpy.integer) or (counts < 0).any():
            raise ValueError(f"{name} seed {seed}: counts must be non-negative integers")
        arrays.append(counts)
    if len({a.shape for a in arrays}) != 1:
        raise ValueError(f"{name}: the seeds were scored on different numbers of documents")
    return numpy.stack(arrays).astype(numpy.float64)  # (seeds, docs, fields); exact below 2**53


def resample_counts(rng: numpy.random.Generator, n_items: int, size: int) -> numpy.ndarray:
    """How often each of ``n_items`` is drawn in ``size`` resamples of ``n_items`` draws with
    replacement: ``(size, n_items)`` floats, each row summing to ``n_items``."""
    draws = rng.integers(0, n_items, size=(size, n_items)) + n_items * numpy.arange(size)[:, None]
    counts = numpy.bincount(draws.ravel(), minlength=size * n_items).reshape(size, n_items)
    return counts.astype(numpy.float64)


def _differences(task: str, sums_a: numpy.ndarray, sums_b: numpy.ndarray) -> numpy.ndarray:
    """``d`` for each row of summed counts of shape ``(rows, seeds, fields)``."""
    score = SCORES[task]
    return score(sums_b).mean(axis=-1) - score(sums_a).mean(axis=-1)


def compare(
    task: str,
    baseline: Mapping[Seed, numpy.ndarray],
    other: Mapping[Seed, numpy.ndarray],
    *,
    resamples: int = 10_000,
    rounds: int = 10_000,
    rng_seed: int = 0,
    exact_limit: int = 2**12,
) -> PairedResult:
    """Compare ``other`` with ``baseline``: ``{seed: counts (n_docs, n_fields)}`` each."""
    if task not in FIELDS:
        raise ValueError(f"unknown task {task!r}: expected one of {sorted(FIELDS)}")
    if resamples < 1 or rounds < 1:
        raise ValueError(f"resamples and rounds must be positive, got {resamples} and {rounds}")
    pairs = pair_seeds(list(baseline), list(other))
    a = stack_counts(task, baseline, [s for s, _ in pairs], "baseline")
    b = stack_counts(task, other, [s for _, s in pairs], "other")
    if a.shape != b.shape:
        raise ValueError(
            f"baseline and other were scored on different documents: {a.shape[1]} vs {b.shape[1]} documents"
        )
    n_seeds, n_docs, n_fields = a.shape
    if n_docs == 0:
        raise ValueError("no documents to compare")
    score = SCORES[task]
    baseline_scores, other_scores = score(a.sum(axis=1)), score(b.sum(axis=1))
    observed = float(other_scores.mean() - baseline_scores.mean())
    flat_a = a.transpose(1, 0, 2).reshape(n_docs, n_seeds * n_fields)  # (docs, seeds*fields)
    flat_b = b.transpose(1, 0, 2).reshape(n_docs, n_seeds * n_fields)
    rng = numpy.random.default_rng(rng_seed)

    shape = (-1, n_seeds, n_fields)
    # bootstrap: how often each document is drawn, the same draw for both systems and all seeds
    boot = []
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        weights = resample_counts(rng, n_docs, size)
        boot.append(_differences(task, (weights @ flat_a).reshape(shape), (weights @ flat_b).reshape(shape)))
    boot_d = numpy.concatenate(boot)
    ci_low, ci_high = (float(v) for v in numpy.percentile(boot_d, [2.5, 97.5]))

    # randomization: swapping document j adds delta_j to the baseline's sums and takes it
    # from the other's
    delta = flat_b - flat_a
    total_a, total_b = flat_a.sum(axis=0), flat_b.sum(axis=0)
    threshold = abs(observed) - TIE_TOLERANCE
    if 2**n_docs <= exact_limit:
        patterns = ((numpy.arange(2**n_docs)[:, None] >> numpy.arange(n_docs)) & 1).astype(numpy.float64)
        shift = patterns @ delta
        perm_d = _differences(task, (total_a + shift).reshape(shape), (total_b - shift).reshape(shape))
        p_value = float(numpy.mean(numpy.abs(perm_d) >= threshold))
        method, n_rounds = "exact", 2**n_docs
    else:
        extreme = 0
        for start in range(0, rounds, CHUNK):
            size = min(CHUNK, rounds - start)
            swaps = (rng.random((size, n_docs)) < 0.5).astype(numpy.float64)
            shift = swaps @ delta
            perm_d = _differences(task, (total_a + shift).reshape(shape), (total_b - shift).reshape(shape))
            extreme += int(numpy.sum(numpy.abs(perm_d) >= threshold))
        p_value = (1 + extreme) / (1 + rounds)
        method, n_rounds = "approximate randomization", rounds
    return PairedResult(
        task=task,
        seeds=tuple(pairs),
        n_docs=n_docs,
        baseline_scores=tuple(float(v) for v in baseline_scores),
        other_scores=tuple(float(v) for v in other_scores),
        difference=observed,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_value,
        p_method=method,
        resamples=resamples,
        rounds=n_rounds,
    )
