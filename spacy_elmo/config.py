"""The hyper-parameters of a biLM, their mapping to bilm-tf's ``options.json``, the sizes of the
character encoding they rest on, and the dictionaries of the code-point encoding
(ELMoForManyLangs' models).

The bottom of the package: the file formats (:mod:`spacy_elmo.formats`) and the torch modules
(:mod:`spacy_elmo.nn`) both read it, and it imports nothing of theirs.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Optional

#: Character ids per word: begin-of-word, at most 48 UTF-8 bytes, end-of-word, padding.
MAX_WORD_LENGTH = 50
#: 256 bytes + 5 special ids, shifted by one, plus the padding id 0.
N_CHARACTERS = 262

ACTIVATIONS = ("relu", "tanh")

#: How words become ids: UTF-8 bytes (bilm-tf, AllenNLP; the default) or Unicode code points
#: looked up in a char dictionary (ELMoForManyLangs), optionally with a word id as well.
BYTE_ENCODING = "bytes"
CODE_POINT_ENCODING = "code_points"
CHAR_ENCODINGS = (BYTE_ENCODING, CODE_POINT_ENCODING)


@dataclass(frozen=True)
class BiLMConfig:
    """Sizes and options of the char-CNN, the two LSTM stacks and the output softmax.

    The defaults are the published "original" ELMo (4096 cells projected to 512, 2 highway).
    ``vocab_size`` 0 means the model has no output softmax (enough for embedding).
    """

    char_embed_dim: int = 16
    filters: tuple[tuple[int, int], ...] = (
        (1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024),
    )
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
    # The code-point encoding (see :func:`_encoding_problems`); the defaults are the byte encoding.
    char_encoding: str = BYTE_ENCODING
    word_dim: int = 0  # > 0: a word embedding concatenated with the char-CNN's features
    n_words: int = 0  # rows of that word table, row 0 the padding

    def __post_init__(self) -> None:
        object.__setattr__(self, "filters", tuple((int(w), int(n)) for w, n in self.filters))
        problems = []
        if self.activation not in ACTIVATIONS:
            problems.append(f"activation must be one of {ACTIVATIONS}, not {self.activation!r}")
        if not self.filters:
            problems.append("filters must list at least one (width, n_filters) pair")
        if any(w < 1 or n < 1 or w > self.max_characters_per_token for w, n in self.filters):
            problems.append(
                f"every filter needs 1 <= width <= {self.max_characters_per_token} and n >= 1: {self.filters}"
            )
        for name in ("char_embed_dim", "lstm_dim", "projection_dim", "n_layers"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be positive, not {getattr(self, name)}")
        if self.n_highway < 0 or self.vocab_size < 0:
            problems.append("n_highway and vocab_size must not be negative")
        problems += _encoding_problems(self)
        if problems:
            raise ValueError("Invalid biLM config: " + "; ".join(problems))

    @property
    def n_filters(self) -> int:
        return sum(n for _, n in self.filters)

    @property
    def output_dim(self) -> int:
        """Width of every layer's vector: forward and backward (or x twice) concatenated."""
        return 2 * self.projection_dim

    @property
    def n_output_layers(self) -> int:
        return self.n_layers + 1

    @property
    def ids_per_token(self) -> int:
        """Columns of a token's id row: its char ids, then its word id when there is a word table."""
        return self.max_characters_per_token + (1 if self.word_dim else 0)

    def to_dict(self) -> dict[str, Any]:
        """Every setting, except the encoding's when they are the byte defaults: a byte model's
        dict (and so its ``config.json`` and the fingerprints built from it) stays as it was."""
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

    def replace(self, **changes: Any) -> "BiLMConfig":
        return dataclasses.replace(self, **changes)

    def to_options(self) -> dict[str, Any]:
        """The bilm-tf / AllenNLP ``options.json`` content for this config."""
        if self.char_encoding != BYTE_ENCODING or self.forget_bias != 1.0:
            raise ValueError(
                "bilm-tf's format holds byte-encoded biLMs with a forget bias of 1.0 added at run time; "
                f"this one has char_encoding={self.char_encoding!r}, word_dim={self.word_dim} and "
                f"forget_bias={self.forget_bias} (write it with to_disk instead)"
            )
        options: dict[str, Any] = {
            "lstm": {
                "dim": self.lstm_dim,
                "projection_dim": self.projection_dim,
                "n_layers": self.n_layers,
                "cell_clip": self.cell_clip,
                "proj_clip": self.proj_clip,
                "use_skip_connections": self.use_skip_connections,
            },
            "char_cnn": {
                "embedding": {"dim": self.char_embed_dim},
                "filters": [list(f) for f in self.filters],
                "n_highway": self.n_highway,
                "activation": self.activation,
                "n_characters": self.n_characters,
                "max_characters_per_token": self.max_characters_per_token,
            },
        }
        if self.vocab_size:
            options["n_tokens_vocab"] = self.vocab_size
        return options

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> "BiLMConfig":
        """Read bilm-tf's ``options.json``; missing clip values mean no clipping."""
        try:
            lstm, cnn = options["lstm"], options["char_cnn"]
            config = cls(
                char_embed_dim=int(cnn["embedding"]["dim"]),
                filters=tuple(tuple(f) for f in cnn["filters"]),
                n_highway=int(cnn.get("n_highway", 0)),
                activation=cnn.get("activation", "relu"),
                lstm_dim=int(lstm["dim"]),
                projection_dim=int(lstm["projection_dim"]),
                n_layers=int(lstm["n_layers"]),
                cell_clip=_optional_float(lstm.get("cell_clip")),
                proj_clip=_optional_float(lstm.get("proj_clip")),
                use_skip_connections=bool(lstm.get("use_skip_connections", True)),
            )
        except (KeyError, TypeError) as err:
            raise ValueError(f"options.json lacks a required field or has a wrong type: {err!r}") from err
        # bilm-tf trains with 261 ids and stores 262 after adding padding; both mean the same table.
        if int(cnn.get("n_characters", N_CHARACTERS)) not in (N_CHARACTERS - 1, N_CHARACTERS):
            raise ValueError(f"options.json n_characters={cnn['n_characters']} is not 261 or 262")
        if int(cnn.get("max_characters_per_token", MAX_WORD_LENGTH)) != MAX_WORD_LENGTH:
            raise ValueError("options.json max_characters_per_token must be 50")
        return config


