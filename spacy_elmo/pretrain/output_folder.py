"""``run.json``: how a pretraining run ended, in numbers and in one plain sentence.

Written at the end of every session of a run (a resumed one rewrites it), so that a report
can say whether the biLM got the budget it was asked for or was cut short by the wall-clock
guard or a signal.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Optional

from ..durable import write_bytes_atomically
from .output_folder import RUN_FILE
from .settings import TrainingSettings

STOP_REASONS = ("max_tokens", "max_steps", "max_minutes", "signal")


@dataclass(frozen=True)
class RunSummary:
    stopped_by: str
    steps: int
    tokens: int
    max_steps: int
    max_tokens: int
    max_minutes: float
    minutes: float  # wall minutes of training, all sessions of the run together

    def __post_init__(self) -> None:
        if self.stopped_by not in STOP_REASONS:
            raise ValueError(f"stopped_by must be one of {STOP_REASONS}, not {self.stopped_by!r}")

    @classmethod
    def of_session(cls, training: TrainingSettings, steps: int, tokens: int, signalled: bool, minutes: float) -> "RunSummary":
        """The record of a session that ended at ``steps``/``tokens``: a signal, else the budget
        that was used up, else the time guard (the only other way a session ends)."""
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
        write_bytes_atomically(Path(folder) / RUN_FILE, (json.dumps(asdict(self), indent=2) + "\n").encode("utf8"))

    @classmethod
    def from_disk(cls, folder: Path) -> "RunSummary":
        path = Path(folder) / RUN_FILE
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf8"))
            return cls(**data)
        except (ValueError, TypeError) as err:
            raise ValueError(f"{path} is not a pretraining run record: {err}") from err

    def describe(self) -> Optional[str]:
        """One line for a run that the guard or a signal cut short; None for a full run."""
        if self.stopped_by not in ("max_minutes", "signal"):
            return None
        steps = f"step {self.steps:,}" + (f" of {self.max_steps:,}" if self.max_steps else "")
        tokens = f"{self.tokens:,}" + (f" of {self.max_tokens:,}" if self.max_tokens else "") + " tokens"
        if self.stopped_by == "max_minutes":
            return f"Stopped by the {self.max_minutes:g}-minute guard (max_minutes) at {steps} ({tokens})"
        return f"Stopped by a signal at {steps} ({tokens}); continue with --resume"
