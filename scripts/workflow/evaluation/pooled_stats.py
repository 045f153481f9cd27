"""One setting against its baseline, pooled over several biLMs: does a gain replicate?

Why: each biLM is one draw of its pretraining (a seed, a machine's float arithmetic), and the
gain of its ELMo setting over the baseline moved between draws by more than its size. A paired
test within one run (``paired_stats``) resamples documents for a fixed biLM; it cannot see that.

Input: the baseline's per-seed per-document counts, which do not depend on the biLM, and for
each biLM ``b`` the ELMo setting's per-seed per-document counts on the same documents (``{seed:
(n_docs, n_fields)}``, fields and scores as in ``paired_stats``). Only the seeds that the
baseline and every biLM have are used; seed ``s`` of a biLM is paired with seed ``s`` of the
baseline.

The statistic: ``D`` = mean over biLMs of ``D_b``, where ``D_b`` = mean over the seeds of
``score(ELMo_b, s) - score(baseline, s)``, each score corpus-level from counts summed over the
documents.

* **95% interval**: a bootstrap over the three crossed sources of variation. Each of the
  ``resamples`` draws, independently: the biLMs with replacement (as many as there are); the
  seeds with replacement (unless ``resample_seeds`` is off), one draw shared by the baseline and
  every biLM so that seed pairs stay together; and the documents with replacement, one draw
  shared by every run. ``D*`` is ``D`` on that resample; the interval is the 2.5th and 97.5th
  percentile of ``D*``. Resampling each crossed factor on its own, with the others' draws
  shared, is Owen's "pigeonhole" bootstrap for crossed random effects (Ann. Appl. Stat. 2007);
  its variance errs on the large side for the interaction terms.
* **p-value** (two-sided) from the same resamples, by inverting the percentile interval:
  ``p = min(1, 2 * (1 + #{D* on the other side of 0 from D, 0 included}) / (1 + resamples))``
  (``p = 1`` when ``D == 0``). So ``p < 0.05`` only when fewer than 2.5% of the resampled
  differences fall at or beyond 0, that is, only when the 95% interval excludes 0: a claim by p
  never contradicts the interval (the ``+1`` can leave p just above 0.05 where the interval
  barely excludes 0, the cautious side). The alternatives were weighed: a sign-flip
  randomization over biLMs is exact under exchangeability but with 3 biLMs its smallest p is
  2/8 = 0.25 (no claim could ever be made); a bootstrap test centred on ``D`` (Hall and Wilson
  1991) gives nearly the same p here but can disagree with the percentile interval.
* Per biLM: ``D_b`` with its own paired test (``paired_stats.compare`` on the same seeds), and
  the range of ``D_b`` over biLMs.

Limits, stated in the report: with ``K`` biLMs the biLM draw has few distinct outcomes (10 for
K = 3) and its variance is ``(K - 1) / K`` of the plug-in variance of a mean over biLMs, so the
interval is rough; a claim therefore also asks that every biLM's ``D_b`` has the same sign
(``verdict``).

The documents, biLMs and seeds are drawn from three separate RNG streams of ``rng_seed``; the
document stream is the one ``paired_stats.compare`` uses, so with one biLM (or identical ones)
and ``resample_seeds`` off the interval is ``compare``'s to float rounding. numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Tuple

import numpy

from .paired_stats import (
    ALPHA,
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

BILM_STREAM, SEED_STREAM = 1, 2  # the RNG streams beside the documents' (rng_seed itself)


@dataclass(frozen=True)
class PooledResult:
    """The setting minus the baseline over biLMs; scores and differences are fractions."""

    task: str
    bilms: Tuple[str, ...]  # the biLMs' names, in input order
    seeds: Tuple[int, ...]  # the seeds every run has, paired by number
    n_docs: int
    per_bilm: Tuple[PairedResult, ...]  # each biLM's own paired test, on ``seeds``
    difference: float  # D: the mean of the per-biLM differences
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
        """The smallest per-biLM difference."""
        return min(self.differences)

    @property
    def high(self) -> float:
        return max(self.differences)

    @property
    def verdict(self) -> str:
        return pooled_verdict(self.difference, self.p_value, self.differences)

    def as_dict(self) -> dict:
        return {
            "task": self.task,
            "bilms": list(self.bilms),
            "seeds": list(self.seeds),
            "n_docs": self.n_docs,
            "difference": self.difference,
            "ci95": [self.ci_low, self.ci_high],
            "p_value": self.p_value,
            "p_method": "percentile bootstrap over biLMs, seeds and documents",
            "range": [self.low, self.high],
            "per_bilm": {name: result.as_dict() for name, result in zip(self.bilms, self.per_bilm)},
            "bootstrap_resamples": self.resamples,
            "resample_seeds": self.resample_seeds,
            "verdict": self.verdict,
        }


def pooled_verdict(difference: float, p_value: Optional[float], per_bilm: Sequence[float], alpha: float = ALPHA) -> str:
    """``"gain"`` only where ``p < alpha`` and every biLM's difference is positive (``"loss"``:
    negative); otherwise ``"varies"``: the sign or size depends on the biLM."""
    if p_value is None or not p_value < alpha or difference == 0 or not per_bilm:
        return "varies"
    if difference > 0 and all(d > 0 for d in per_bilm):
        return "gain"
    if difference < 0 and all(d < 0 for d in per_bilm):
        return "loss"
    return "varies"


def common_seeds(baseline: Mapping[Seed, numpy.ndarray], others: Mapping[str, Mapping[Seed, numpy.ndarray]]) -> list:
    """The seed numbers that the baseline and every biLM have; a ValueError naming them if none."""
    common = {seed for seed in baseline if seed is not None}
    for runs in others.values():
        common &= {seed for seed in runs if seed is not None}
    if not common:
        held = "; ".join(f"{name}: {sorted(runs, key=str)}" for name, runs in others.items())
        raise ValueError(f"no seed common to the baseline ({sorted(baseline, key=str)}) and every biLM ({held})")
    return sorted(common)


def resampled_differences(
    task: str,
    a: numpy.ndarray,
    b: numpy.ndarray,
    resamples: int,
    rng_seed: int,
    resample_seeds: bool,
) -> numpy.ndarray:
    """``D*`` of each resample; ``a``: baseline ``(seeds, docs, fields)``, ``b``: ``(biLMs, seeds,
    docs, fields)``."""
    n_bilms, n_seeds, n_docs, n_fields = b.shape
    score = SCORES[task]
    flat_a = a.transpose(1, 0, 2).reshape(n_docs, n_seeds * n_fields)
    flat_b = b.transpose(2, 0, 1, 3).reshape(n_docs, n_bilms * n_seeds * n_fields)
    doc_rng = numpy.random.default_rng(rng_seed)  # the stream paired_stats.compare draws documents from
    bilm_rng = numpy.random.default_rng([rng_seed, BILM_STREAM])
    seed_rng = numpy.random.default_rng([rng_seed, SEED_STREAM])
    found = []
    for start in range(0, resamples, CHUNK):
        size = min(CHUNK, resamples - start)
        weights = resample_counts(doc_rng, n_docs, size)
        base = score((weights @ flat_a).reshape(size, n_seeds, n_fields))  # (size, seeds)
        other = score((weights @ flat_b).reshape(size, n_bilms, n_seeds, n_fields))  # (size, biLMs, seeds)
        bilm_weights = resample_counts(bilm_rng, n_bilms, size) / n_bilms
        seed_weights = (
            resample_counts(seed_rng, n_seeds, size) / n_seeds
            if resample_seeds
            else numpy.full((size, n_seeds), 1.0 / n_seeds)
        )
        found.append(numpy.einsum("rk,rs,rks->r", bilm_weights, seed_weights, other - base[:, None, :]))
    return numpy.concatenate(found)


def compare_pooled(
    task: str,
    baseline: Mapping[Seed, numpy.ndarray],
    others: Mapping[str, Mapping[Seed, numpy.ndarray]],
    *,
    resamples: int = 10_000,
    rounds: int = 10_000,
    rng_seed: int = 0,
    resample_seeds: bool = True,
    exact_limit: int = 2**12,
) -> PooledResult:
    """Compare ``others`` (``{biLM name: {seed: counts}}``) with ``baseline`` (``{seed: counts}``).

    ``rounds`` and ``exact_limit`` go to each biLM's own test (``paired_stats.compare``).
    """
    if task not in FIELDS:
        raise ValueError(f"unknown task {task!r}: expected one of {sorted(FIELDS)}")
    if not others:
        raise ValueError("no biLM to pool")
    if resamples < 1:
        raise ValueError(f"resamples must be positive, got {resamples}")
    seeds = common_seeds(baseline, others)
    a = stack_counts(task, baseline, seeds, "baseline")
    b = numpy.stack([stack_counts(task, runs, seeds, name) for name, runs in others.items()])
    if b.shape[2] != a.shape[1]:
        raise ValueError(
            f"the baseline and the biLMs' runs were scored on different documents: "
            f"{a.shape[1]} vs {b.shape[2]} documents"
        )
    if a.shape[1] == 0:
        raise ValueError("no documents to compare")
    per_bilm = tuple(
        compare(
            task,
            {seed: baseline[seed] for seed in seeds},
            {seed: runs[seed] for seed in seeds},
            resamples=resamples,
            rounds=rounds,
            rng_seed=rng_seed,
            exact_limit=exact_limit,
        )
        for runs in others.values()
    )
    score = SCORES[task]
    observed = float(numpy.mean(score(b.sum(axis=2)) - score(a.sum(axis=1))[None, :]))
    boot = resampled_differences(task, a, b, resamples, rng_seed, resample_seeds)
    ci_low, ci_high = (float(v) for v in numpy.percentile(boot, [2.5, 97.5]))
    if observed > 0:
        beyond = int(numpy.sum(boot <= TIE_TOLERANCE))
    elif observed < 0:
        beyond = int(numpy.sum(boot >= -TIE_TOLERANCE))
    else:
        beyond = resamples
    p_value = min(1.0, 2 * (1 + beyond) / (1 + resamples))
    return PooledResult(
        task=task,
        bilms=tuple(others),
        seeds=tuple(seeds),
        n_docs=int(a.shape[1]),
        per_bilm=per_bilm,
        difference=observed,
        ci_low=ci_low,
        ci_high=ci_high,
        p_value=p_value,
        resamples=resamples,
        resample_seeds=resample_seeds,
    )
