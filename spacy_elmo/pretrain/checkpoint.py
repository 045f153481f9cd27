"""Training checkpoints that lose nothing and execute nothing.

A checkpoint is one ``torch.save`` file of plain containers (dicts, lists, tuples, numbers,
strings) and tensors: model and optimizer state, RNG states (Python, NumPy, torch, CUDA, the
negative sampler) for every process, the data position of every shard, and counters. It is
read back with ``torch.load(..., weights_only=True)``, which refuses arbitrary objects, and
written to a temporary file that is flushed to disk and then renamed over the old one, so a
crash at any moment leaves either the old or the new checkpoint, never half of one.

Failures are one line naming the file: a full disk while saving (the old checkpoint is still
there), and an empty, truncated or foreign file when resuming.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Optional, Union

import numpy
import torch

from ..durable import io_error_reason, temporary_path, write_atomically

FORMAT = "spacy-elmo-pretrain-checkpoint"
VERSION = 1


def capture_rng(generator: Optional[torch.Generator] = None) -> dict[str, Any]:
    """This process's random states, as weights-only-loadable data."""
    version, internal, gauss = random.getstate()
    kind, keys, position, has_gauss, cached = numpy.random.get_state()
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


class CheckpointError(OSError):
    """A checkpoint that cannot be written or read; the message names the file."""


def save_checkpoint(path: Union[str, Path], payload: dict[str, Any]) -> None:
    """Write atomically (:mod:`spacy_elmo.durable`): the previous checkpoint stays until the new
    one is complete on disk."""
    path = Path(path)
    writers: list[_RecordingWriter] = []

    def write(handle) -> None:
        writers.append(_RecordingWriter(handle))
        torch.save({"format": FORMAT, "version": VERSION, **payload}, writers[0])

    try:
        write_atomically(path, write)
    except (OSError, RuntimeError) as err:
        kept = f"; the previous checkpoint {path} is unchanged" if path.exists() else ""
        cause = writers[0].error if writers and writers[0].error is not None else err
        raise CheckpointError(f"Could not write the checkpoint {temporary_path(path)}: {_reason(cause)}{kept}") from err


def save_model(model: Any, path: Union[str, Path], checkpoint: Union[str, Path]) -> None:
    """``model.to_disk(path)`` (model-best, model-last), where a full disk is one error naming the
    file: the model directory is written whole or not at all (its files are built in memory and
    renamed into place together), so its previous version and the ``checkpoint`` stay usable."""
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
        raise FileNotFoundError(f"No checkpoint at {path}")
    if path.stat().st_size == 0:
        raise CheckpointError(f"{path} is empty (0 bytes): it cannot be resumed; start a new run in another folder")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # a damaged zip or a refused object: torch raises many kinds
        raise CheckpointError(
            f"{path} cannot be read as a checkpoint ({type(err).__name__}: {_reason(err)}); "
            "it is damaged or not a spacy-elmo checkpoint"
        ) from err
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a spacy-elmo pretraining checkpoint")
    if payload.get("version", 0) > VERSION:
        raise ValueError(f"{path} was written by a newer spacy-elmo (checkpoint version {payload['version']})")
    return payload


class _RecordingWriter:
    """A file wrapper that keeps the first ``OSError`` of a write: torch reports a failed write
    (a full disk) only as an internal position mismatch."""

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


def _reason(err: BaseException) -> str:
    """The first line of an error's message (torch's can run to dozens of lines)."""
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__
