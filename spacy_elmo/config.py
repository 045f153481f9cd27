"""A biLM's hyper-parameters (and bilm-tf's ``options.json``), its character encoding and the
code-point dictionaries. The bottom layer: it imports nothing of the package."""

from __future__ import annotations

import dataclasses
import math
import numbers
import reprlib
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

#: Character ids per word: begin-of-word, at most 48 UTF-8 bytes, end-of-word, padding.
MAX_WORD_LENGTH = 50
#: 256 bytes + 5 special ids, shifted by one, plus the padding id 0.
N_CHARACTERS = 262

ACTIVATIONS = ("relu", "tanh")

#: Words become UTF-8 bytes (bilm-tf) or code points of a char dictionary (ELMoForManyLangs).
BYTE_ENCODING = "bytes"
CODE_POINT_ENCODING = "code_points"
CHAR_ENCODINGS = (BYTE_ENCODING, CODE_POINT_ENCODING)
_ENCODING_KEYS = ("char_encoding", "word_dim", "n_words")

#: Entries of every code-point char and word dictionary besides characters and words.
CHAR_MARKERS = ("<bow>", "<eow>", "<bos>", "<eos>", "<oov>", "<pad>")
WORD_MARKERS = ("<oov>", "<pad>")
#: Room for a word's begin and end marks around a sentence mark, after the cut of long words.
MIN_CODE_POINT_CHARS = 7


@dataclass(frozen=True)
class BiLMConfig:
    """Sizes of the char-CNN, LSTMs and softmax (``vocab_size`` 0: none); the defaults are the "original" ELMo."""

    char_embed_dim: int = 16
    filters: tuple[tuple[int, int], ...] = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))
    n_highway: int = 2
    activation: str = "relu"
    lstm_dim: int = 4096
    projection_dim: int = 512
    n_layers: int = 2
    cell_clip: Optional[float] = 3.0
    proj_clip: Optional[float] = 3.0
    use_skip_connections: bool = True
    vocab_size: int = 0
    forget_bias: float = 1.0
    max_characters_per_token: int = MAX_WORD_LENGTH
    n_characters: int = N_CHARACTERS
    char_encoding: str = BYTE_ENCODING
    word_dim: int = 0  # > 0: a word embedding concatenated with the char-CNN's features
    n_words: int = 0  # rows of that word table, row 0 the padding

    def __post_init__(self) -> None:
        problems = _type_problems(self)
        if not problems:  # the bounds are only meaningful for values of the right types
            object.__setattr__(self, "filters", tuple((int(w), int(n)) for w, n in self.filters))
            for name in _INTEGER_FIELDS:
                object.__setattr__(self, name, int(getattr(self, name)))
            for name in ("cell_clip", "proj_clip"):  # bilm-tf writes 3, config.json and fingerprints 3.0
                if getattr(self, name) is not None:
                    object.__setattr__(self, name, float(getattr(self, name)))
            problems = _value_problems(self) + _encoding_problems(self) or _size_problems(self)
        if problems:
            raise ValueError("Invalid biLM config: " + "; ".join(problems))

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @property
    def output_dim(self) -> int:
        return 2 * self.projection_dim

    @property
    def n_output_layers(self) -> int:
        return self.n_layers + 1

    @property
    def ids_per_token(self) -> int:
        return self.max_characters_per_token + (1 if self.word_dim else 0)

    def parameter_count(self) -> int:
        d, nf, p, c, w = self.char_embed_dim, self.n_filters, self.projection_dim, self.lstm_dim, self.word_dim
        chars = self.n_characters * d + sum(width * d * n + n for width, n in self.filters)
        highway = self.n_highway * (2 * nf * nf + 2 * nf)
        words = self.n_words * w
        lstm = 2 * self.n_layers * (4 * c * (p + p) + 4 * c + c * p)
        return chars + highway + words + (w + nf) * p + p + lstm + self.vocab_size * (p + 1)

    def to_dict(self) -> dict[str, Any]:
        """Every setting, less the encoding's for a byte model (keeps its ``config.json`` free of them)."""
        data = dataclasses.asdict(self)
        data["filters"] = [list(f) for f in self.filters]
        if self.char_encoding == BYTE_ENCODING:
            for key in _ENCODING_KEYS:
                del data[key]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BiLMConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown biLM config keys: {unknown}")
        return cls(**data)

    def differences(self, other: "BiLMConfig") -> list[str]:
        """The settings in which ``other`` differs, ``vocab_size`` aside."""
        mine, theirs = self.to_dict(), other.to_dict()
        return [
            key
            for key in sorted(mine.keys() | theirs.keys())
            if key != "vocab_size" and mine.get(key) != theirs.get(key)
        ]

    def replace(self, **changes: Any) -> "BiLMConfig":
        return dataclasses.replace(self, **changes)

    def to_options(self) -> dict[str, Any]:
        if self.char_encoding != BYTE_ENCODING or self.forget_bias != 1.0:
            raise ValueError(
                "bilm-tf's format holds byte-encoded biLMs with a forget bias of 1.0 added at run time; "
                f"this one has char_encoding={self.char_encoding!r}, word_dim={self.word_dim} and "
                f"forget_bias={self.forget_bias} (write it with to_disk instead)"
            )
        options: dict[str, Any] = {}
        for name, (key, _) in OPTIONS_KEYS.items():
            *sections, last = key.split(".")
            target = options
            for section in sections:
                target = target.setdefault(section, {})
            target[last] = [list(f) for f in self.filters] if name == "filters" else getattr(self, name)
        if self.vocab_size:
            options["n_tokens_vocab"] = self.vocab_size
        return options

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> "BiLMConfig":
        """Read bilm-tf's ``options.json`` (missing clips mean none); errors name the key."""
        settings = read_settings(options, OPTIONS_KEYS)
        # bilm-tf trains with 261 ids and stores 262 after adding padding; both mean the same table.
        if settings["n_characters"] == N_CHARACTERS - 1:
            settings["n_characters"] = N_CHARACTERS
        return cls(**settings)


