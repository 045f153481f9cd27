"""Where the ``elmo`` component's biLM comes from (docs/component.md#weights), and a pipeline config
that describes it: loaded weights bring their own sizes, which replace the config's."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, MutableMapping, Optional, Union

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


def weights_config(path: PathLike, messages: Messages = COMPONENT_MESSAGES) -> BiLMConfig:
    """The sizes of the biLM at ``path`` from its options or config file, its weights unread (an
    ELMoForManyLangs model's sizes include its dictionaries': it is read whole)."""
    path = Path(path).expanduser()
    allennlp_files = find_weights(path, messages=messages)
    if allennlp_files is not None:
        options = allennlp_files[0]
        try:
            return BiLMConfig.from_options(parse_json(options.read_bytes(), str(options), "options file", dict))
        except ValueError as err:
            raise ValueError(f"{options}: {err}") from err
    return read_model_config(path)[0] if is_model_dir(path) else load_bilm(path, messages=messages).config


def write_bilm_sizes(model_cfg: MutableMapping[str, Any], config: BiLMConfig) -> None:
    """Set the sizes in a ``spacy_elmo.BiLM.v1`` config block to ``config``'s, in place."""
    sizes = config.to_dict()
    model_cfg.update({key: sizes[key] for key in ARCHITECTURE_FIELDS})


def no_weights_message(name: str) -> str:
    return (
        f"The '{name}' component has no biLM weights: set [initialize.components.{name}] weights "
        f"(the shipped configs: --paths.elmo PATH) or add_pipe('{name}', config={{'weights': PATH}}), "
        "where PATH is a spacy-elmo model directory, an AllenNLP directory or an .hdf5 with "
        f'options.json beside it; weights = "{RANDOM_WEIGHTS}" gives a randomly initialised biLM '
        "(for tests: its features are noise)"
    )


@contextmanager
def saved_component_errors(name: str, path: Optional[PathLike]) -> Iterator[None]:
    """A damaged saved component (``path``: its folder; None from bytes) fails with one
    ``ValueError`` naming the pipeline and the component, whichever layer noticed."""
    try:
        yield
    except (ValueError, KeyError, TypeError, IndexError, OSError) as err:
        detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if path is None:
            raise ValueError(f"The serialized component {name!r} cannot be loaded: {detail}") from err
        folder = Path(path)
        raise ValueError(
            f"{folder.parent}: the pipeline's component {name!r} cannot be loaded from {folder}: {detail}"
        ) from err
