"""Loading the biLM a user names in the ``elmo`` component's ``weights`` setting.

The paths accepted are :func:`spacy_elmo.loading.load_bilm`'s (the rules are in
:mod:`spacy_elmo.formats.resolve`); every failure names the path, what is missing and the
setting, because "file not found" deep inside h5py is no help to someone who mistyped a
directory.
"""
from __future__ import annotations

from pathlib import Path
from typing import Union

from ..formats.resolve import Messages, messages_for
from ..loading import load_bilm
from ..nn.bilm import BiLM

PathLike = Union[str, Path]

#: The resolver's messages, led by the setting that gave the path.
COMPONENT_MESSAGES: Messages = messages_for("elmo weights")


def load_bilm_weights(path: PathLike) -> BiLM:
    """The biLM stored at ``path``, in eval mode, without its output softmax.

    The softmax only serves pretraining; dropping it keeps pipelines small.
    """
    return load_bilm(path, messages=COMPONENT_MESSAGES, without_softmax=True)