def _optional_float(value: Any) -> Optional[float]:
    return None if value is None else float(value)


# ------------------------------------------------------------------ the code-point encoding
_ENCODING_KEYS = ("char_encoding", "word_dim", "n_words")

#: Entries every code-point char dictionary has besides characters: word begin/end, sentence
#: begin/end, unknown character, padding (ELMoForManyLangs' names).
CHAR_MARKERS = ("<bow>", "<eow>", "<bos>", "<eos>", "<oov>", "<pad>")
#: ... and every word dictionary (unknown word, padding).
WORD_MARKERS = ("<oov>", "<pad>")
#: A token's ids hold a begin mark, the sentence mark or >= 1 char, and an end mark; and the
#: sentence marks must survive the cut of long words to ``max_characters_per_token - 2``.
MIN_CODE_POINT_CHARS = 7


def _encoding_problems(config: BiLMConfig) -> list[str]:
    """What is wrong with the encoding settings: the byte encoding has fixed sizes and no word
    table; the code-point one needs a char table with the markers and room for them."""
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
    if config.word_dim < 0 or (config.word_dim > 0) != (config.n_words > len(WORD_MARKERS)):
        problems.append(f"word_dim ({config.word_dim}) > 0 needs a word table (n_words {config.n_words}) and 0 none")
    return problems


@dataclass(frozen=True, eq=False)
class Lexicon:
    """The dictionaries of a code-point biLM, as ELMoForManyLangs' ``char.dic`` and ``word.dic``
    hold them: string -> id, ids from 0 (the model's tables put a padding row in front, so
    their row is id + 1). ``chars`` maps single characters and the :data:`CHAR_MARKERS`;
    ``words`` (None without a word table) maps words and the :data:`WORD_MARKERS`."""

    chars: Mapping[str, int]
    words: Optional[Mapping[str, int]] = None

    def problems(self, config: BiLMConfig) -> list[str]:
        """Why these dictionaries cannot serve ``config``: missing markers, or ids outside the
        tables (ELMoForManyLangs' tables have one row per entry)."""
        problems = []
        tables = [("char", self.chars, CHAR_MARKERS, config.n_characters)]
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


# A model small enough for unit tests and examples.
TINY_CONFIG = BiLMConfig(
    char_embed_dim=4,
    filters=((1, 4), (2, 8), (3, 16)),
    n_highway=1,
    lstm_dim=32,
    projection_dim=8,
    n_layers=2,
)
