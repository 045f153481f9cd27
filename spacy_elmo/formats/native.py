"""Our model directory (docs/weights.md): JSON and HDF5 arrays only; ``config.json`` records the
SHA-256 of every other file and of its own settings, checked before HDF5 parses anything. The
files come from a folder or, packed in a saved pipeline, from bytes."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, TypeVar, Union

import h5py
import numpy

from ..config import ARCHITECTURE_FIELDS, BYTE_ENCODING, BiLMConfig, Lexicon
from ..durable import file_sha256, write_files_atomically
from .hdf5_arrays import hdf5_image, open_hdf5, read_weight_arrays
from .regular_files import parse_json

PathLike = Union[str, Path]
T = TypeVar("T")

FORMAT_NAME = "spacy-elmo-bilm"
FORMAT_VERSION = 1
CONFIG_FILE = "config.json"
WEIGHTS_FILE = "weights.hdf5"
VOCAB_FILE = "vocab.json"
CHARS_FILE = "chars.json"
WORDS_FILE = "words.json"
DATA_FILES = (WEIGHTS_FILE, VOCAB_FILE, CHARS_FILE, WORDS_FILE)
CHECKSUMS = "sha256"  # config.json: file name (or "config" for the settings) -> SHA-256
#: The settings every ``config.json`` has (later ones take their defaults), and a code-point model's.
REQUIRED_SETTINGS = (*ARCHITECTURE_FIELDS, "vocab_size", "forget_bias")
CODE_POINT_SETTINGS = ("max_characters_per_token", "n_characters", "word_dim", "n_words")


def is_model_dir(path: PathLike) -> bool:
    path = Path(path)
    return (path / CONFIG_FILE).is_file() and (path / WEIGHTS_FILE).is_file()


class ModelSource:
    """A model's files, in the folder ``where`` or in memory (``files``); ``where`` leads every error."""

    def __init__(self, where: str, files: Optional[Mapping[str, bytes]] = None) -> None:
        self.where, self.files, self.path = where, files, Path(where)
        if files is None and not self.path.is_dir():
            raise FileNotFoundError(f"Model directory not found: {where}")
        missing = [name for name in (CONFIG_FILE, WEIGHTS_FILE) if not self.has(name)]
        if missing:
            error = FileNotFoundError if files is None else ValueError
            raise error(f"{where} is not a spacy-elmo model directory: missing {', '.join(missing)}")
        unknown = sorted(set(files or ()) - {CONFIG_FILE, *DATA_FILES})
        if unknown:
            raise ValueError(f"{where} holds unexpected files: {', '.join(map(repr, unknown))}")

    def label(self, name: str) -> str:
        return f"{self.where}/{name}"

    def has(self, name: str) -> bool:
        return name in self.files if self.files is not None else (self.path / name).is_file()

    def read_bytes(self, name: str) -> bytes:
        return self.files[name] if self.files is not None else self._read(name, Path.read_bytes)

    def sha256(self, name: str) -> str:
        if self.files is not None:
            return hashlib.sha256(self.files[name]).hexdigest()
        return self._read(name, file_sha256)  # streamed: weights may be gigabytes

    def _read(self, name: str, read: Callable[[Path], T]) -> T:
        try:
            return read(self.path / name)
        except OSError as err:
            raise ValueError(f"{self.label(name)}: cannot be read ({err.strerror or err})") from err


def packed_model(files: Mapping[str, bytes], where: str) -> ModelSource:
    """A model directory's files held in memory, as :func:`model_files` makes them."""
    return ModelSource(where, files)


def _source(path: Union[PathLike, ModelSource]) -> ModelSource:
    return path if isinstance(path, ModelSource) else ModelSource(str(path))


