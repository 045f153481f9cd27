"""One path in, a loaded :class:`~spacy_elmo.nn.BiLM` out, whichever supported layout it holds.

It joins the two sides that do not know each other: :mod:`spacy_elmo.formats.resolve` finds
the files, and the ``BiLM`` class methods read them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Union

from .formats.resolve import MESSAGES, Messages, find_weights
from .nn.bilm import BiLM

PathLike = Union[str, Path]


def load_bilm(path: PathLike, *, messages: Messages = MESSAGES) -> BiLM:
    """Load the biLM at ``path``: a spacy-elmo model directory, an AllenNLP directory, or an
    ``.hdf5`` with its options beside it (:mod:`spacy_elmo.formats.resolve` has the rules).

    ``messages`` words the errors (see :data:`~spacy_elmo.formats.resolve.MESSAGES`).
    """
    path = Path(path)
    allennlp_files = find_weights(path, messages=messages)
    if allennlp_files is None:
        return BiLM.from_disk(path)
    return BiLM.from_allennlp(*allennlp_files)
