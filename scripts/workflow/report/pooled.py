"""The report's comparisons over biLMs (the ``robustness`` workflow): for each setting also
trained on other biLMs (``SETTING@bilmN``), its gain over the baseline per biLM, with each biLM's
dev perplexity, and the gain pooled over the biLMs (``evaluation.pooled_stats``).

Why apart from the rows of one run: the claims of the README's headline are the pooled ones when
they exist. A gain is claimed only where the pooled p < 0.05 and every biLM gains; otherwise the
report says that the gain varies with the biLM, and gives its range.

Which biLM a setting read comes from its pipelines' own configs (``paths.elmo``), so the report
needs no list of biLM folders; what each biLM is comes from its pretraining folder: the seed
(``config.cfg``), the dev perplexity of ``model-best`` (the lowest in ``metrics.jsonl``), how it
ended (``run.json``) and its CPU time (``cpu_time.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..evaluation import pooled_stats
from . import data
from .text import TASK_DATA, duration, markdown_table, p_text, size_text
from .user_choice import read_cpu_time

MODEL_FOLDERS = ("model-best", "model-last")

POOLED_METHOD_NOTE = (
    "Pooled over biLMs: D is the mean over the biLMs of each biLM's difference (its ELMo setting's "
    "mean over seeds minus the baseline's, seeds paired by number, corpus-level scores), the baseline "
    "being the same runs for every biLM. Its 95% interval is a bootstrap over the three crossed sources "
    "of variation ({resamples:,} resamples): each draws the biLMs, the seeds (one draw for the baseline "
    "and every biLM) and the test documents (one draw for every run), each with replacement. p is "
    "two-sided from the same resamples, 2 (1 + the resamples at or beyond 0) / (1 + resamples), so "
    "p < 0.05 only where the 95% interval excludes 0. Few biLMs make the biLM draw coarse (three give "
    "10 distinct draws, and the biLMs' part of the spread shrinks by sqrt(2/3)), so a gain is claimed only "
    "where the pooled p < 0.05 and every biLM gains; otherwise the gain varies with the biLM, and its "
    "range is given. Each biLM's own difference is tested as in the comparisons above."
)


@dataclass
class BilmRun:
    """One biLM of a pool, as its pretraining folder describes it (None: not found)."""

    path: Optional[str]  # the pipelines' paths.elmo
    folder: Optional[Path] = None  # the pretraining run's folder
    seed: Optional[int] = None
    best: Optional[dict] = None  # the metrics.jsonl record of model-best (lowest dev perplexity)
    run: Optional[dict] = None  # run.json
    cpu_seconds: Optional[float] = None

    def as_dict(self) -> dict:
        best = self.best or {}
        return {
            "path": self.path,
            "folder": str(self.folder) if self.folder else None,
            "seed": self.seed,
            "dev_perplexity": best.get("dev_perplexity"),
            "dev_perplexity_forward": best.get("dev_perplexity_forward"),
            "dev_perplexity_backward": best.get("dev_perplexity_backward"),
            "best_step": best.get("step"),
            "stopped_by": (self.run or {}).get("stopped_by"),
            "tokens": (self.run or {}).get("tokens"),
            "cpu_seconds": self.cpu_seconds,
        }


def _seed_of(folder: Path) -> Optional[int]:
    from thinc.api import Config

    try:
        seed = Config().from_disk(folder / "config.cfg", interpolate=False)["system"]["seed"]
    except (OSError, KeyError, ValueError, TypeError):
        return None
    return seed if isinstance(seed, int) else None


def read_bilm_run(path: Optional[str]) -> BilmRun:
    """What the pretraining folder of the biLM at ``path`` (``FOLDER/model-best``) says."""
    if not path:
        return BilmRun(None)
    model = Path(path)
    folder = model.parent if model.name in MODEL_FOLDERS else model
    if not folder.is_dir():
        return BilmRun(path)
    curve = [
        record
        for record in data.read_pretraining_curve(folder / "metrics.jsonl")
        if isinstance(record.get("dev_perplexity"), (int, float))
    ]
    return BilmRun(
        path=path,
        folder=folder,
        seed=_seed_of(folder),
        best=min(curve, key=lambda record: record["dev_perplexity"]) if curve else None,
        run=data.read_run_info(folder),
        cpu_seconds=read_cpu_time(folder / "cpu_time.json"),
    )


def bilm_path_of(setting: data.Setting) -> Optional[str]:
    """The biLM every run of ``setting`` read; a ValueError naming the setting if they differ."""
    paths = {data.elmo_of(Path(run.get("model", ""))) for run in setting.runs}
    if len(paths) > 1:
        raise ValueError(f"the runs of {setting.name} read different biLMs: {sorted(map(str, paths))}")
    return paths.pop() if paths else None


@dataclass
class PooledRow:
    task: str
    size: str
    baseline: str
    setting: str
    members: List[str]
    score: str
    train_docs: Optional[int]
    bilms: List[BilmRun] = field(default_factory=list)
    result: Optional[pooled_stats.PooledResult] = None
    not_tested: Optional[str] = None

    @property
    def verdict(self) -> str:
        return self.result.verdict if self.result else "not tested"

    def as_dict(self) -> dict:
        result = self.result
        return {
            "task": self.task,
            "size": self.size,
            "baseline": self.baseline,
            "setting": self.setting,
            "members": self.members,
            "score": self.score,
            "train_docs": self.train_docs,
            "bilms": [bilm.as_dict() for bilm in self.bilms],
            "delta": result.difference * 100 if result else None,
            "range": [result.low * 100, result.high * 100] if result else None,
            "test": result.as_dict() if result else None,
            "not_tested": self.not_tested,
            "verdict": self.verdict,
        }


def pooled_rows(settings: Dict[str, data.Setting], **options) -> List[PooledRow]:
    """One row per setting trained on several biLMs, with its pooled test where it can be made."""
    rows = []
    for task, size, baseline_name, setting_name, members in data.pooled_groups(list(settings)):
        baseline, runs = settings[baseline_name], [settings[name] for name in members]
        key, score_name = data.main_score(task, baseline.runs + [run for s in runs for run in s.runs])
        row = PooledRow(
            task,
            size,
            baseline_name,
            setting_name,
            members,
            score_name,
            baseline.train_docs or next((s.train_docs for s in runs if s.train_docs), None),
        )
        try:
            row.bilms = [read_bilm_run(bilm_path_of(setting)) for setting in runs]
            known = [path for path in (bilm.path for bilm in row.bilms) if path]
            if len(set(known)) < len(known):
                raise ValueError(f"two of {', '.join(members)} read the same biLM")
            if key is None:
                raise ValueError(f"no {score_name} in the scores")
            seeds = sorted(
                set.intersection(*({s for s in setting.seeds if s is not None} for setting in runs + [baseline]))
            )
            if not seeds:
                raise ValueError(f"no seed common to {baseline_name} and {', '.join(members)}")
            base_counts, *other_counts = data.one_test_file(task, key, [baseline] + runs, seeds)
            row.result = pooled_stats.compare_pooled(
                data.counted_as(task), base_counts, dict(zip(members, other_counts)), **options
            )
        except ValueError as e:
            row.not_tested = str(e)
        rows.append(row)
    return rows


def _bilm_label(bilm: BilmRun) -> str:
    folder = bilm.folder.as_posix() if bilm.folder else (bilm.path or "unknown biLM")
    return f"{folder} (seed {bilm.seed})" if bilm.seed is not None else folder


def _perplexity(bilm: BilmRun) -> str:
    best = bilm.best
    if not best:
        return "n/a"
    return (
        f"{best['dev_perplexity']:.1f} ({best.get('dev_perplexity_forward', float('nan')):.1f} / "
        f"{best.get('dev_perplexity_backward', float('nan')):.1f})"
    )


def per_bilm_table(rows: Sequence[PooledRow]) -> str:
    """One line per biLM of each pooled setting: its perplexity and its own gain."""
    lines = []
    for row in rows:
        own = row.result.per_bilm if row.result else [None] * len(row.members)
        for name, bilm, test in zip(row.members, row.bilms or [BilmRun(None)] * len(row.members), own):
            lines.append(
                [
                    TASK_DATA[row.task],
                    size_text(row.task, row.size, row.train_docs),
                    name,
                    _bilm_label(bilm),
                    _perplexity(bilm),
                    duration(bilm.cpu_seconds) if bilm.cpu_seconds is not None else "n/a",
                    f"{100 * sum(test.other_scores) / len(test.other_scores):.2f}" if test else "n/a",
                    f"{test.difference * 100:+.2f}" if test else "n/a",
                    f"{test.ci_low * 100:+.2f} to {test.ci_high * 100:+.2f}" if test else "n/a",
                    p_text(test.p_value) if test else "n/a",
                    test.verdict if test else "not tested",
                ]
            )
    return markdown_table(
        [
            "task",
            "training data",
            "setting",
            "biLM (pretraining seed)",
            "dev perplexity of model-best (fwd / bwd)",
            "pretraining CPU time",
            "score (mean over seeds)",
            "difference vs baseline (points)",
            "95% interval",
            "p",
            "verdict",
        ],
        lines,
    )


def pooled_table(rows: Sequence[PooledRow]) -> str:
    """One line per pooled setting: D, its interval and p, the range over biLMs, the claim."""
    lines = []
    for row in rows:
        result = row.result
        lines.append(
            [
                TASK_DATA[row.task],
                size_text(row.task, row.size, row.train_docs),
                f"{row.setting} vs {row.baseline}",
                f"{len(result.bilms)} x {len(result.seeds)} x {result.n_docs:,}" if result else "n/a",
                f"{result.difference * 100:+.2f}" if result else "n/a",
                f"{result.ci_low * 100:+.2f} to {result.ci_high * 100:+.2f}" if result else "n/a",
                p_text(result.p_value) if result else "n/a",
                f"{result.low * 100:+.2f} to {result.high * 100:+.2f}" if result else "n/a",
                row.verdict,
            ]
        )
    return markdown_table(
        [
            "task",
            "training data",
            "comparison",
            "biLMs x seeds x test docs",
            "pooled difference (points)",
            "95% interval",
            "p",
            "range over biLMs",
            "claim",
        ],
        lines,
    )


def pooled_sentence(row: PooledRow) -> str:
    """The claim a pooled comparison supports: a gain only where it holds pooled and for every biLM."""
    where = f"{TASK_DATA[row.task]}, {row.size} training set"
    result = row.result
    if result is None:
        return f"{where}: {row.setting} over biLMs: not tested ({row.not_tested}); no gain is claimed."
    numbers = (
        f"{result.difference * 100:+.2f} {row.score} points pooled over {len(result.bilms)} biLMs, 95% interval "
        f"{result.ci_low * 100:+.2f} to {result.ci_high * 100:+.2f}, p = {p_text(result.p_value)}; "
        f"from {result.low * 100:+.2f} to {result.high * 100:+.2f} over the biLMs"
    )
    if result.verdict == "gain":
        return f"{where}: **gain on every biLM**: {row.setting} beats {row.baseline} ({numbers})."
    if result.verdict == "loss":
        return f"{where}: **loss on every biLM**: {row.setting} is below {row.baseline} ({numbers})."
    return f"{where}: {row.setting} vs {row.baseline} **varies with the biLM** ({numbers}); no gain is claimed."


def robustness_times(path: Optional[Path]) -> Tuple[Optional[float], Optional[float]]:
    """CPU and wall seconds summed over the robustness workflow's recorded steps; None if none."""
    if path is None or not path.is_file():
        return None, None
    try:
        times = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    entries = [entry for entry in times.values() if isinstance(entry, dict)] if isinstance(times, dict) else []
    cpus = [entry.get("cpu_seconds") for entry in entries]
    walls = [entry.get("seconds") for entry in entries]
    cpu = sum(cpus) if entries and all(isinstance(c, (int, float)) for c in cpus) else None
    wall = sum(walls) if entries and all(isinstance(w, (int, float)) for w in walls) else None
    return cpu, wall


