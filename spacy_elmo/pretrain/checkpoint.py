"""Training checkpoints: one ``torch.save`` file of plain containers and tensors, written
atomically and read with ``weights_only=True`` (so it executes nothing); :class:`CheckpointState`
is the only place its keys are spelled. Every failure is a :class:`~.errors.CheckpointError`
naming the file."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Optional, Union, cast

import numpy
import torch

from ..durable import io_error_reason, write_atomically
from .data.batches import ShardState
from .errors import CheckpointError, ForeignCheckpointError, InputNotFoundError

FORMAT = "spacy-elmo-pretrain-checkpoint"
VERSION = 1


@dataclass
class Progress:
    """How far a run has got: the counters the training loop advances and a resume restores."""

    step: int = 0
    tokens: int = 0
    best_score: Optional[float] = None  # the lowest dev (or train) perplexity so far: model-best's
    since_eval: list[float] = field(default_factory=lambda: [0.0, 0.0])  # summed loss, predictions
    elapsed_seconds: float = 0.0  # wall seconds of training, all sessions (in the loop: the earlier ones)
    decay_start_tokens: Optional[int] = None  # tokens done when the warm-up ended


@dataclass(frozen=True)
class CheckpointState:
    """A run's state after a step; the fingerprints of text and vocabulary are None in older checkpoints."""

    progress: Progress
    n_shards: int
    shards: dict[int, ShardState]
    rng: list[dict[str, Any]]
    model_config: dict[str, Any]
    model: dict[str, Any]
    optimizer: dict[str, Any]
    train_files: Optional[list[dict[str, Any]]] = None
    vocab_sha256: Optional[str] = None

    def save(self, path: Union[str, Path]) -> None:
        payload = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        progress = dataclasses.asdict(payload.pop("progress"))
        payload["shards"] = {str(shard): dataclasses.asdict(state) for shard, state in self.shards.items()}
        save_checkpoint(path, {**progress, **payload})

    @classmethod
    def load(cls, path: Union[str, Path]) -> "CheckpointState":
        """A checkpoint of this or an earlier release (missing counters take their defaults)."""
        payload = load_checkpoint(path)
        counters = {f.name for f in dataclasses.fields(Progress)}
        progress = Progress(**{key: value for key, value in payload.items() if key in counters})
        values = {f.name: payload[f.name] for f in dataclasses.fields(cls) if f.name in payload}
        shards = {int(shard): ShardState(**state) for shard, state in payload["shards"].items()}
        return cls(**{"rng": [], **values, "progress": progress, "shards": shards})


def capture_rng(generator: Optional[torch.Generator] = None) -> dict[str, Any]:
    """This process's random states, as weights-only-loadable data."""
    version, internal, gauss = random.getstate()
    # numpy's global generator is an MT19937, whose legacy state is this tuple (never the dict)
    legacy_state = cast("tuple[str, numpy.ndarray, int, int, float]", numpy.random.get_state(legacy=True))
    kind, keys, position, has_gauss, cached = legacy_state
    state: dict[str, Any] = {
        "python": [version, list(internal), gauss],
        "numpy": [kind, torch.from_numpy(keys.astype(numpy.int64)), int(position), int(has_gauss), float(cached)],
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }
    if generator is not None:
        state["sampler"] = generator.get_state()
    return state


def restore_rng(state: dict[str, Any], generator: Optional[torch.Generator] = None) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    kind, keys, position, has_gauss, cached = state["numpy"]
    numpy.random.set_state((kind, keys.numpy().astype(numpy.uint32), position, has_gauss, cached))
    torch.set_rng_state(state["torch"])
    if state.get("cuda") and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if generator is not None and "sampler" in state:
        generator.set_state(state["sampler"])


def save_checkpoint(path: Union[str, Path], payload: dict[str, Any]) -> None:
    """The previous checkpoint stays until the new one is complete on disk."""
    path = Path(path)
    writers: list[_RecordingWriter] = []

    def write(handle) -> None:
        writers.append(_RecordingWriter(handle))
        # torch.save only writes and flushes: the wrapper is file enough
        torch.save({"format": FORMAT, "version": VERSION, **payload}, cast(IO[bytes], writers[0]))

    try:
        write_atomically(path, write)
    except (OSError, RuntimeError) as err:
        kept = f"; the previous checkpoint {path} is unchanged" if path.exists() else ""
        cause = writers[0].error if writers and writers[0].error is not None else err
        raise CheckpointError(f"Could not write the checkpoint {path}: {io_error_reason(cause)}{kept}") from err


def save_model(model: Any, path: Union[str, Path], checkpoint: Union[str, Path]) -> None:
    """``model.to_disk(path)``, written whole or not at all; a full disk is one error naming the file."""
    try:
        model.to_disk(path)
    except OSError as err:
        again = "continue with --resume" if Path(checkpoint).is_file() else "run the same command again"
        raise CheckpointError(
            f"Could not write the model {err.filename or path} ({io_error_reason(err)}); {path} keeps "
            f"its previous files: free some space and {again}"
        ) from err


def load_checkpoint(path: Union[str, Path]) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise InputNotFoundError(f"No checkpoint at {path}")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path} is empty (0 bytes): it cannot be resumed; start a new run in another folder")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a damaged zip or a refused object: torch raises many kinds
        raise CheckpointError(
            f"{path} cannot be read as a checkpoint ({type(err).__name__}: {io_error_reason(err)}); "
            "it is damaged or not a spacy-elmo checkpoint"
        ) from err
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ForeignCheckpointError(f"{path} is not a spacy-elmo pretraining checkpoint")
    if payload.get("version", 0) > VERSION:
        raise ForeignCheckpointError(
            f"{path} was written by a newer spacy-elmo (checkpoint version {payload['version']})"
        )
    return payload


class _RecordingWriter:
    """Keeps a write's ``OSError``: torch reports a full disk only as an internal position mismatch."""

    def __init__(self, handle) -> None:
        self.handle = handle
        self.error: Optional[OSError] = None

    def write(self, data) -> int:
        try:
            return self.handle.write(data)
        except OSError as err:
            self.error = self.error or err
            raise

    def flush(self) -> None:
        self.handle.flush()
