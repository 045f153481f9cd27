"""Training checkpoints that lose nothing and execute nothing.

A checkpoint is one ``torch.save`` file of plain containers (dicts, lists, tuples, numbers,
strings) and tensors: model and optimizer state, RNG states (Python, NumPy, torch, CUDA, the
negative sampler) for every process, the data position of every shard, and counters. It is
read back with ``torch.load(..., weights_only=True)``, which refuses arbitrary objects, and
written to a temporary file that is flushed to disk and then renamed over the old one, so a
crash at any moment leaves either the old or the new checkpoint, never half of one.
"""
from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any, Optional, Union

import numpy
import torch

CHECKPOINT_FILE = "checkpoint.pt"
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


def save_checkpoint(path: Union[str, Path], payload: dict[str, Any]) -> None:
    """Write atomically: temp file, fsync, ``os.replace``, then fsync the folder."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        torch.save({"format": FORMAT, "version": VERSION, **payload}, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def load_checkpoint(path: Union[str, Path]) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No checkpoint at {path}")
    payload = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path} is not a spacy-elmo pretraining checkpoint")
    if payload.get("version", 0) > VERSION:
        raise ValueError(f"{path} was written by a newer spacy-elmo (checkpoint version {payload['version']})")
    return payload


def _fsync_dir(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
