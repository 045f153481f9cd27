"""The choice a user has: spaCy's own pretraining or ELMo, for the same CPU time.

Two parts: the budget table (what the biLM's ``pretrain`` step and each ``spacy pretrain`` run
spent, from ``step_clock``'s log and each run's ``run.json``), and one plain sentence that says
what to choose per task, from the paired tests of ELMo vs spaCy's pretraining (and of spaCy's
pretraining vs none); it recommends only where p < 0.05.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import data
from .text import TASK_DATA, markdown_table, p_text

STOPS = {"cpu_seconds": "CPU-time budget", "max_steps": "update budget", "max_epochs": "spaCy's max_epochs",
         "max_tokens": "token budget", "max_minutes": "time guard", "signal": "a signal"}


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


def _cpu(step_times: dict, name: str) -> str:
    """The step's CPU seconds (in seconds, as the budgets are)."""
    seconds = step_times.get(name, {}).get("cpu_seconds")
    return f"{seconds:,.0f} s" if isinstance(seconds, (int, float)) else "n/a"


def budget_table(bilm_run: Optional[dict], spacy_runs: Dict[str, dict], step_times: dict) -> str:
    """One row per pretraining: the CPU time of its step, how it stopped, what it trained on."""
    rows = []
    if bilm_run is not None:
        rows.append(["biLM (pretrain)", _cpu(step_times, "pretrain"),
                     STOPS.get(bilm_run.get("stopped_by"), str(bilm_run.get("stopped_by"))),
                     f"{bilm_run.get('steps', '?'):,}" if isinstance(bilm_run.get("steps"), int) else "?",
                     f"{bilm_run['tokens']:,} tokens" if isinstance(bilm_run.get("tokens"), int) else "?"])
    for name, run in spacy_runs.items():
        budget = run.get("cpu_seconds_budget")
        stop = STOPS.get(run.get("stopped_by"), str(run.get("stopped_by")))
        if isinstance(budget, (int, float)):
            stop += f" ({budget:,.0f} s; the process stopped at {run.get('cpu_seconds', 0):,.0f} s)"
        text = f"{run['words']:,} words" if isinstance(run.get("words"), int) else "?"
        if isinstance(run.get("epochs"), int):
            text += f" (in epoch {run['epochs']})"
        rows.append([f"spacy pretrain ({name})", _cpu(step_times, name), stop,
                     f"{run['steps']:,}" if isinstance(run.get("steps"), int) else "?", text])
    return markdown_table(["pretraining (step)", "CPU time of the step", "stopped by", "updates", "text seen"], rows)


def _clause(row: dict) -> str:
    test = row["test"]
    return f"{row['delta']:+.2f} points, p = {p_text(test.p_value)}"


def choice_sentence(rows: List[dict]) -> Optional[str]:
    """What a user should choose per task and size, as far as the paired tests allow; None
    when ELMo was never compared with spaCy's pretraining."""
    tested = {(r["other"], r["baseline"]): r for r in rows if r["test"] is not None}
    parts = []
    for r in rows:
        other, reference = data.parse_setting(r["other"]), data.parse_setting(r["baseline"])
        if r["test"] is None or other[2] != "elmo" or reference[2] != data.SPACY_PRETRAIN:
            continue
        task, size = other[0], other[1]
        where = f"{TASK_DATA[task]}, {size} training set"
        verdict = r["verdict"]
        if verdict == "gain":
            advice = f"choose ELMo (ELMo - spaCy's pretraining: {_clause(r)})"
        elif verdict == "loss":
            advice = f"choose spaCy's pretraining (ELMo - spaCy's pretraining: {_clause(r)})"
        else:
            advice = f"the test cannot tell ELMo from spaCy's pretraining (ELMo - spaCy's pretraining: {_clause(r)})"
        vs_none = tested.get((r["baseline"], data.setting_name(task, size, "baseline")))
        if vs_none is not None:
            word = {"gain": "better than", "loss": "worse than"}.get(vs_none["verdict"], "not distinguishable from")
            advice += f"; spaCy's pretraining is {word} no pretraining ({_clause(vs_none)})"
        parts.append(f"for {where}, {advice}")
    if not parts:
        return None
    return "For the same pretraining CPU time: " + "; ".join(parts) + "."
