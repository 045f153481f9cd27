"""The pretraining config: a ``.cfg`` read into typed, checked settings, a dataclass per section
and ``[model]`` the :class:`BiLMConfig`. Unknown keys are errors: a typo never becomes a default."""

from __future__ import annotations

import configparser
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union, get_args, get_type_hints

from thinc.api import Config

from ..config import BiLMConfig, is_real
from ..nn.precision import PRECISIONS
from .errors import ConfigError, InputNotFoundError, reading

PathLike = Union[str, Path]


@dataclass(frozen=True)
class PathSettings:
    """``train``/``dev`` may be a file or a folder (read recursively)."""

    train: Optional[str] = None
    dev: Optional[str] = None
    vocab: Optional[str] = None  # an existing vocabulary (JSON list or one word per line)
    init_from: Optional[str] = None  # any biLM path docs/weights.md accepts


#: int8 has no backward pass.
TRAINING_PRECISIONS = tuple(p for p in PRECISIONS if p != "int8")


@dataclass(frozen=True)
class SystemSettings:
    seed: int = 0
    device: str = "cpu"
    precision: str = "float32"  # or bfloat16 / float16 products on a GPU
    threads: int = 0  # torch intra-op threads per process; 0 keeps torch's default

    def __post_init__(self) -> None:
        if self.precision not in TRAINING_PRECISIONS:
            raise ConfigError(
                f"system.precision must be one of {', '.join(map(repr, TRAINING_PRECISIONS))}, not {self.precision!r}"
                + (" (int8 is for inference only)" if self.precision == "int8" else "")
            )


@dataclass(frozen=True)
class CorpusSettings:
    lang: str = "en"
    pipeline: Optional[str] = None  # a spaCy package or path; None means blank(lang) + sentencizer
    pretokenized: bool = False  # one sentence per line, tokens separated by whitespace
    jsonl_field: str = "text"
    max_line_bytes: int = 100_000  # longer lines are cut here (and counted)
    max_token_chars: int = 50  # the char-CNN reads at most 48 bytes; longer tokens are cut (and counted)
    max_sentence_tokens: int = 100  # longer sentences are split into pieces of this size
    chunk_sentences: int = 10_000  # sentences read, sorted by length and shuffled together


@dataclass(frozen=True)
class VocabSettings:
    """The output vocabulary: the ``size`` most frequent words (specials included)."""

    size: int = 50_000
    min_count: int = 1
    max_tracked_types: int = 5_000_000  # the counter is pruned beyond this many distinct words


@dataclass(frozen=True)
class SoftmaxSettings:
    n_negatives: int = 0  # 0: the full softmax


LR_DECAYS = ("none", "linear", "cosine")


