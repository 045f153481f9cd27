"""Where the ``elmo`` component's biLM comes from (docs/component.md#weights), and a pipeline config
that describes it: loaded weights bring their own sizes, which replace the config's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, MutableMapping, Optional, Union

from ..config import ARCHITECTURE_FIELDS, BiLMConfig
from ..formats.native import is_model_dir, read_model_config
from ..formats.regular_files import parse_json
from ..formats.resolve import Messages, find_weights, messages_for
from ..loading import load_bilm
from ..nn.bilm import BiLM

PathLike = Union[str, Path]

RANDOM_WEIGHTS = "random"  # a random biLM of the configured sizes, for tests: never a default
COMPONENT_MESSAGES: Messages = messages_for("elmo weights")


def is_random(weights: object) -> bool:
    return isinstance(weights, str) and weights == RANDOM_WEIGHTS


def load_bilm_weights(path: PathLike) -> BiLM:
    """The biLM stored at ``path``, in eval mode, without the softmax (only pretraining needs it)."""
    return load_bilm(path, messages=COMPONENT_MESSAGES, without_softmax=True)


def weights_config(path: PathLike, messages: Messages = COMPONENT_MESSAGES) -> Optional[BiLMConfig]:
    """The biLM's sizes from its options or config file; ``None`` for an ELMoForManyLangs model, whose
    sizes come with its dictionaries, once it is read. An error if ``path`` holds no biLM."""
    path = Path(path).expanduser()
    allennlp_files = find_weights(path, messages=messages)
    if allennlp_files is not None:
        options = allennlp_files[0]
        try:
            return BiLMConfig.from_options(parse_json(options.read_bytes(), str(options), "options file", dict))
        except ValueError as err:
            raise ValueError(f"{options}: {err}") from err
    return read_model_config(path)[0] if is_model_dir(path) else None


def write_bilm_sizes(model_cfg: MutableMapping[str, Any], config: BiLMConfig) -> None:
    """Set the sizes in a ``spacy_elmo.BiLM.v1`` config block to ``config``'s, in place."""
    sizes = config.to_dict()
    model_cfg.update({key: sizes[key] for key in ARCHITECTURE_FIELDS})
