"""The choice a user has: spaCy's own pretraining or ELMo, for the same CPU time.

Two parts: the budget table (what the biLM's pretraining and each ``spacy pretrain`` run spent:
the biLM's ``cpu_time.json``, which is the spaCy runs' budget, the step times the parallel runner
recorded, each run's ``run.json``), and one plain sentence that says
what to choose per task, from the paired tests of ELMo vs spaCy's pretraining; it recommends
one of them only where p < 0.05.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import data
from .text import TASK_DATA, markdown_table, p_text

STOPS = {
    "cpu_seconds": "CPU-time budget",
    "max_steps": "update budget",
    "max_epochs": "spaCy's max_epochs",
    "max_tokens": "token budget",
    "max_minutes": "time guard",
    "signal": "a signal",
}


def read_spacy_pretrain_runs(folders: Sequence[Path]) -> Dict[str, dict]:
    """``{folder name: run.json}`` of the ``spacy pretrain`` runs that exist."""
    runs = {}
    for folder in folders:
        path = folder / "run.json"
        if path.is_file():
            value = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(value, dict):
                raise ValueError(f"{path}: expected a JSON object")
            runs[folder.name] = value
    return runs


def read_cpu_time(path: Path) -> Optional[float]:
    """The CPU seconds of a ``cpu_time.json`` (``python -m scripts timed``); None if the file is
    missing or holds none (an OS that does not report it); an error naming a malformed file."""
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise ValueError(f"{path} is not a CPU-time record: {e}") from None
    seconds = record.get("cpu_seconds") if isinstance(record, dict) else None
    return float(seconds) if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) else None


def _cpu(*candidates: object) -> str:
    """The first known CPU seconds (in seconds, as the budgets are)."""
    for seconds in candidates:
        if isinstance(seconds, (int, float)) and not isinstance(seconds, bool):
            return f"{seconds:,.0f} s"
    return "n/a"


def budget_table(
    bilm_run: Optional[dict],
    spacy_runs: Dict[str, dict],
    step_times: dict,
    bilm_cpu_seconds: Optional[float] = None,
    labelling: Sequence[List[str]] = (),
) -> str:
    """One row per pretraining: its CPU time, how it stopped, what it trained on. The biLM's is
    that of its pretraining (``bilm_cpu_seconds``, the spaCy runs' budget), else its step's;
    a spaCy run's is its step's, else its process's (``run.json``). ``labelling``: the rows of
    the teachers' labelling (``silver.labelling_rows``), the other CPU time spent before training."""
    rows = []
    if bilm_run is not None:
        rows.append(
            [
                "biLM (pretrain)",
                _cpu(bilm_cpu_seconds, step_times.get("pretrain", {}).get("cpu_seconds")),
                STOPS.get(bilm_run.get("stopped_by"), str(bilm_run.get("stopped_by"))),
                f"{bilm_run.get('steps', '?'):,}" if isinstance(bilm_run.get("steps"), int) else "?",
                f"{bilm_run['tokens']:,} tokens" if isinstance(bilm_run.get("tokens"), int) else "?",
            ]
        )
    for name, run in spacy_runs.items():
        budget = run.get("cpu_seconds_budget")
        stop = STOPS.get(run.get("stopped_by"), str(run.get("stopped_by")))
        if isinstance(budget, (int, float)):
            stop += f" ({budget:,.0f} s; the process stopped at {run.get('cpu_seconds', 0):,.0f} s)"
        text = f"{run['words']:,} words" if isinstance(run.get("words"), int) else "?"
        if isinstance(run.get("epochs"), int):
            text += f" (in epoch {run['epochs']})"
        rows.append(
            [
                f"spacy pretrain ({name})",
                _cpu(step_times.get(name, {}).get("cpu_seconds"), run.get("cpu_seconds")),
                stop,
                f"{run['steps']:,}" if isinstance(run.get("steps"), int) else "?",
                text,
            ]
        )
    rows += [list(row) for row in labelling]
    return markdown_table(["pretraining (step)", "CPU time", "stopped by", "updates", "text seen"], rows)


def choice_sentence(rows: List[dict]) -> Optional[str]:
    """What a user should choose per task and size, as far as the paired tests of ELMo vs
    spaCy's pretraining allow; None when ELMo was never compared with spaCy's pretraining."""
    parts = []
    for r in rows:
        other, reference = data.parse_setting(r["other"]), data.parse_setting(r["baseline"])
        if r["test"] is None or other[2] != "elmo" or reference[2] != data.SPACY_PRETRAIN:
            continue
        where = f"{TASK_DATA[other[0]]} with the {other[1]} training set"
        numbers = f"ELMo - spaCy's pretraining: {r['delta']:+.2f} points, p = {p_text(r['test'].p_value)}"
        if r["verdict"] == "gain":
            parts.append(f"choose ELMo for {where} ({numbers})")
        elif r["verdict"] == "loss":
            parts.append(f"choose spaCy's pretraining for {where} ({numbers})")
        else:
            parts.append(f"the tests cannot choose between them for {where} ({numbers})")
    if not parts:
        return None
    return "For the same pretraining CPU time, " + "; ".join(parts) + "."


def distilled_choice_sentence(rows: List[dict]) -> Optional[str]:
    """What to choose per task and size once ELMo has been distilled into the baseline's tok2vec:
    against spaCy's pretraining (both run at the baseline's speed) and against ELMo itself (which
    runs the biLM), as far as the paired tests allow; None without a tested distilled setting."""
    fast, slow = [], []
    for r in rows:
        other, reference = data.parse_setting(r["other"]), data.parse_setting(r["baseline"])
        if r["test"] is None or other[2] != data.DISTILLED or reference[2] not in (data.SPACY_PRETRAIN, "elmo"):
            continue
        where = f"{TASK_DATA[other[0]]} with the {other[1]} training set"
        if reference[2] == data.SPACY_PRETRAIN:
            numbers = f"distilled - spaCy's pretraining: {r['delta']:+.2f} points, p = {p_text(r['test'].p_value)}"
            choice = {"gain": "choose the distilled ELMo", "loss": "choose spaCy's pretraining"}
            fast.append(f"{choice.get(r['verdict'], 'the tests cannot choose between them')} for {where} ({numbers})")
        else:
            numbers = f"distilled - ELMo: {r['delta']:+.2f} points, p = {p_text(r['test'].p_value)}"
            choice = {"gain": "the distilled ELMo is better still", "loss": "choose ELMo"}
            slow.append(f"{choice.get(r['verdict'], 'the tests cannot choose between them')} for {where} ({numbers})")
    sentences = []
    if fast:
        sentences.append(
            "For a pipeline as fast as the baseline (no biLM at run time; distilling costs the biLM's "
            "pretraining and as much CPU time again), " + "; ".join(fast) + "."
        )
    if slow:
        sentences.append("Where the biLM can run, ELMo against its distillation: " + "; ".join(slow) + ".")
    return " ".join(sentences) or None
