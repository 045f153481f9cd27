"""Where the ``elmo`` component's biLM comes from: the path in its ``weights`` setting (any that
:func:`spacy_elmo.loading.load_bilm` reads, checked when given and read when first needed), or
the files of a saved pipeline. Every failure names the path or the component and the setting.
``weights = "random"`` asks for a random biLM of the configured sizes (tests): never a default,
since its features are noise at the cost of a real biLM.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union

from ..formats.resolve import Messages, find_weights, messages_for
from ..loading import load_bilm
from ..nn.bilm import BiLM

PathLike = Union[str, Path]

RANDOM_WEIGHTS = "random"
COMPONENT_MESSAGES: Messages = messages_for("elmo weights")


def is_random(weights: object) -> bool:
    return isinstance(weights, str) and weights == RANDOM_WEIGHTS


def check_weights_path(path: PathLike) -> None:
    """Raise now, naming the path and what to do, if ``path`` holds no biLM (nothing is read)."""
    find_weights(Path(path).expanduser(), messages=COMPONENT_MESSAGES)


def load_bilm_weights(path: PathLike) -> BiLM:
    """The biLM stored at ``path``, in eval mode, without the softmax (only pretraining needs it)."""
    return load_bilm(path, messages=COMPONENT_MESSAGES, without_softmax=True)


def no_weights_message(name: str) -> str:
    """What to do when the component ``name`` has no weights at all."""
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
