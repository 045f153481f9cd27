"""The ``tweets`` workflow in the report: WNUT-16 NER cross-validated, pooled over folds, seeds and
biLMs (``evaluation.cv_stats``).

Why apart from the rows of one run: a cross-validated setting is one model per fold and seed,
each scored on its own fold's test split (``evaluate-tweets``: ``SETTING.fold{K}.seed{N}.json``
and the per-document counts beside it, in their own folder). Read with ``data.load_settings``,
each fold of a setting is a setting named ``SETTING.fold{K}``; here the folds of each setting are
put together, the baseline (``tweets-baseline``) against each other setting and its runs on other
biLMs (``tweets-elmo``, ``tweets-elmo@bilmN``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy

from ..evaluation import cv_stats
from . import data
from .pooled import BilmRun, bilm_path_of, read_bilm_run, robustness_times
from .text import duration, markdown_table, p_text

FOLD_NAME = re.compile(r"^(?P<setting>.+)\.fold(?P<fold>\d+)$")
TASK = "tweets"
BASELINE = f"{TASK}-baseline"
KEY, SCORE = "ents_f", "NER F1"
TASK_DATA = "NER (WNUT-16 tweets, cross-validated)"

CV_METHOD_NOTE = (
    "Cross-validated: each fold's test split is scored by the models trained on the other folds, so "
    "every tweet is tested once; a cross-validated run of seed s is the fold models of seed s "
    "together, scored on all the tweets at once (NER micro F1 from the counts summed over the folds). "
    "D is the mean over biLMs and seeds of ELMo's run minus the baseline's run of the same seed. Its "
    "95% interval is a bootstrap over every source of variation ({resamples:,} resamples): the biLMs; in "
    "each fold, its seeds (the baseline's and ELMo's run of one seed on one fold drawn together, drawn "
    "afresh for every fold); and in each fold, its tweets (one draw for every run). p is two-sided from "
    "the same resamples, so p < 0.05 only where the interval excludes 0; a gain is claimed only where, "
    "besides, every biLM gains."
)


@dataclass
class CvRow:
    """One setting against the baseline, cross-validated and pooled over its biLMs."""

    baseline: str
    setting: str
    members: List[str]
    folds: List[int] = field(default_factory=list)
    bilms: List[BilmRun] = field(default_factory=list)
    result: Optional[cv_stats.CrossValidatedResult] = None
    not_tested: Optional[str] = None

    @property
    def verdict(self) -> str:
        return self.result.verdict if self.result else "not tested"

    def as_dict(self) -> dict:
        result = self.result
        baseline_values = list(result.per_bilm[0].baseline_scores) if result else None
        return {
            "task": TASK,
            "baseline": self.baseline,
            "setting": self.setting,
            "members": self.members,
            "folds": self.folds,
            "score": SCORE,
            "bilms": [bilm.as_dict() for bilm in self.bilms],
            "baseline_values": baseline_values,
            "member_values": {name: list(own.other_scores) for name, own in zip(result.bilms, result.per_bilm)}
            if result
            else None,
            "delta": result.difference * 100 if result else None,
            "range": [result.low * 100, result.high * 100] if result else None,
            "test": result.as_dict() if result else None,
            "not_tested": self.not_tested,
            "verdict": self.verdict,
        }


def by_fold(settings: Dict[str, data.Setting]) -> Dict[str, Dict[int, data.Setting]]:
    """``{setting: {fold: the fold's Setting}}`` from the ``SETTING.fold{K}`` names."""
    found: Dict[str, Dict[int, data.Setting]] = {}
    for name, setting in settings.items():
        match = FOLD_NAME.match(name)
        if match:
            found.setdefault(match["setting"], {})[int(match["fold"])] = setting
    return found


def _counts(name: str, folds: Dict[int, data.Setting]) -> Dict[int, Dict[int, numpy.ndarray]]:
    """``{fold: {seed: counts}}`` of one setting, each checked against its own score."""
    return {
        fold: {seed: data.doc_counts(setting, seed, "ner", KEY) for seed in setting.seeds if seed is not None}
        for fold, setting in sorted(folds.items())
    }


def _one_test_file_per_fold(groups: Dict[str, Dict[int, data.Setting]], names: Sequence[str]) -> None:
    """A ValueError unless every run of each fold was scored on the same test file."""
    folds = sorted({fold for name in names for fold in groups[name]})
    for fold in folds:
        files = {
            docs.get("test_data_sha256")
            for name in names
            if fold in groups[name]
            for docs in groups[name][fold].docs.values()
        }
        if len(files) != 1:
            raise ValueError(f"fold {fold}: {', '.join(names)} were scored on different test files")


def cv_rows(settings: Dict[str, data.Setting], **options) -> List[CvRow]:
    """One row per cross-validated setting other than the baseline (with its ``@bilmN`` runs),
    with its pooled test where it can be made; none without the baseline."""
    groups = by_fold(settings)
    if BASELINE not in groups:
        return []
    members: Dict[str, List[Tuple[int, str]]] = {}
    for name in groups:
        base, seed = data.split_bilm(name)
        if base != BASELINE:
            members.setdefault(base, []).append((-1 if seed is None else seed, name))
    rows = []
    for base, named in sorted(members.items()):
        names = [name for _, name in sorted(named)]
        row = CvRow(BASELINE, base, names, folds=sorted(groups[BASELINE]))
        try:
            row.bilms = [
                read_bilm_run(bilm_path_of(data.Setting(name, runs=[r for s in groups[name].values() for r in s.runs])))
                for name in names
            ]
            _one_test_file_per_fold(groups, [BASELINE] + names)
            baseline = _counts(BASELINE, groups[BASELINE])
            others = {name: _counts(name, groups[name]) for name in names}
            row.result = cv_stats.compare_cv("ner", baseline, others, **options)
        except ValueError as e:
            row.not_tested = str(e)
        rows.append(row)
    return rows


def _spread(values: Sequence[float]) -> str:
    points = [100 * v for v in values]
    mean = sum(points) / len(points)
    deviation = (sum((p - mean) ** 2 for p in points) / (len(points) - 1)) ** 0.5 if len(points) > 1 else 0.0
    return f"{mean:.2f} ± {deviation:.2f}"


def cv_lines(rows: Sequence[CvRow], times: Optional[Path], resamples: int, heading: str = "##") -> List[str]:
    """The report's section on the cross-validation (under a ``heading`` of that level); none
    without rows."""
    if not rows:
        return []
    cpu, wall = robustness_times(times)
    timing = (
        f"The tweets workflow (`python -m scripts run-workflow tweets`) took {duration(cpu)} of CPU time "
        f"({duration(wall)} of wall time summed over its steps)."
        if cpu is not None
        else "The tweets workflow's step times were not recorded (`python -m scripts run-workflow tweets` records them)."
    )
    per_run, pooled = [], []
    for row in rows:
        result = row.result
        own = result.per_bilm if result else [None] * len(row.members)
        for name, bilm, test in zip(row.members, row.bilms or [BilmRun(None)] * len(row.members), own):
            per_run.append(
                [
                    name,
                    (bilm.folder.as_posix() if bilm.folder else bilm.path or "n/a")
                    + (f" (seed {bilm.seed})" if bilm.seed is not None else ""),
                    _spread(test.baseline_scores) if test else "n/a",
                    _spread(test.other_scores) if test else "n/a",
                    f"{test.difference * 100:+.2f}" if test else "n/a",
                    f"{test.ci_low * 100:+.2f} to {test.ci_high * 100:+.2f}" if test else "n/a",
                    p_text(test.p_value) if test else "n/a",
                ]
            )
        pooled.append(
            [
                f"{row.setting} vs {row.baseline}",
                f"{len(result.bilms)} x {len(result.seeds)} x {len(result.folds)} x {sum(result.n_docs):,}"
                if result
                else "n/a",
                f"{result.difference * 100:+.2f}" if result else "n/a",
                f"{result.ci_low * 100:+.2f} to {result.ci_high * 100:+.2f}" if result else "n/a",
                p_text(result.p_value) if result else "n/a",
                f"{result.low * 100:+.2f} to {result.high * 100:+.2f}" if result else "n/a",
                row.verdict,
            ]
        )
    lines = [
        f"{heading} WNUT-16 tweets, cross-validated",
        "",
        f"All of WNUT-16's training file in {len(rows[0].folds)} folds (the `tweets` workflow); every "
        f"tweet is tested once. {timing}",
        "",
        markdown_table(
            [
                "setting",
                "biLM (pretraining seed)",
                "baseline (CV runs, mean ± std over seeds)",
                "setting (CV runs)",
                "difference (points)",
                "95% interval (documents)",
                "p",
            ],
            per_run,
        ),
        "",
        markdown_table(
            [
                "comparison",
                "biLMs x seeds x folds x test docs",
                "pooled difference (points)",
                "95% interval",
                "p",
                "range over biLMs",
                "claim",
            ],
            pooled,
        ),
        "",
        CV_METHOD_NOTE.format(resamples=resamples),
        "",
    ]
    for row in rows:
        if row.result is None:
            lines.append(f"- {TASK_DATA}: {row.setting} not tested ({row.not_tested}).")
            continue
        result = row.result
        claim = {"gain": "**gain on every biLM**", "loss": "**loss on every biLM**"}.get(
            result.verdict, "**varies with the biLM** (no gain is claimed)"
        )
        lines.append(
            f"- {TASK_DATA}: {row.setting} vs {row.baseline}: {claim}: {result.difference * 100:+.2f} {SCORE} points "
            f"pooled over {len(result.bilms)} biLMs, {len(result.seeds)} seeds and {len(result.folds)} folds "
            f"({sum(result.n_docs):,} test tweets), 95% interval {result.ci_low * 100:+.2f} to "
            f"{result.ci_high * 100:+.2f}, p = {p_text(result.p_value)}; from {result.low * 100:+.2f} to "
            f"{result.high * 100:+.2f} over the biLMs."
        )
    return lines + [""]