#: The fields that describe the architecture (a pipeline config's ``spacy_elmo.BiLM.v1`` sizes).
ARCHITECTURE_FIELDS = (
    "char_embed_dim",
    "filters",
    "n_highway",
    "activation",
    "lstm_dim",
    "projection_dim",
    "n_layers",
    "cell_clip",
    "proj_clip",
    "use_skip_connections",
)


# Validation: types first, then values and the encoding's settings, then sizes of valid values.
_INTEGER_FIELDS = tuple(f.name for f in dataclasses.fields(BiLMConfig) if f.type == "int")
#: Bounds on counts, weights, ids per token and char rows (docs/reliability.md): a larger size in a
#: small file would mean minutes of work or all memory before any error.
MAX_COUNT = 64
MAX_PARAMETERS = 2**33
MAX_CHARACTERS_PER_TOKEN = 1024
MAX_CODE_POINT_CHARACTERS = 0x110000 + len(CHAR_MARKERS) + 1


def is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_optional_real(value: Any) -> bool:
    return value is None or is_real(value)


def _is_filter_list(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 and all(is_integer(x) for x in pair) for pair in value
    )


_shown = reprlib.repr


#: What each setting must be, in words and as a test.
_TYPES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    **{name: ("an integer", is_integer) for name in _INTEGER_FIELDS},
    "filters": ("a list of [width, n_filters] integer pairs", _is_filter_list),
    "cell_clip": ("a number or null", _is_optional_real),
    "proj_clip": ("a number or null", _is_optional_real),
    "forget_bias": ("a number", is_real),
    "use_skip_connections": ("true or false", lambda value: isinstance(value, bool)),
    "activation": (f"one of {ACTIVATIONS}", lambda value: isinstance(value, str)),
    "char_encoding": (f"one of {CHAR_ENCODINGS}", lambda value: isinstance(value, str)),
}


def _type_problems(config: BiLMConfig) -> list[str]:
    """An error here, never a ``TypeError`` deep in torch."""
    values = {name: getattr(config, name) for name in _TYPES}
    return [
        f"{name} must be {kind}, not {_shown(values[name])}"
        for name, (kind, valid) in _TYPES.items()
        if not valid(values[name])
    ]


def _value_problems(config: BiLMConfig) -> list[str]:
    problems = []
    if config.activation not in ACTIVATIONS:
        problems.append(f"activation must be one of {ACTIVATIONS}, not {config.activation!r}")
    if not config.filters:
        problems.append("filters must list at least one (width, n_filters) pair")
    if any(w < 1 or n < 1 or w > config.max_characters_per_token for w, n in config.filters):
        problems.append(
            f"every filter needs 1 <= width <= {config.max_characters_per_token} and n >= 1: {_shown(config.filters)}"
        )
    for name in ("char_embed_dim", "lstm_dim", "projection_dim", "n_layers"):
        if getattr(config, name) < 1:
            problems.append(f"{name} must be positive, not {getattr(config, name)}")
    negative = [name for name in ("n_highway", "vocab_size", "word_dim", "n_words") if getattr(config, name) < 0]
    if negative:
        problems.append(f"{' and '.join(negative)} must not be negative")
    for name in ("cell_clip", "proj_clip"):
        value = getattr(config, name)
        if value is not None and not (math.isfinite(value) and value >= 0):
            problems.append(f"{name} must be a finite number >= 0 (0 or null: no clipping), not {value!r}")
    if not math.isfinite(config.forget_bias):
        problems.append(f"forget_bias must be finite, not {config.forget_bias!r}")
    return problems


