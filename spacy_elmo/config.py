"""The hyper-parameters of a biLM, their mapping to bilm-tf's ``options.json``, and the sizes of the
character encoding they rest on.

The bottom of the package: the file formats (:mod:`spacy_elmo.formats`) and the torch modules
(:mod:`spacy_elmo.nn`) both read it, and it imports nothing of theirs.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

#: Character ids per word: begin-of-word, at most 48 UTF-8 bytes, end-of-word, padding.
MAX_WORD_LENGTH = 50
#: 256 bytes + 5 special ids, shifted by one, plus the padding id 0.
N_CHARACTERS = 262

ACTIVATIONS = ("relu", "tanh")


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "filters", tuple((int(w), int(n)) for w, n in self.filters))
        problems = []
        if self.activation not in ACTIVATIONS:
            problems.append(f"activation must be one of {ACTIVATIONS}, not {self.activation!r}")
        if not self.filters:
            problems.append("filters must list at least one (width, n_filters) pair")
        if any(w < 1 or n < 1 or w > self.max_characters_per_token for w, n in self.filters):
            problems.append(f"every filter needs 1 <= width <= 50 and n >= 1: {self.filters}")
        for name in ("char_embed_dim", "lstm_dim", "projection_dim", "n_layers"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be positive, not {getattr(self, name)}")
        if self.n_highway < 0 or self.vocab_size < 0:
            problems.append("n_highway and vocab_size must not be negative")
        if self.max_characters_per_token != MAX_WORD_LENGTH or self.n_characters != N_CHARACTERS:
            problems.append(
                f"only the reference char encoding is supported: max_characters_per_token="
                f"{MAX_WORD_LENGTH} and n_characters={N_CHARACTERS}"
            )
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

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["filters"] = [list(f) for f in self.filters]
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


# A model small enough for unit tests and examples.
TINY_CONFIG = BiLMConfig(
    char_embed_dim=4,
    filters=((1, 4), (2, 8), (3, 16)),
    n_highway=1,
    lstm_dim=32,
    projection_dim=8,
    n_layers=2,
)
