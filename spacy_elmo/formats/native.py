"""Our own model directory: ``config.json``, ``weights.hdf5`` (named float arrays) and, when the
model has an output softmax, ``vocab.json`` (a JSON list, so any token string survives); a
code-point model (ELMoForManyLangs') also has its dictionaries, ``chars.json`` and, with a word
table, ``words.json`` (JSON objects string -> id). Nothing in it is executable: loading reads JSON,
plain text and arrays only.

This module knows the files, not the model: it reads and writes a :class:`BiLMConfig`, the
vocabulary and arrays named as in ``BiLM.state_dict()``. The caller says which names and shapes
the config implies (``BiLM.state_shapes``), so that every array is checked before any is read.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

import h5py
import numpy

from ..config import BYTE_ENCODING, BiLMConfig, Lexicon
from .hdf5_arrays import check_shape, open_hdf5, read_array

PathLike = Union[str, Path]

FORMAT_NAME = "spacy-elmo-bilm"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "weights.hdf5"
VOCAB_FILE = "vocab.json"
CHARS_FILE = "chars.json"
WORDS_FILE = "words.json"


def is_model_dir(path: PathLike) -> bool:
    path = Path(path)
    return (path / CONFIG_FILE).is_file() and (path / WEIGHTS_FILE).is_file()


def write_model_dir(
    path: PathLike,
    config: BiLMConfig,
    state: Mapping[str, numpy.ndarray],
    vocab: Optional[Sequence[str]] = None,
    lexicon: Optional[Lexicon] = None,
) -> None:
    """Write the model directory; each file goes to a temp name first, then is renamed."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "config": config.to_dict()}
    _atomic_write_text(path / CONFIG_FILE, json.dumps(meta, indent=2))
    tmp = path / (WEIGHTS_FILE + ".tmp")
    with h5py.File(tmp, "w") as handle:
        for name, array in state.items():
            handle.create_dataset(name, data=array)
    os.replace(tmp, path / WEIGHTS_FILE)
    if vocab is not None:
        _atomic_write_text(path / VOCAB_FILE, json.dumps(list(vocab), ensure_ascii=False))
    elif (path / VOCAB_FILE).exists():
        (path / VOCAB_FILE).unlink()
    _write_lexicon(path, lexicon)


def read_model_config(path: PathLike) -> tuple[BiLMConfig, Optional[list[str]]]:
    """The config and vocabulary (None without ``vocab.json``) of :func:`write_model_dir`'s output,
    checked to agree with each other; the weights are read by :func:`read_model_weights`."""
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"Model directory not found: {path}")
    missing = [name for name in (CONFIG_FILE, WEIGHTS_FILE) if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{path} is not a spacy-elmo model directory: missing {', '.join(missing)}")
    config = read_config(path / CONFIG_FILE)
    vocab = read_vocab(path / VOCAB_FILE) if (path / VOCAB_FILE).exists() else None
    if vocab is not None and config.vocab_size not in (0, len(vocab)):
        raise ValueError(
            f"{path / VOCAB_FILE} has {len(vocab)} words but {path / CONFIG_FILE} says vocab_size {config.vocab_size}"
        )
    return config, vocab


def read_model_weights(path: PathLike, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, numpy.ndarray]:
    """The arrays of the model directory's ``weights.hdf5``, which must hold exactly ``shapes``
    (name -> shape): all are checked before any is read, and every value must be finite."""
    weights = Path(path) / WEIGHTS_FILE
    with open_hdf5(weights) as handle:
        extra = sorted(set(handle.keys()) - set(shapes))
        if extra:
            raise ValueError(f"{weights} has arrays the config does not expect: {extra}")
        for name, shape in shapes.items():
            check_shape(handle, name, shape)
        return {name: read_array(handle, name, shape) for name, shape in shapes.items()}


def _read_json(path: Path, what: str) -> object:
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ValueError(f"{path}: cannot read the {what} ({err.strerror or err})") from err
    if not raw.strip():
        raise ValueError(f"{path}: the {what} is empty (0 bytes or only whitespace)")
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: the {what} is not UTF-8 text (binary data at byte {err.start})") from err
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: the {what} is not valid JSON ({err})") from err


def read_config(path: Path) -> BiLMConfig:
    """The model config in ``config.json``; every problem is a ``ValueError`` naming the file."""
    meta = _read_json(path, "model config")
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: expected a JSON object, found {type(meta).__name__}")
    if meta.get("format") != FORMAT_NAME:
        raise ValueError(f"{path} is not a spacy-elmo model config (its 'format' is not {FORMAT_NAME!r})")
    version = meta.get("version", 0)
    if not isinstance(version, int):
        raise ValueError(f"{path}: 'version' must be an integer, not {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(f"{path} was written by a newer spacy-elmo (format version {version})")
    if not isinstance(meta.get("config"), dict):
        raise ValueError(f"{path}: 'config' must be a JSON object with the model's sizes")
    try:
        return BiLMConfig.from_dict(meta["config"])
    except (KeyError, TypeError, ValueError) as err:
        detail = f"missing setting {err}" if isinstance(err, KeyError) else str(err)
        raise ValueError(f"{path}: invalid model config: {detail}") from err


def read_vocab(path: Path) -> list[str]:
    """The softmax vocabulary in ``vocab.json``: a JSON list of distinct strings."""
    vocab = _read_json(path, "vocabulary")
    if not isinstance(vocab, list) or not all(isinstance(word, str) for word in vocab):
        raise ValueError(f"{path}: the vocabulary must be a JSON list of strings")
    if not vocab:
        raise ValueError(f"{path}: the vocabulary is an empty list")
    return vocab


def _atomic_write_text(target: Path, text: str) -> None:
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(text, encoding="utf8")
    os.replace(tmp, target)


# ------------------------------------------------------------------ code-point dictionaries
def _write_lexicon(path: Path, lexicon: Optional[Lexicon]) -> None:
    """``chars.json`` and ``words.json`` of a code-point model; stale ones of an earlier model go."""
    tables = {CHARS_FILE: None, WORDS_FILE: None}
    if lexicon is not None:
        tables = {CHARS_FILE: lexicon.chars, WORDS_FILE: lexicon.words}
    for name, entries in tables.items():
        if entries is not None:
            _atomic_write_text(path / name, json.dumps(dict(entries), ensure_ascii=False))
        elif (path / name).exists():
            (path / name).unlink()


def read_lexicon(path: PathLike, config: BiLMConfig) -> Optional[Lexicon]:
    """The dictionaries of a code-point model directory (None for a byte model), checked
    against ``config``: every problem is a ``ValueError`` naming the file."""
    path = Path(path)
    if config.char_encoding == BYTE_ENCODING:
        return None
    chars = _read_dictionary(path / CHARS_FILE)
    words = _read_dictionary(path / WORDS_FILE) if config.word_dim else None
    problems = Lexicon(chars, words).problems(config)
    if problems:
        raise ValueError(f"{path}: {CHARS_FILE}/{WORDS_FILE} do not fit {CONFIG_FILE}: " + "; ".join(problems))
    return Lexicon(chars, words)


def _read_dictionary(path: Path) -> dict[str, int]:
    if not path.is_file():
        raise FileNotFoundError(f"{path.parent} holds a code-point biLM but no {path.name}")
    entries = _read_json(path, "dictionary")
    if not isinstance(entries, dict) or not all(type(index) is int and index >= 0 for index in entries.values()):
        raise ValueError(f"{path}: the dictionary must be a JSON object mapping strings to ids >= 0")
    return entries
