"""One setting against its baseline under cross-validation, pooled over folds, seeds and biLMs.

Why: WNUT-16's one file (2,394 tweets) split once leaves a test split too small to resolve a
gain of two points (docs/workflow.md). Split into folds, each fold is the test split of models
trained on the others, so every tweet is tested once and the test set is the whole file; but then
the models differ by fold, and a test must resample what varies: the test documents, the training
runs (a seed on each fold) and the biLMs.

Input: the baseline's per-document counts ``{fold: {seed: (n_docs_k, n_fields)}}`` and, for each
biLM ``b``, the other setting's ``{fold: {seed: counts}}`` on the same documents (fields and
scores as in ``paired_stats``). Every fold must hold the same documents for every run; only the
seeds that every fold of the baseline and of every biLM has are used.

The statistic: a *cross-validated run* of seed ``s`` is the fold models of seed ``s`` together:
its predictions cover every document once, and its score is corpus-level over all of them
(counts summed over the folds and their documents). ``D`` = mean over biLMs and seeds of
``score(other_b, s) - score(baseline, s)``: with one fold, ``pooled_stats``' statistic.

* **95% interval**: a bootstrap over every source of variation, each drawn independently in each
  of the ``resamples`` draws: the biLMs, with replacement (as many as there are); in each fold,
  the seeds with replacement (unless ``resample_seeds`` is off), one draw shared by the baseline
  and every biLM so that a fold's seed pairs stay together, and drawn afresh for every fold
  because the model of seed ``s`` on one fold has nothing in common with seed ``s`` on another
  but its number; and in each fold, its documents with replacement (as many as it has, so every
  fold keeps its size), one draw shared by every run. Slot ``j`` of a resample is the
  cross-validated run made of each fold's ``j``-th drawn seed. ``D*`` is ``D`` on the resample;
  the interval is its 2.5th and 97.5th percentile.
* **p-value** (two-sided) from the same resamples, by inverting the percentile interval, as
  ``pooled_stats`` does: ``p = min(1, 2 * (1 + #{D* on the other side of 0 from D, 0
  included}) / (1 + resamples))``, so that p < 0.05 only where the interval excludes 0.
* Per biLM: ``D_b`` with its own paired test (``paired_stats.compare``) over all the documents
  of all folds, the seeds paired by number.

With one fold, one biLM and ``resample_seeds`` off, the interval is ``paired_stats.compare``'s to
float rounding (the documents are drawn from the same stream). numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Sequence, Tuple

import numpy

from .paired_stats import (
    CHUNK,
    FIELDS,
    SCORES,
    TIE_TOLERANCE,
    PairedResult,
    Seed,
    compare,
    resample_counts,
    stack_counts,
)
from .pooled_stats import BILM_STREAM, SEED_STREAM, pooled_verdict

Runs = Mapping[Seed, numpy.ndarray]  # {seed: (n_docs, n_fields)}
FoldRuns = Mapping[int, Runs]  # {fold: {seed: counts}}


@dataclass(frozen=True)
class CrossValidatedResult:
    """The setting minus the baseline over folds, seeds and biLMs; fractions, as elsewhere."""

    task: str
    bilms: Tuple[str, ...]
    folds: Tuple[int, ...]
    seeds: Tuple[int, ...]
    n_docs: Tuple[int, ...]  # per fold
    per_bilm: Tuple[PairedResult, ...]  # each biLM's own paired test over all documents
    difference: float
    ci_low: float
    ci_high: float
    p_value: float
    resamples: int
    resample_seeds: bool

    @property
    def differences(self) -> Tuple[float, ...]:
        return tuple(result.difference for result in self.per_bilm)

    @property
    def low(self) -> float:
        return min(self.differences)

    @property
    def high(self) -> float:
        return max(self.differences)

    @property
    def verdict(self) -> str:
        """``gain``/``loss`` only where p < 0.05 and every biLM agrees (``pooled_stats``)."""
        return pooled_verdict(self.difference, self.p_value, self.differences)

    def as_dict(self) -> dict:
        return {
            "task": self.task,
            "bilms": list(self.bilms),
            "folds": list(self.folds),
            "seeds": list(self.seeds),
            "n_docs": sum(self.n_docs),
            "n_docs_per_fold": list(self.n_docs),
            "difference": self.difference,
            "ci95": [self.ci_low, self.ci_high],
            "p_value": self.p_value,
            "p_method": "percentile bootstrap over biLMs, each fold's seeds and each fold's documents",
            "range": [self.low, self.high],
            "per_bilm": {name: result.as_dict() for name, result in zip(self.bilms, self.per_bilm)},
            "bootstrap_resamples": self.resamples,
            "resample_seeds": self.resample_seeds,
            "verdict": self.verdict,
        }


def common_seeds(baseline: FoldRuns, others: Mapping[str, FoldRuns]) -> List[int]:
    """The seed numbers every fold of the baseline and of every biLM has; a ValueError if none."""
    held = [runs for runs in baseline.values()] + [runs for folds in others.values() for runs in folds.values()]
    common = set.intersection(*({seed for seed in runs if seed is not None} for runs in held)) if held else set()
    if not common:
        raise ValueError("no seed common to every fold of the baseline and of every biLM")
    return sorted(common)


def _stack(
    task: str, folds: FoldRuns, fold_list: Sequence[int], seeds: Sequence[int], name: str
) -> List[numpy.ndarray]:
    """Per fold, the counts of ``seeds`` as ``(seeds, docs, fields)``; a ValueError naming the run."""
    missing = [fold for fold in fold_list if fold not in folds]
    if missing or len(folds) != len(fold_list):
        raise ValueError(f"{name}: folds {sorted(folds)}, expected {list(fold_list)}")
    return [stack_counts(task, folds[fold], seeds, f"{name} fold {fold}") for fold in fold_list]


def _gather(sums: numpy.ndarray, draws: numpy.ndarray) -> numpy.ndarray:
    """``sums`` (size, [biLMs,] seeds, fields) with its seed axis reordered per resample by
    ``draws`` (size, slots): slot j holds the seed ``draws[r, j]``."""
    if sums.ndim == 3:
        return numpy.take_along_axis(sums, draws[:, :, None], axis=1)
    return numpy.take_along_axis(sums, draws[:, None, :, None], axis=2)


def resampled_differences(
    task: str,
    base: Sequence[numpy.ndarray],
    other: Sequence[numpy.ndarray],
    resamples: int,
    rng_seed: int,
    resample_seeds: bool,
) -> numpy.ndarray:
    """``D*`` of each resample; per fold, ``base[k]``: ``(seeds, docs_k, fields)`` and ``other[k]``:
    ``(biLMs, seeds, docs_k, fields)``."""
    n_bilms, n_seeds, _, n_fields = other[0].shape
    score = SCORES[task]
    flat_base = [a.transpose(1, 0, 2).reshape(a.shape[1], n_seeds * n_fields) for a in base]
    flat_other = [b.transpose(2, 0, 1, 3).reshape(b.shape[2], n_bilms * n_seeds * n_fields) for b in other]
    doc_rng = numpy.random.default_rng(rng_seed)  # the stream paired_stats.compare draws documents from
    bilm_rng = numpy.random.default_rng([rng_seed, BILM_STREAM])
    seed_rng = numpy.random.default_rng([rng_seed, SEED_STREAM])
    found = []
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        base_sums = numpy.zeros((size, n_seeds, n_fields))
        other_sums = numpy.zeros((size, n_bilms, n_seeds, n_fields))
        for flat_a, flat_b in zip(flat_base, flat_other):
            weights = resample_counts(doc_rng, flat_a.shape[0], size)
            draws = (
                seed_rng.integers(0, n_seeds, size=(size, n_seeds))
                if resample_seeds
                else numpy.broadcast_to(numpy.arange(n_seeds), (size, n_seeds))
            )
            base_sums += _gather((weights @ flat_a).reshape(size, n_seeds, n_fields), draws)
            other_sums += _gather((weights @ flat_b).reshape(size, n_bilms, n_seeds, n_fields), draws)
        bilm_weights = resample_counts(bilm_rng, n_bilms, size) / n_bilms
        slots = score(other_sums) - score(base_sums)[:, None, :]  # (size, biLMs, slots)
        found.append(numpy.einsum("rk,rk->r", bilm_weights, slots.mean(axis=2)))
    return numpy.concatenate(found)


def concatenated(runs: FoldRuns, folds: Sequence[int], seeds: Sequence[int]) -> Dict[int, numpy.ndarray]:
    """``{seed: counts of every fold's documents, fold after fold}``: the cross-validated runs."""
    return {seed: numpy.concatenate([numpy.asarray(runs[fold][seed]) for fold in folds]) for seed in seeds}


def compare_cv(
    task: str,
    baseline: FoldRuns,
    others: Mapping[str, FoldRuns],
    *,
    resamples: int = 10_000,
    rounds: int = 10_000,
    rng_seed: int = 0,
    resample_seeds: bool = True,
    exact_limit: int = 2**12,
) -> CrossValidatedResult:
    """Compare ``others`` (``{biLM: {fold: {seed: counts}}}``) with ``baseline`` (``{fold: {seed:
    counts}}``); ``rounds`` and ``exact_limit`` go to each biLM's own paired test."""
    if task not in FIELDS:
        raise ValueError(f"unknown task {task!r}: expected one of {sorted(FIELDS)}")
    if not others:
        raise ValueError("no biLM to pool")
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples}")
    folds = sorted(baseline)
    if not folds:
        raise ValueError("no fold to compare")
    seeds = common_seeds(baseline, others)
    base = _stack(task, baseline, folds, seeds, "baseline")
    per_name = {name: _stack(task, runs, folds, seeds, name) for name, runs in others.items()}
    for name, stacks in per_name.items():
        for fold, a, b in zip(folds, base, stacks):
            if a.shape != b.shape:
                raise ValueError(
                    f"fold {fold}: the baseline and {name} were scored on different documents: "
                    f"{a.shape[1]} vs {b.shape[1]} documents"
                )
    n_docs = tuple(int(a.shape[1]) for a in base)
    if min(n_docs) == 0:
        raise ValueError(f"fold {folds[n_docs.index(0)]} has no documents")
    other = [numpy.stack([stacks[k] for stacks in per_name.values()]) for k in range(len(folds))]
    score = SCORES[task]
    base_scores = score(sum(a.sum(axis=1) for a in base))  # (seeds,)
    other_scores = score(sum(b.sum(axis=2) for b in other))  # (biLMs, seeds)
    observed = float(numpy.mean(other_scores - base_scores[None, :]))
    boot = resampled_differences(task, base, other, resamples, rng_seed, resample_seeds)
    ci_low, ci_high = (float(v) for v in numpy.percentile(boot, [2.5, 97.5]))
    if observed > 0:
        beyond = int(numpy.sum(boot <= TIE_TOLERANCE))
    elif observed < 0:
        beyond = int(numpy.sum(boot >= -TIE_TOLERANCE))
    else:
        beyond = resamples
    p_value = min(1.0, 2 * (1 + beyond) / (1 + resamples))
    base_runs = concatenated(baseline, folds, seeds)
    per_bilm = tuple(
        compare(
            task,
            base_runs,
            concatenated(runs, folds, seeds),
            resamples=resamples,
            rounds=rounds,
            rng_seed=rng_seed,
            exact_limit=exact_limit,
        )
        for runs in others.values()
    )
    return CrossValidatedResult(
        task=task,
        bilms=tuple(others),
        folds=tuple(folds),
        seeds=tuple(seeds),
        n_docs=n_docs,
        per_bilm=per_bilm,
        difference=observed,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_value,
        resamples=resamples,
        resample_seeds=resample_seeds,
    )