# ---------------------------------------------------------------------------- writing
def model_files(
    config: BiLMConfig,
    state: Mapping[str, numpy.ndarray],
    vocab: Optional[Sequence[str]] = None,
    lexicon: Optional[Lexicon] = None,
) -> dict[str, bytes]:
    """The files of a model directory, name -> content, with the checksums in ``config.json``."""

    def fill(handle: h5py.File) -> None:
        for name, array in state.items():
            handle.create_dataset(name, data=array)

    files = {WEIGHTS_FILE: hdf5_image(fill)}
    if vocab is not None:
        files[VOCAB_FILE] = _json_bytes(list(vocab))
    if lexicon is not None:
        files[CHARS_FILE] = _json_bytes(dict(lexicon.chars))
        if lexicon.words is not None:
            files[WORDS_FILE] = _json_bytes(dict(lexicon.words))
    settings = config.to_dict()
    checksums = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
    checksums["config"] = _settings_digest(settings)
    meta = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "config": settings, CHECKSUMS: checksums}
    files[CONFIG_FILE] = json.dumps(meta, indent=2).encode("utf8")
    return files


def write_model_dir(
    path: PathLike,
    config: BiLMConfig,
    state: Mapping[str, numpy.ndarray],
    vocab: Optional[Sequence[str]] = None,
    lexicon: Optional[Lexicon] = None,
) -> None:
    """Write the model directory whole or not at all, then remove an earlier model's other files."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    files = model_files(config, state, vocab, lexicon)
    write_files_atomically({path / name: data for name, data in files.items()})
    for name in DATA_FILES:
        if name not in files:
            (path / name).unlink(missing_ok=True)


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf8")


def _settings_digest(settings: object) -> str:
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode("utf8")).hexdigest()


# ---------------------------------------------------------------------------- reading
def read_model_config(path: Union[PathLike, ModelSource]) -> tuple[BiLMConfig, Optional[list[str]]]:
    """The config and vocabulary, checked against the recorded checksums and each other."""
    source = _source(path)
    meta = _read_meta(source)
    checksums = _verified_checksums(source, meta)
    config = _config_from(meta["config"], source.label(CONFIG_FILE))
    if checksums is not None:
        unrecorded = [name for name in (WEIGHTS_FILE, *_dictionary_files(config)) if name not in checksums]
        if unrecorded:
            where = source.label(CONFIG_FILE)
            raise ValueError(f"{where}: {CHECKSUMS!r} lacks the checksum of {', '.join(unrecorded)}")
    recorded_vocab = VOCAB_FILE in checksums if checksums is not None else source.has(VOCAB_FILE)
    vocab = _read_vocab(source) if recorded_vocab else None
    if vocab is not None and config.vocab_size not in (0, len(vocab)):
        raise ValueError(
            f"{source.label(VOCAB_FILE)} has {len(vocab)} words but {source.label(CONFIG_FILE)} says "
            f"vocab_size {config.vocab_size}"
        )
    return config, vocab


def read_model_weights(
    path: Union[PathLike, ModelSource], shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, numpy.ndarray]:
    """The arrays of ``weights.hdf5``: exactly ``shapes``, all checked before any is read."""
    source = _source(path)
    where = source.label(WEIGHTS_FILE)
    weights = source.files[WEIGHTS_FILE] if source.files is not None else source.path / WEIGHTS_FILE
    with open_hdf5(weights, where) as handle:
        return read_weight_arrays(handle, where, shapes, source.label(CONFIG_FILE), f"its {CONFIG_FILE} implies")


def _read_json(source: ModelSource, name: str, what: str, expected: Optional[type] = None) -> Any:
    return parse_json(source.read_bytes(name), source.label(name), what, expected)


def _read_meta(source: ModelSource) -> dict:
    where = source.label(CONFIG_FILE)
    meta = _read_json(source, CONFIG_FILE, "model config", dict)
    if meta.get("format") != FORMAT_NAME:
        raise ValueError(f"{where} is not a spacy-elmo model config (its 'format' is not {FORMAT_NAME!r})")
    version = meta.get("version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError(f"{where}: 'version' must be an integer, not {version!r}")
    if version > FORMAT_VERSION:
        raise ValueError(f"{where} was written by a newer spacy-elmo (format version {version})")
    if not isinstance(meta.get("config"), dict):
        raise ValueError(f"{where}: 'config' must be a JSON object with the model's sizes")
    return meta


def _verified_checksums(source: ModelSource, meta: dict) -> Optional[dict[str, str]]:
    """The recorded checksums, each verified (None for a model written before them)."""
    if CHECKSUMS not in meta:
        return None
    where = source.label(CONFIG_FILE)
    checksums = meta[CHECKSUMS]
    if not isinstance(checksums, dict) or not all(isinstance(v, str) for v in checksums.values()):
        raise ValueError(f"{where}: {CHECKSUMS!r} must map file names to SHA-256 digests")
    if checksums.get("config") != _settings_digest(meta["config"]):
        raise ValueError(
            f"{where}: its settings do not match their recorded checksum: the file is damaged or was "
            f"edited after it was written (to keep a deliberate edit, delete the {CHECKSUMS!r} entry)"
        )
    for name in sorted(set(checksums) - {"config"}):
        if name not in DATA_FILES:
            raise ValueError(f"{where}: {CHECKSUMS!r} names an unknown file {name!r}")
        if not source.has(name):
            raise ValueError(f"{source.where}: {name} is missing, but {CONFIG_FILE} records its checksum")
        if source.sha256(name) != checksums[name]:
            raise ValueError(
                f"{source.label(name)} does not match the SHA-256 recorded in {CONFIG_FILE}: it is damaged, "
                "or belongs to another model"
            )
    return checksums


def _config_from(settings: dict, where: str) -> BiLMConfig:
    required = REQUIRED_SETTINGS
    if settings.get("char_encoding", BYTE_ENCODING) != BYTE_ENCODING:
        required += CODE_POINT_SETTINGS
    missing = [key for key in required if key not in settings]
    if missing:
        raise ValueError(f"{where}: invalid model config: missing setting(s) {', '.join(missing)}")
    try:
        return BiLMConfig.from_dict(settings)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: invalid model config: {err}") from err


def _read_vocab(source: ModelSource) -> list[str]:
    what = f"{source.label(VOCAB_FILE)}: the vocabulary"
    vocab = word_list(_read_json(source, VOCAB_FILE, "vocabulary"), what)
    if not vocab:
        raise ValueError(f"{what} is an empty list")
    return vocab


def word_list(words: Any, what: str, counted_as: str = "entries") -> list[str]:
    """``words`` when it is a list of distinct strings: two ids for one word and the softmax could not
    say which is right. An error is led by ``what`` and gives a twice-listed word's 1-based positions."""
    if not isinstance(words, list) or not all(isinstance(word, str) for word in words):
        raise ValueError(f"{what} must be a JSON list of strings")
    seen: dict[str, int] = {}
    for position, word in enumerate(words, start=1):
        if word in seen:
            raise ValueError(f"{what} lists {word!r} twice ({counted_as} {seen[word]} and {position})")
        seen[word] = position
    return words


