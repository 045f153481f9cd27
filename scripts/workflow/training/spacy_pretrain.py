"""spaCy's own pretraining (``spacy pretrain``) of a training config's tok2vec, stopped at a
budget of CPU seconds: what a user gets from spaCy for the CPU time the biLM took.

The budget is the CPU time of the workflow's biLM pretraining (the ``pretrain`` step runs it
under ``python -m scripts timed``, which writes ``training/bilm/cpu_time.json``; the
spacy-pretrain steps declare that file as a dependency), and it is spent by this whole
process: reading the text, building the pipeline, training. spaCy's loop
(``spacy.training.pretrain.pretrain``, unchanged) has epochs and no time limit, so its batcher
is wrapped: before each batch the wrapper reads the process's CPU time and, once the
budget is spent, raises :class:`BudgetSpent`. The loop's own ``finally`` then writes
``model-last.bin`` with the weights after the last finished update (never a half-done one),
and ``run.json`` records what was matched: the budget, the CPU seconds spent, the updates,
words and epochs. Training is seeded, so ``max_steps`` set to the recorded updates gives the
same weights again (tested): CPU time picks the stopping point, the steps make it repeatable.

The text is the biLM's own pretraining text (one sentence per line), written as the JSONL
(``{"text": line}``) that spaCy's ``spacy.JsonlCorpus.v1`` reads; spaCy's tokenizer splits
each line, as for any user's raw text.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

from spacy.util import registry
from wasabi import msg

from .runs import describe_run, is_done, mark_done

BUDGET_BATCHER = "spacy_elmo_workflow.stop_at_budget.v1"
WEIGHTS = "model-last.bin"
RUN_FILE = "run.json"
TEXT_FILE = "text.jsonl"


def process_cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (all its threads)."""
    times = os.times()
    return times.user + times.system


class BudgetSpent(Exception):
    """Raised in spaCy's pretraining loop between two updates when the budget is spent."""

    def __init__(self, reason: str, steps: int, epochs: int, cpu_seconds: float) -> None:
        super().__init__(f"{reason}: {steps} updates, {cpu_seconds:.1f} CPU seconds")
        self.reason, self.steps, self.epochs, self.cpu_seconds = reason, steps, epochs, cpu_seconds


@registry.batchers(BUDGET_BATCHER)
def stop_at_budget(
    batcher: Callable[[Iterable[Any]], Iterable[List[Any]]],
    cpu_seconds: Optional[float] = None,
    max_steps: Optional[int] = None,
) -> Callable[[Iterable[Any]], Iterator[List[Any]]]:
    """``batcher``'s batches until this process has used ``cpu_seconds`` or yielded
    ``max_steps`` batches (counted over all epochs); then :class:`BudgetSpent`. A CPU budget
    always buys the first update: start-up alone can spend a tiny one, and a run that updated
    nothing has no weights to save."""
    state = {"steps": 0, "epochs": 0}

    def batches(items: Iterable[Any]) -> Iterator[List[Any]]:
        state["epochs"] += 1
        for batch in batcher(items):
            spent = process_cpu_seconds()
            if max_steps is not None and state["steps"] >= max_steps:
                raise BudgetSpent("max_steps", state["steps"], state["epochs"], spent)
            if cpu_seconds is not None and spent >= cpu_seconds and state["steps"] > 0:
                raise BudgetSpent("cpu_seconds", state["steps"], state["epochs"], spent)
            state["steps"] += 1
            yield batch

    return batches


@dataclass
class PretrainRun:
    """What a budgeted ``spacy pretrain`` did (``run.json``)."""

    stopped_by: str  # cpu_seconds, max_steps or max_epochs (spaCy's own end)
    cpu_seconds_budget: Optional[float]
    max_steps: Optional[int]
    cpu_seconds: float  # of the whole process when it stopped
    wall_seconds: float
    steps: Optional[int]  # updates done (unknown only when spaCy's max_epochs ended the run)
    epochs: Optional[int]  # epochs started
    words: Optional[int]  # words trained on (spaCy's log)


def write_text_jsonl(text: Path, jsonl: Path) -> int:
    """One ``{"text": line}`` per non-empty line of ``text``; returns the lines written."""
    n_lines = 0
    with text.open(encoding="utf-8") as lines, jsonl.open("w", encoding="utf-8") as out:
        for line in lines:
            line = line.rstrip("\r\n")
            if line.strip():
                out.write(json.dumps({"text": line}, ensure_ascii=False) + "\n")
                n_lines += 1
    return n_lines


def _words_trained(output_dir: Path) -> Optional[int]:
    """spaCy's count of the words trained on, from the last line of its ``log.jsonl``."""
    try:
        lines = (output_dir / "log.jsonl").read_text(encoding="utf-8").splitlines()
        return int(json.loads(lines[-1])["nr_word"])
    except (OSError, IndexError, KeyError, ValueError):
        return None


def pretrain_within_budget(config_path: Path, output_dir: Path, text: Path, overrides: Dict[str, Any],
                           cpu_seconds: Optional[float] = None, max_steps: Optional[int] = None) -> PretrainRun:
    """``spacy pretrain CONFIG OUTPUT_DIR`` on ``text`` until the budget (CPU seconds of this
    process, or updates) is spent; ``OUTPUT_DIR/model-last.bin`` holds the weights.

    A run finished earlier with the same config, overrides, text and budget is kept as it is.
    """
    from spacy.training.pretrain import pretrain
    from spacy.util import load_config

    if cpu_seconds is None and max_steps is None:
        raise ValueError("give a budget: CPU seconds or a number of updates")
    description = {**describe_run(config_path, {**overrides, "paths.raw_text": str(text)}),
                   "cpu_seconds": cpu_seconds, "max_steps": max_steps}
    if is_done(output_dir, description, WEIGHTS):
        msg.good(f"{output_dir}: finished earlier with the same inputs and budget, skipping")
        return PretrainRun(**json.loads((output_dir / RUN_FILE).read_text(encoding="utf-8")))
    if output_dir.exists():
        shutil.rmtree(output_dir)
    output_dir.mkdir(parents=True)
    started = time.perf_counter()
    write_text_jsonl(text, output_dir / TEXT_FILE)
    config = load_config(config_path, overrides={**overrides, "paths.raw_text": str(output_dir / TEXT_FILE)},
                         interpolate=False)
    config["pretraining"]["batcher"] = {"@batchers": BUDGET_BATCHER, "batcher": config["pretraining"]["batcher"],
                                        "cpu_seconds": cpu_seconds, "max_steps": max_steps}
    config.to_disk(output_dir / "config.cfg")
    msg.divider(f"spacy pretrain {config_path} --output {output_dir}")
    stop = None
    try:
        pretrain(config.interpolate(), output_dir, silent=False)
    except BudgetSpent as spent:
        stop = spent
    run = PretrainRun(
        stopped_by=stop.reason if stop else "max_epochs", cpu_seconds_budget=cpu_seconds, max_steps=max_steps,
        cpu_seconds=round(process_cpu_seconds(), 1), wall_seconds=round(time.perf_counter() - started, 1),
        steps=stop.steps if stop else None, epochs=stop.epochs if stop else None,
        words=_words_trained(output_dir))
    (output_dir / RUN_FILE).write_text(json.dumps(asdict(run), indent=2) + "\n", encoding="utf-8")
    mark_done(output_dir, description, WEIGHTS)
    msg.good(f"spacy pretrain stopped by {run.stopped_by}: {run.steps} updates, {run.words} words, "
             f"{run.cpu_seconds:.0f} CPU seconds (budget {cpu_seconds}); weights in {output_dir / WEIGHTS}")
    return run