@dataclass(frozen=True)
class TrainingSettings:
    # The budget and recipe keys are in docs/pretraining.md.
    max_steps: int = 1000
    max_tokens: int = 0
    max_minutes: float = 0.0
    batch_tokens: int = 2000  # padded tokens (BOS/EOS included) per step, over all processes
    max_batch_sentences: int = 256
    optimizer: str = "adagrad"
    learning_rate: float = 0.2
    adagrad_initial_accumulator: float = 1.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    warmup_steps: int = 0
    lr_decay: str = "none"
    min_learning_rate: float = 0.0
    grad_clip: float = 10.0
    dropout: float = 0.1
    lstm_dropout: float = 0.0
    eval_every: int = 200
    checkpoint_every: int = 200
    max_dev_sentences: int = 5000
    shards: int = 0  # data shards; 0 means one per process. Fixing it makes N processes match 1.

    def __post_init__(self) -> None:
        if self.optimizer not in ("adagrad", "adam"):
            raise ConfigError(f"training.optimizer must be 'adagrad' or 'adam', not {self.optimizer!r}")
        if self.max_tokens < 0 or self.max_steps < 0:
            raise ConfigError("training.max_steps and training.max_tokens must not be negative")
        if self.max_steps == 0 and self.max_tokens == 0:
            raise ConfigError(
                "training.max_steps or training.max_tokens must be set (0 means no limit, but one is needed)"
            )
        if self.lr_decay not in LR_DECAYS:
            raise ConfigError(f"training.lr_decay must be one of {LR_DECAYS}, not {self.lr_decay!r}")
        if not 0.0 <= self.min_learning_rate <= self.learning_rate:
            raise ConfigError(
                f"training.min_learning_rate must be in [0, learning_rate={self.learning_rate}], not {self.min_learning_rate}"
            )
        for name in ("batch_tokens", "max_batch_sentences", "eval_every", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"training.{name} must be at least 1, not {getattr(self, name)}")
        if self.max_minutes < 0:
            raise ConfigError(f"training.max_minutes must not be negative, not {self.max_minutes}")
        for name in ("dropout", "lstm_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ConfigError(f"training.{name} must be in [0, 1), not {getattr(self, name)}")

    def budget_reached(self, step: int, tokens: int) -> bool:
        return (self.max_steps > 0 and step >= self.max_steps) or (self.max_tokens > 0 and tokens >= self.max_tokens)


@dataclass(frozen=True)
class PretrainSettings:
    model: BiLMConfig
    paths: PathSettings = field(default_factory=PathSettings)
    system: SystemSettings = field(default_factory=SystemSettings)
    corpus: CorpusSettings = field(default_factory=CorpusSettings)
    vocab: VocabSettings = field(default_factory=VocabSettings)
    softmax: SoftmaxSettings = field(default_factory=SoftmaxSettings)
    training: TrainingSettings = field(default_factory=TrainingSettings)


_SECTIONS = {name: hint for name, hint in get_type_hints(PretrainSettings).items() if name != "model"}


def load_config(path: PathLike, overrides: Optional[dict[str, Any]] = None) -> Config:
    """Read a ``.cfg`` with dotted overrides (``{"training.max_steps": 10}``)."""
    path = Path(path)
    if not path.is_file():
        raise InputNotFoundError(f"Config file not found: {path}")
    try:
        with reading(path):
            return Config().from_disk(path, overrides=overrides or {}, interpolate=True)
    except (ValueError, configparser.Error) as err:  # confection's validation errors are ValueErrors
        raise ConfigError(f"{path}: {err}") from err


def settings_from_config(config: Union[Config, dict[str, Any]]) -> PretrainSettings:
    unknown = sorted(set(config) - set(_SECTIONS) - {"model"})
    if unknown:
        raise ConfigError(f"Unknown config sections: {unknown}; expected {sorted(_SECTIONS) + ['model']}")
    if "model" not in config:
        raise ConfigError("The config needs a [model] section with the biLM sizes")
    model_data = dict(config["model"])
    if "vocab_size" in model_data:
        raise ConfigError("Set the output vocabulary size with [vocab] size, not [model] vocab_size")
    try:
        model = BiLMConfig.from_dict(model_data)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"[model]: {err}") from err
    sections = {}
    for name, cls in _SECTIONS.items():
        data, hints = config.get(name, {}), get_type_hints(cls)
        unknown = sorted(set(data) - set(hints))
        if unknown:
            raise ConfigError(f"Unknown keys in [{name}]: {unknown}; known keys: {sorted(hints)}")
        sections[name] = cls(**{key: _coerce(f"{name}.{key}", value, hints[key]) for key, value in data.items()})
    return PretrainSettings(model=model, **sections)


def _coerce(where: str, value: Any, hint: Any) -> Any:
    """Accept the types a ``.cfg`` or a CLI override produces; refuse anything else clearly."""
    base = next((arg for arg in get_args(hint) if arg is not type(None)), hint)  # Optional[X]: X
    if value is None and base is not hint:
        return None
    if base is float and is_real(value):
        return float(value)
    if base is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if base is str and isinstance(value, Path):
        return str(value)
    if isinstance(value, base) and (base is bool or not isinstance(value, bool)):
        return value
    raise ConfigError(f"{where} must be {base.__name__}, not {value!r}")
