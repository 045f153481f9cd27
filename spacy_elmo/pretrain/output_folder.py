"""What a pretraining run writes into its ``OUTPUT_DIR``: the file names (spelled nowhere else),
``metrics.jsonl`` (flushed per line, so a killed run keeps them) and ``run.json``."""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Union

from ..durable import remove_leftover_temporaries, write_atomically
from .errors import writing
from .settings import TrainingSettings

CONFIG_FILE = "config.cfg"  # the config of the run's first session, as run
VOCAB_FILE = "vocab.json"  # the output vocabulary
STATS_FILE = "corpus_stats.json"  # what the vocabulary pass read, skipped and cut
CHECKPOINT_FILE = "checkpoint.pt"  # everything a resume needs
METRICS_FILE = "metrics.jsonl"  # one line per evaluation
RUN_FILE = "run.json"  # how the last session ended
INPUTS_FILE = "inputs.json"  # what --auto-resume compares: the parsed settings, the content of their files
MODEL_LAST = "model-last"
MODEL_BEST = "model-best"

# Files that only a pretraining run writes: a folder holding one of them is a run's folder.
RUN_MARKERS = (INPUTS_FILE, CHECKPOINT_FILE, METRICS_FILE, RUN_FILE, STATS_FILE)


def is_run_folder(folder: Path) -> bool:
    return folder.is_dir() and any((folder / name).exists() for name in RUN_MARKERS)


def remove_leftover_temporaries_of_run(folder: Path) -> int:
    """Only the run writes in its folder and model folders: a killed session's temporary files go."""
    with writing(folder):
        return sum(remove_leftover_temporaries(path) for path in (folder, folder / MODEL_LAST, folder / MODEL_BEST))


def write_file(path: Path, data: bytes) -> None:
    with writing(path):
        write_atomically(path, data)


# ---------------------------------------------------------------- metrics.jsonl
def append_metrics(path: Union[str, Path], record: dict[str, Any]) -> None:
    """Append one line and sync it; a symlink is refused."""
    finite = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
    line = (json.dumps(finite) + "\n").encode("utf8")  # JSON has no NaN or infinity
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with writing(path):
        with open(path, "ab", opener=lambda name, _: os.open(name, flags, 0o666)) as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def read_metrics(path: Union[str, Path]) -> list[dict[str, Any]]:
    """The records, skipping a last line cut short by a crash."""
    path = Path(path)
    if not path.is_file():
        return []
    records = []
    for line in path.read_text(encoding="utf8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            records.append(value)
    return records


# ---------------------------------------------------------------- run.json
@dataclass(frozen=True)
class RunSummary:
    """How a session ended, so a report can say whether the biLM got its budget."""

    stopped_by: str
    steps: int
    tokens: int
    max_steps: int
    max_tokens: int
    max_minutes: float
    minutes: float  # wall minutes of training, all sessions of the run together

    @classmethod
    def of_session(
        cls, training: TrainingSettings, steps: int, tokens: int, signalled: bool, minutes: float
    ) -> "RunSummary":
        if signalled:
            reason = "signal"
        elif training.max_tokens > 0 and tokens >= training.max_tokens:
            reason = "max_tokens"
        elif training.max_steps > 0 and steps >= training.max_steps:
            reason = "max_steps"
        else:
            reason = "max_minutes"
        return cls(reason, steps, tokens, training.max_steps, training.max_tokens, training.max_minutes, minutes)

    def to_disk(self, folder: Path) -> None:
        write_file(Path(folder) / RUN_FILE, (json.dumps(asdict(self), indent=2) + "\n").encode("utf8"))

    def time_guard_line(self) -> str:
        steps = f"step {self.steps:,}" + (f" of {self.max_steps:,}" if self.max_steps else "")
        tokens = f"{self.tokens:,}" + (f" of {self.max_tokens:,}" if self.max_tokens else "") + " tokens"
        return f"Stopped by the {self.max_minutes:g}-minute guard (max_minutes) at {steps} ({tokens})"