def _dictionary_files(config: BiLMConfig) -> tuple[str, ...]:
    if config.char_encoding == BYTE_ENCODING:
        return ()
    return (CHARS_FILE, WORDS_FILE) if config.word_dim else (CHARS_FILE,)


def read_lexicon(path: Union[PathLike, ModelSource], config: BiLMConfig) -> Optional[Lexicon]:
    """A code-point model's dictionaries (None for a byte model), checked against ``config``."""
    names = _dictionary_files(config)
    if not names:
        return None
    source = _source(path)
    tables = [_read_dictionary(source, name) for name in names]
    lexicon = Lexicon(tables[0], tables[1] if len(tables) > 1 else None)
    problems = lexicon.problems(config)
    if problems:
        raise ValueError(f"{source.where}: {CHARS_FILE}/{WORDS_FILE} do not fit {CONFIG_FILE}: " + "; ".join(problems))
    return lexicon


def _read_dictionary(source: ModelSource, name: str) -> dict[str, int]:
    if not source.has(name):
        raise FileNotFoundError(f"{source.where} holds a code-point biLM but no {name}")
    entries = _read_json(source, name, "dictionary")
    if not isinstance(entries, dict) or not all(type(index) is int and index >= 0 for index in entries.values()):
        raise ValueError(f"{source.label(name)}: the dictionary must be a JSON object mapping strings to ids >= 0")
    return entries
