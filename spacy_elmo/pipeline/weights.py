"""Where the ``elmo`` component's biLM comes from: the weights a user names in its ``weights``
setting, or the files of a saved pipeline.

The paths accepted are :func:`spacy_elmo.loading.load_bilm`'s (the rules are in
:mod:`spacy_elmo.formats.resolve`); every failure names the path, what is missing and the
setting, because "file not found" deep inside h5py is no help to someone who mistyped a
directory. The path is checked when it is given (the component's creation, ``initialize``)
and read when first needed. A damaged saved component is named the same way
(:func:`saved_component_errors`).

``weights = "random"`` asks for a randomly initialised biLM of the configured sizes (tests,
experiments): never what happens by default, because its features are noise that costs the
time of a real biLM.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union

from ..formats.resolve import Messages, find_weights, messages_for
from ..loading import load_bilm
from ..nn.bilm import BiLM

PathLike = Union[str, Path]

#: The ``weights`` value that asks for a randomly initialised biLM.
RANDOM_WEIGHTS = "random"

#: The resolver's messages, led by the setting that gave the path.
COMPONENT_MESSAGES: Messages = messages_for("elmo weights")


def is_random(weights: object) -> bool:
    """Whether ``weights`` asks for a randomly initialised biLM."""
    return isinstance(weights, str) and weights == RANDOM_WEIGHTS


def check_weights_path(path: PathLike) -> None:
    """Raise now, naming the path and what to do, if ``path`` holds no biLM (nothing is read)."""
    find_weights(Path(path).expanduser(), messages=COMPONENT_MESSAGES)


def load_bilm_weights(path: PathLike) -> BiLM:
    """The biLM stored at ``path``, in eval mode, without its output softmax.

    The softmax only serves pretraining; dropping it keeps pipelines small.
    """
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
    """Let a damaged or tampered saved component (``path``: its folder in the pipeline directory;
    None when read from bytes) fail with one ``ValueError`` naming the pipeline directory and the
    component, whatever layer noticed (msgpack's "Unpack failed", h5py, a checksum)."""
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
