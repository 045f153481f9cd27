"""The one place that cuts long sentences into windows and puts their layers back together.

The biLM was trained on sentences, and its memory and time grow with sequence length, so no
caller feeds it more than ``max_tokens`` tokens at once: a longer sentence is read as
consecutive windows of ``max_tokens`` tokens (the last one shorter), each window with its own
BOS/EOS, and the windows' layers are joined along the token axis. Every caller (the ``elmo``
component, ``embed``/``embed_layers``, ``spacy-elmo embed``) goes through :func:`cut` and
:func:`stitch`, so they all read a long sentence the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy


@dataclass(frozen=True)
class Window:
    """Tokens ``start:end`` of sentence number ``sentence``: one biLM input sequence."""

    sentence: int
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def words(self, sentences: Sequence[Sequence[str]]) -> Sequence[str]:
        """This window's tokens, taken from the caller's list of sentences."""
        return sentences[self.sentence][self.start : self.end]


def cut(sentence: int, length: int, max_tokens: int) -> list[Window]:
    """The windows of a sentence of ``length`` tokens: one when it fits, none when it is empty."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    return [Window(sentence, start, min(start + max_tokens, length)) for start in range(0, length, max_tokens)]


def stitch(pieces: Sequence[Any], xp: Any = None) -> Any:
    """One sentence's layers ``(L+1, n, D)`` from its windows' layers, in window order."""
    if len(pieces) == 1:
        return pieces[0]
    return (numpy if xp is None else xp).concatenate(pieces, axis=1)
