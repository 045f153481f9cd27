"""The headline's targets beyond one run: the CoNLL-2003 gain over biLMs, ELMo against spaCy's
pretraining on CoNLL-2003, and the cross-validated tweets. Each is met, missed by how much, or
not measured (the workflow that measures it has not run).

Why apart from ``rows.target_rows`` (the gain of one run per task and size): these targets ask
for a pooled test (``pooled``, ``cv``) or for a test against another variant than the baseline,
and a target missed on p alone says by how much too: how far the 95% interval's bound stays on
the wrong side of 0.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from . import data
from .text import p_text

#: the low-resource CoNLL-2003 gain of ELMo over the baseline, pooled over the biLMs, in points
CONLL_POOLED_GAIN = 2.0
CONLL = ("conll", "small")
CONLL_WHERE = "NER (CoNLL-2003 news), low-resource training set"
TWEETS_WHERE = "NER (WNUT-16 tweets), cross-validated"


def _entry(goal: str, met: Optional[bool], short_by: Optional[float], text: str) -> dict:
    return {"goal": goal, "met": met, "short_by": short_by, "text": f"{goal}: {text}"}


def _interval_gap(ci_low: float, ci_high: float, difference: float) -> float:
    """Points by which the 95% interval (points) fails to exclude 0 on the side of the difference."""
    return max(0.0, -ci_low) if difference >= 0 else max(0.0, ci_high)


def conll_pooled(pools: Sequence, rows: Sequence[dict]) -> dict:
    """ELMo - baseline on low-resource CoNLL-2003: at least +2 points pooled over the biLMs with
    p < 0.05, and positive on every biLM (``pools``: ``pooled.PooledRow``s)."""
    elmo = data.setting_name(*CONLL, "elmo")
    goal = (
        f"{CONLL_WHERE}, ELMo - baseline at least {CONLL_POOLED_GAIN:+.2f} points pooled over the biLMs, p < 0.05, "
        "positive on every biLM"
    )
    pool = next((p for p in pools if p.setting == elmo and p.result is not None), None)
    if pool is None:
        one = next((r for r in rows if r["other"] == elmo and r["baseline"].endswith("-baseline") and r["test"]), None)
        alone = f"; on `all`'s biLM alone: {one['delta']:+.2f} points, p = {p_text(one['test'].p_value)}" if one else ""
        return _entry(goal, None, None, f"not measured over biLMs (the robustness workflow has not run){alone}.")
    result = pool.result
    delta = result.difference * 100
    low, high = result.ci_low * 100, result.ci_high * 100
    numbers = (
        f"{delta:+.2f} points pooled over {len(result.bilms)} biLMs, 95% interval {low:+.2f} to {high:+.2f}, "
        f"p = {p_text(result.p_value)}, from {result.low * 100:+.2f} to {result.high * 100:+.2f} over the biLMs"
    )
    misses = []
    if delta < CONLL_POOLED_GAIN:
        misses.append(f"{CONLL_POOLED_GAIN - delta:.2f} points short")
    if not result.p_value < 0.05:
        misses.append(
            f"p {p_text(result.p_value)}: the interval reaches {_interval_gap(low, high, delta):.2f} points past 0"
        )
    negative = [name for name, d in zip(result.bilms, result.differences) if d <= 0]
    if negative:
        misses.append(f"not positive on {', '.join(negative)}")
    if not misses:
        return _entry(goal, True, 0.0, f"**met** ({numbers}).")
    return _entry(goal, False, max(0.0, CONLL_POOLED_GAIN - delta), f"not met: {'; '.join(misses)} ({numbers}).")


def conll_against_spacy(rows: Sequence[dict]) -> dict:
    """ELMo against spaCy's pretraining (the same CPU time) on low-resource CoNLL-2003: p < 0.05."""
    goal = f"{CONLL_WHERE}, ELMo - spaCy's pretraining with p < 0.05"
    elmo, spacy = data.setting_name(*CONLL, "elmo"), data.setting_name(*CONLL, data.SPACY_PRETRAIN)
    row = next((r for r in rows if r["other"] == elmo and r["baseline"] == spacy and r["test"] is not None), None)
    if row is None:
        return _entry(goal, None, None, "not measured (no paired test of the two).")
    test = row["test"]
    low, high = test.ci_low * 100, test.ci_high * 100
    numbers = f"{row['delta']:+.2f} points, 95% interval {low:+.2f} to {high:+.2f}, p = {p_text(test.p_value)}"
    if row["verdict"] == "gain":
        return _entry(goal, True, 0.0, f"**met** ({numbers}).")
    if row["verdict"] == "loss":
        return _entry(goal, False, None, f"not met: spaCy's pretraining is better ({numbers}).")
    gap = _interval_gap(low, high, row["delta"])
    return _entry(goal, False, gap, f"not met: the interval reaches {gap:.2f} points past 0 ({numbers}).")


def tweets_cross_validated(cv_rows: Sequence) -> dict:
    """The cross-validated WNUT-16 gain of ELMo over the baseline: pooled p < 0.05 (``cv.CvRow``s)."""
    goal = f"{TWEETS_WHERE}, ELMo - baseline pooled over folds, seeds and biLMs with p < 0.05"
    row = next((r for r in cv_rows if r.setting.endswith("-elmo") and r.result is not None), None)
    if row is None:
        return _entry(goal, None, None, "not measured (the tweets workflow has not run).")
    result = row.result
    delta, low, high = result.difference * 100, result.ci_low * 100, result.ci_high * 100
    numbers = (
        f"{delta:+.2f} points, 95% interval {low:+.2f} to {high:+.2f}, p = {p_text(result.p_value)}, "
        f"from {result.low * 100:+.2f} to {result.high * 100:+.2f} over the biLMs"
    )
    if result.p_value < 0.05 and delta > 0:
        return _entry(goal, True, 0.0, f"**met** ({numbers}).")
    if delta <= 0:
        return _entry(goal, False, None, f"not met: no gain ({numbers}).")
    gap = _interval_gap(low, high, delta)
    return _entry(goal, False, gap, f"not met: the interval reaches {gap:.2f} points past 0 ({numbers}).")


def headline_targets(rows: Sequence[dict], pools: Sequence, cv_rows: Sequence) -> List[dict]:
    """The three targets, in the order the headline states them."""
    return [conll_pooled(pools, rows), conll_against_spacy(rows), tweets_cross_validated(cv_rows)]
