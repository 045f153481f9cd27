"""What a checkpoint holds, as one typed value: the only place its keys are written and read.

``checkpoint.py`` makes the file safe (atomic writes, weights-only reads); this module says what
is in it. The keys are the ones every earlier release wrote, so their checkpoints still resume;
the counters that older checkpoints lack start at their defaults.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from .checkpoint import load_checkpoint, save_checkpoint
from .data.batches import ShardState


@dataclass
class Progress:
    """How far a run has got: the counters the training loop advances and a resume restores."""

    step: int = 0
    tokens: int = 0
    best_score: Optional[float] = None  # the lowest dev (or train) perplexity so far: model-best's
    since_eval: list[float] = field(default_factory=lambda: [0.0, 0.0])  # summed loss and predictions since the last evaluation
    elapsed_seconds: float = 0.0  # wall seconds of training, all sessions (in the loop: the earlier ones)
    decay_start_tokens: Optional[int] = None  # tokens done when the warm-up ended


@dataclass(frozen=True)
class CheckpointState:
    """A run's state after a step: progress, data positions, random states, weights, optimizer.

    ``shards`` holds every shard's resume point and ``rng`` every process's random states, in
    rank order; ``model`` and ``optimizer`` are state dicts on the CPU. ``train_files`` is the
    fingerprint of the training text the shard positions point into (None in checkpoints of
    releases before it; see :mod:`.text_fingerprint`).
    """

    progress: Progress
    n_shards: int
    shards: dict[int, ShardState]
    rng: list[dict[str, Any]]
    model_config: dict[str, Any]
    model: dict[str, Any]
    optimizer: dict[str, Any]
    train_files: Optional[list[dict[str, Any]]] = None

    def save(self, path: Union[str, Path]) -> None:
        """Write atomically (see :func:`save_checkpoint`)."""
        progress = self.progress
        save_checkpoint(path, {
            "step": progress.step,
            "tokens": progress.tokens,
            "best_score": progress.best_score,
            "since_eval": list(progress.since_eval),
            "elapsed_seconds": progress.elapsed_seconds,
            "decay_start_tokens": progress.decay_start_tokens,
            "n_shards": self.n_shards,
            "shards": {str(shard): state.to_dict() for shard, state in self.shards.items()},
            "rng": self.rng,
            "model_config": self.model_config,
            "model": self.model,
            "optimizer": self.optimizer,
            "train_files": self.train_files,
        })

    @classmethod
    def load(cls, path: Union[str, Path]) -> "CheckpointState":
        """Read a checkpoint of this or any earlier release; errors name the file."""
        payload = load_checkpoint(path)
        best = payload.get("best_score")
        start = payload.get("decay_start_tokens")
        progress = Progress(
            step=int(payload["step"]),
            tokens=int(payload["tokens"]),
            best_score=None if best is None else float(best),
            since_eval=[float(value) for value in payload.get("since_eval", [0.0, 0.0])],
            elapsed_seconds=float(payload.get("elapsed_seconds", 0.0)),
            decay_start_tokens=None if start is None else int(start),
        )
        return cls(
            progress=progress,
            n_shards=int(payload["n_shards"]),
            shards={int(shard): ShardState.from_dict(state) for shard, state in payload["shards"].items()},
            rng=list(payload.get("rng", [])),
            model_config=dict(payload["model_config"]),
            model=payload["model"],
            optimizer=payload["optimizer"],
            train_files=payload.get("train_files"),
        )