def _encoding_problems(config: BiLMConfig) -> list[str]:
    if config.char_encoding not in CHAR_ENCODINGS:
        return [f"char_encoding must be one of {CHAR_ENCODINGS}, not {config.char_encoding!r}"]
    if config.char_encoding == BYTE_ENCODING:
        if (config.max_characters_per_token, config.n_characters) != (MAX_WORD_LENGTH, N_CHARACTERS):
            return [
                f"the byte encoding has max_characters_per_token={MAX_WORD_LENGTH} and "
                f"n_characters={N_CHARACTERS}, not {config.max_characters_per_token} and {config.n_characters}"
            ]
        return [] if not (config.word_dim or config.n_words) else ["the byte encoding has no word table (word_dim 0)"]
    problems = []
    if config.max_characters_per_token < MIN_CODE_POINT_CHARS:
        problems.append(f"max_characters_per_token must be at least {MIN_CODE_POINT_CHARS}")
    if config.n_characters < len(CHAR_MARKERS) + 1:
        problems.append(f"n_characters must count the padding row and the {len(CHAR_MARKERS)} markers")
    if (config.word_dim > 0) != (config.n_words > len(WORD_MARKERS)):
        problems.append(f"word_dim ({config.word_dim}) > 0 needs a word table (n_words {config.n_words}) and 0 none")
    return problems


def _size_problems(config: BiLMConfig) -> list[str]:
    counts = {"n_layers": config.n_layers, "n_highway": config.n_highway, "filters": len(config.filters)}
    problems = [f"{name} is {count}, more than {MAX_COUNT}" for name, count in counts.items() if count > MAX_COUNT]
    bounds = {
        "max_characters_per_token": (config.max_characters_per_token, MAX_CHARACTERS_PER_TOKEN),
        "n_characters": (config.n_characters, MAX_CODE_POINT_CHARACTERS),
    }
    problems += [f"{name} is {value}, more than {bound}" for name, (value, bound) in bounds.items() if value > bound]
    if not problems and config.parameter_count() > MAX_PARAMETERS:
        problems.append(f"these sizes mean {config.parameter_count():,} weights, more than {MAX_PARAMETERS:,}")
    return problems


REQUIRED = object()
#: bilm-tf's ``options.json``: each setting's key, and the value a missing key means.
OPTIONS_KEYS = {
    "lstm_dim": ("lstm.dim", REQUIRED),
    "projection_dim": ("lstm.projection_dim", REQUIRED),
    "n_layers": ("lstm.n_layers", REQUIRED),
    "cell_clip": ("lstm.cell_clip", None),
    "proj_clip": ("lstm.proj_clip", None),
    "use_skip_connections": ("lstm.use_skip_connections", True),
    "char_embed_dim": ("char_cnn.embedding.dim", REQUIRED),
    "filters": ("char_cnn.filters", REQUIRED),
    "n_highway": ("char_cnn.n_highway", 0),
    "activation": ("char_cnn.activation", "relu"),
    "n_characters": ("char_cnn.n_characters", N_CHARACTERS),
    "max_characters_per_token": ("char_cnn.max_characters_per_token", MAX_WORD_LENGTH),
}


def read_settings(data: Any, keys: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
    """The settings ``keys`` maps to dotted JSON keys of ``data`` (with the value a missing key
    means, or :data:`REQUIRED`), each checked to have its setting's type; an error names the key."""
    settings = {}
    for name, (key, default) in keys.items():
        *sections, last = key.split(".")
        section = data
        for depth, part in enumerate(sections, start=1):
            section = section.get(part) if isinstance(section, dict) else None
            if not isinstance(section, dict):
                raise ValueError(f"the required field {'.'.join(sections[:depth])} is missing or not a JSON object")
        value = section.get(last, default)
        if value is REQUIRED:
            raise ValueError(f"the required field {key} is missing")
        kind, valid = _TYPES[name]
        if not valid(value):
            raise ValueError(f"{key} must be {kind}, not {_shown(value)}")
        settings[name] = value
    return settings


@dataclass(frozen=True, eq=False)
class Lexicon:
    """A code-point biLM's dictionaries: string -> id from 0 (its row is id + 1, after the padding
    row); ``words`` is None without a word table."""

    chars: Mapping[str, int]
    words: Optional[Mapping[str, int]] = None

    def problems(self, config: BiLMConfig) -> list[str]:
        problems = []
        tables: list[tuple[str, Mapping[str, int], tuple[str, ...], int]] = [
            ("char", self.chars, CHAR_MARKERS, config.n_characters)
        ]
        if self.words is not None or config.word_dim:
            tables.append(("word", self.words or {}, WORD_MARKERS, config.n_words))
        for kind, entries, markers, rows in tables:
            missing = [marker for marker in markers if marker not in entries]
            if missing:
                problems.append(f"the {kind} dictionary lacks {', '.join(missing)}")
            if len(entries) + 1 != rows:
                problems.append(f"the {kind} dictionary has {len(entries)} entries for a table of {rows - 1} rows")
            outside = [key for key, index in entries.items() if not 0 <= index < len(entries)]
            if outside:
                problems.append(f"the {kind} dictionary has ids outside 0..{len(entries) - 1} (e.g. {outside[0]!r})")
        return problems


#: A model small enough for unit tests and examples.
TINY_CONFIG = BiLMConfig(
    char_embed_dim=4, filters=((1, 4), (2, 8), (3, 16)), n_highway=1, lstm_dim=32, projection_dim=8, n_layers=2
)