def pooled_lines(
    rows: Sequence[PooledRow], times: Optional[Path], resamples: int, heading: str = "##"
) -> Tuple[List[str], List[str]]:
    """The section on the biLMs' pool (under a ``heading`` of that level) and the warnings it
    gives (biLMs cut short by the time guard or a signal); nothing without pooled rows."""
    if not rows:
        return [], []
    cpu, wall = robustness_times(times)
    if cpu is not None:
        timing = (
            f"The robustness workflow (`python -m scripts run-workflow robustness`) took {duration(cpu)} of CPU "
            f"time ({duration(wall)} of wall time summed over its steps)."
        )
    else:
        timing = (
            "The robustness workflow's step times were not recorded (`python -m spacy project run robustness` "
            "does not time its steps; `python -m scripts run-workflow robustness` does)."
        )
    warnings = []
    seen = set()
    for row in rows:
        for bilm in row.bilms:
            if bilm.run is None or bilm.folder in seen:
                continue
            seen.add(bilm.folder)
            sentence, loud = data.describe_run(bilm.run, f"Pretraining of the biLM {bilm.folder.as_posix()}")
            if loud:
                warnings.append(sentence)
    lines = [
        f"{heading} Over biLMs: does the gain replicate?",
        "",
        "The biLM pretrained again with other seeds at the same token budget (the `robustness` workflow), and "
        "the ELMo settings trained on each one (SETTING@bilmN: on the biLM of pretraining seed N; SETTING: on "
        f"the `all` workflow's biLM), against the same baseline runs. {timing}",
        "",
    ]
    lines += [f"> **Warning:** {warning}" for warning in warnings] + ([""] if warnings else [])
    lines += [
        per_bilm_table(rows),
        "",
        pooled_table(rows),
        "",
        POOLED_METHOD_NOTE.format(resamples=resamples),
        "",
    ]
    lines += [f"- {pooled_sentence(row)}" for row in rows] + [""]
    return lines, warnings
