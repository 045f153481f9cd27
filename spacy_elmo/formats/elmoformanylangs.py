"""ELMoForManyLangs' model directories as a config, state-dict arrays (the mapping is the table in
docs/weights.md) and the code-point dictionaries. Only files inside the directory are read: their
``config_path`` is often an absolute path on the authors' machine."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable, Mapping, Union

import numpy

from ..config import CHAR_MARKERS, CODE_POINT_ENCODING, REQUIRED, WORD_MARKERS, BiLMConfig, Lexicon, read_settings
from .hdf5_arrays import finite_float32
from .regular_files import read_json_file, read_regular_file
from .torch_pickle import read_state_dict

PathLike = Union[str, Path]
StateArrays = dict[str, numpy.ndarray]
#: Their tensor's name -> our name, its shape in their file, and how it becomes ours.
Tensors = dict[str, tuple[str, tuple[int, ...], Callable[[numpy.ndarray], numpy.ndarray]]]

TRAINER_CONFIG = "config.json"
CHAR_DIC = "char.dic"
WORD_DIC = "word.dic"
TOKEN_EMBEDDER = "token_embedder.pkl"
ENCODER = "encoder.pkl"
_BLANK_ENTRY = "\u3000"  # what their reader makes of an entry that strip() removed
MAX_DICTIONARY_BYTES = 1 << 26

_SAMPLE = {
    "encoder": {"name": "elmo", "projection_dim": 512, "cell_clip": 3, "proj_clip": 3, "dim": 4096, "n_layers": 2},
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "filters": [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]],
        "max_characters_per_token": 50,
    },
}
#: The model configs their package bundles, used as their ``Embedder`` does when the file is missing.
BUNDLED_CONFIGS: Mapping[str, Mapping[str, Any]] = {
    "cnn_50_100_512_4096_sample.json": _SAMPLE,
    "cnn_0_100_512_4096_sample.json": _SAMPLE,
}

#: Our setting -> their key, and the value a missing key means (0 and null clips: no clipping).
_THEIR_KEYS = {
    "char_embed_dim": ("token_embedder.char_dim", REQUIRED),
    "filters": ("token_embedder.filters", REQUIRED),
    "n_highway": ("token_embedder.n_highway", REQUIRED),
    "activation": ("token_embedder.activation", REQUIRED),
    "max_characters_per_token": ("token_embedder.max_characters_per_token", REQUIRED),
    "word_dim": ("token_embedder.word_dim", REQUIRED),
    "lstm_dim": ("encoder.dim", REQUIRED),
    "projection_dim": ("encoder.projection_dim", REQUIRED),
    "n_layers": ("encoder.n_layers", REQUIRED),
    "cell_clip": ("encoder.cell_clip", None),
    "proj_clip": ("encoder.proj_clip", None),
}

logger = logging.getLogger(__name__)


def is_elmoformanylangs_dir(path: PathLike) -> bool:
    path = Path(path)  # exists(), not is_file(): a FIFO or device there is refused by name when read
    return path.is_dir() and all((path / name).exists() for name in (TRAINER_CONFIG, TOKEN_EMBEDDER, ENCODER))


def read_elmoformanylangs(path: PathLike) -> tuple[BiLMConfig, StateArrays, Lexicon]:
    """The config, state-dict arrays and dictionaries; shapes are checked before any tensor is read."""
    directory = Path(path)
    if not directory.is_dir():
        raise FileNotFoundError(f"ELMoForManyLangs model directory not found: {directory}")
    settings, where = _model_config(directory)
    try:
        sizes = read_settings(settings, _THEIR_KEYS)
        for section, expected in (("encoder", "elmo"), ("token_embedder", "cnn")):
            if str(settings[section].get("name", "")).lower() != expected:
                raise ValueError(f"only {expected!r} models are read here, not {settings[section].get('name')!r}")
        if sizes["char_embed_dim"] == 0:
            raise ValueError("models without characters (char_dim 0) are not supported")
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    chars = read_dictionary(directory / CHAR_DIC, CHAR_MARKERS)
    words = read_dictionary(directory / WORD_DIC, WORD_MARKERS) if sizes["word_dim"] > 0 else None
    try:
        config = BiLMConfig(
            **{**sizes, "cell_clip": sizes["cell_clip"] or None, "proj_clip": sizes["proj_clip"] or None},
            use_skip_connections=True,
            forget_bias=0.0,  # their stored bias already holds it
            n_characters=len(chars) + 1,
            char_encoding=CODE_POINT_ENCODING,
            n_words=0 if words is None else len(words) + 1,
        )
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from err
    state: StateArrays = {}
    for name, tensors in ((TOKEN_EMBEDDER, _embedder_tensors(config)), (ENCODER, _encoder_tensors(config))):
        shapes = {theirs: shape for theirs, (_, shape, _) in tensors.items()}
        arrays = read_state_dict(directory / name, shapes, finite_float32)
        state.update({ours: convert(arrays[theirs]) for theirs, (ours, _, convert) in tensors.items()})
    return config, state, Lexicon(chars, words)


def _model_config(directory: Path) -> tuple[Mapping[str, Any], str]:
    """The model config ``config.json`` names, and the name to use in errors: the path if relative
    and inside, then its base name, then the bundled values."""
    trainer = read_json_file(directory / TRAINER_CONFIG, "trainer's config", dict)
    named = trainer.get("config_path")
    if not isinstance(named, str) or not named.strip():
        raise ValueError(f"{directory / TRAINER_CONFIG}: 'config_path' (the model config's file) is missing")
    base = Path(named.replace("\\", "/")).name
    candidates = [directory / named] if not Path(named).is_absolute() else []
    candidates.append(directory / base)
    root = directory.resolve()
    for candidate in candidates:
        if candidate.exists() and root in candidate.resolve().parents:  # a FIFO too: refused by name
            return read_json_file(candidate, "model config", dict), str(candidate)
    if base in BUNDLED_CONFIGS:
        logger.warning("%s: %s is not in the directory; using ELMoForManyLangs' bundled values", directory, base)
        return BUNDLED_CONFIGS[base], f"{directory / TRAINER_CONFIG} (bundled {base})"
    raise FileNotFoundError(
        f"{directory / TRAINER_CONFIG} names the model config {named!r}, but {directory} has no {base}"
    )


def read_dictionary(path: Path, markers: tuple[str, ...] = ()) -> dict[str, int]:
    """``char.dic`` or ``word.dic`` (``entry<TAB>id`` lines) as their ``Embedder`` reads them: a later
    line wins, an entry that is only whitespace is U+3000."""
    raw = read_regular_file(path, "model's dictionary", MAX_DICTIONARY_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text (at byte {err.start})") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line
    entries: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, _BLANK_ENTRY)
        try:
            if len(fields) != 2:
                raise ValueError
            entries[fields[0]] = int(fields[1])
        except ValueError:
            raise ValueError(f"{path}, line {number}: expected 'entry<TAB>id', found {line[:60]!r}") from None
    missing = [marker for marker in markers if marker not in entries]
    if missing:
        raise ValueError(f"{path} lacks the entries {', '.join(missing)}")
    outside = next((key for key, index in entries.items() if not 0 <= index < len(entries)), None)
    if outside is not None:
        raise ValueError(f"{path}: {outside!r} has id {entries[outside]}, outside 0..{len(entries) - 1}")
    return entries


def _embedder_tensors(config: BiLMConfig) -> Tensors:
    d, nf, p, ours = config.char_embed_dim, config.n_filters, config.projection_dim, "char_encoder."
    tensors: Tensors = {
        "char_emb_layer.embedding.weight": (ours + "char_embedding.weight", (config.n_characters - 1, d), _padded)
    }
    if config.word_dim:
        shape = (config.n_words - 1, config.word_dim)
        tensors["word_emb_layer.embedding.weight"] = (ours + "word_embedding.weight", shape, _padded)
    for i, (width, n) in enumerate(config.filters):
        tensors[f"convolutions.{i}.weight"] = (f"{ours}convolutions.{i}.weight", (n, d, width), _same)
        tensors[f"convolutions.{i}.bias"] = (f"{ours}convolutions.{i}.bias", (n,), _same)
    for i in range(config.n_highway):
        for part, shape in (("weight", (2 * nf, nf)), ("bias", (2 * nf,))):
            tensors[f"highways._layers.{i}.{part}"] = (f"{ours}highway.layers.{i}.{part}", shape, _negated_gate)
    tensors["projection.weight"] = (ours + "projection.weight", (p, config.word_dim + nf), _same)
    tensors["projection.bias"] = (ours + "projection.bias", (p,), _same)
    return tensors


def _encoder_tensors(config: BiLMConfig) -> Tensors:
    c, p = config.lstm_dim, config.projection_dim
    tensors: Tensors = {}
    for k in range(config.n_layers):
        for direction in ("forward", "backward"):
            theirs, ours = f"{direction}_layer_{k}.", f"{direction}_lstm.layers.{k}."
            tensors[theirs + "input_linearity.weight"] = (ours + "input_weight", (4 * c, p), _our_gate_order)
            tensors[theirs + "state_linearity.weight"] = (ours + "recurrent_weight", (4 * c, p), _our_gate_order)
            tensors[theirs + "state_linearity.bias"] = (ours + "bias", (4 * c,), _our_gate_order)
            tensors[theirs + "state_projection.weight"] = (ours + "projection_weight", (p, c), _same)
    return tensors


def _same(array: numpy.ndarray) -> numpy.ndarray:
    return array


def _padded(table: numpy.ndarray) -> numpy.ndarray:
    """Their row 0 is our id 1: our id 0 is the padding row."""
    return numpy.concatenate([numpy.zeros_like(table[:1]), table])


def _negated_gate(transform_then_gate: numpy.ndarray) -> numpy.ndarray:
    """Their highway gate weighs the carry, ours the transform."""
    half = len(transform_then_gate) // 2
    return numpy.concatenate([transform_then_gate[:half], -transform_then_gate[half:]])


def _our_gate_order(gates: numpy.ndarray) -> numpy.ndarray:
    """Rows of the gates input, forget, candidate, output as input, candidate, forget, output."""
    i, f, g, o = numpy.split(gates, 4)
    return numpy.concatenate([i, g, f, o])
