"""Our own model directory: ``config.json``, ``weights.hdf5`` (named float arrays) and, when the
model has an output softmax, ``vocab.json`` (a JSON list, so any token string survives). Nothing in it is executable: loading reads JSON,
plain text and arrays only.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Union

import h5py
import numpy
import torch

from ..nn.bilm import BiLM
from ..nn.config import BiLMConfig
from .hdf5_arrays import open_hdf5, read_array

PathLike = Union[str, Path]

FORMAT_NAME = "spacy-elmo-bilm"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "weights.hdf5"
VOCAB_FILE = "vocab.json"


def is_model_dir(path: PathLike) -> bool:
    path = Path(path)
    return (path / CONFIG_FILE).is_file() and (path / WEIGHTS_FILE).is_file()


def save_model_dir(model: BiLM, path: PathLike) -> None:
    """Write the model directory; each file goes to a temp name first, then is renamed."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "config": model.config.to_dict()}
    _atomic_write_text(path / CONFIG_FILE, json.dumps(meta, indent=2))
    tmp = path / (WEIGHTS_FILE + ".tmp")
    with h5py.File(tmp, "w") as handle:
        for name, tensor in model.state_dict().items():
            handle.create_dataset(name, data=tensor.detach().cpu().numpy())
    os.replace(tmp, path / WEIGHTS_FILE)
    if model.vocab is not None:
        _atomic_write_text(path / VOCAB_FILE, json.dumps(model.vocab, ensure_ascii=False))
    elif (path / VOCAB_FILE).exists():
        (path / VOCAB_FILE).unlink()


def load_model_dir(path: PathLike) -> BiLM:
    """Rebuild a :class:`BiLM` from :func:`save_model_dir`'s output, checking every array."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"Model directory not found: {path}")
    missing = [name for name in (CONFIG_FILE, WEIGHTS_FILE) if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{path} is not a spacy-elmo model directory: missing {', '.join(missing)}")
    meta = json.loads((path / CONFIG_FILE).read_text(encoding="utf8"))
    if meta.get("format") != FORMAT_NAME:
        raise ValueError(f"{path / CONFIG_FILE} is not a spacy-elmo model config")
    if meta.get("version", 0) > FORMAT_VERSION:
        raise ValueError(f"{path} was written by a newer spacy-elmo (format version {meta['version']})")
    config = BiLMConfig.from_dict(meta["config"])
    vocab = None
    if (path / VOCAB_FILE).is_file():
        vocab = json.loads((path / VOCAB_FILE).read_text(encoding="utf8"))
    model = BiLM(config, vocab=vocab)
    state = model.state_dict()
    with open_hdf5(path / WEIGHTS_FILE) as handle:
        extra = sorted(set(handle.keys()) - set(state))
        if extra:
            raise ValueError(f"{path / WEIGHTS_FILE} has arrays the config does not expect: {extra}")
        loaded = {name: torch.from_numpy(read_array(handle, name, tuple(t.shape))) for name, t in state.items()}
    model.load_state_dict(loaded)
    model.eval()
    return model


def _atomic_write_text(target: Path, text: str) -> None:
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf8")
    os.replace(tmp, target)
