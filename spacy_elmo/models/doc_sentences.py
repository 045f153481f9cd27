"""Cutting Docs into the pieces the biLM reads: sentences when a Doc has them, else windows.

The biLM's memory and time grow with sequence length, and it was trained on sentences, so a
Doc is never fed whole: each sentence (or, without sentence boundaries, each run of
``max_tokens`` tokens) is one sequence, and longer sentences are cut into windows too.
Whitespace tokens (``"\\n\\n"``, double spaces) are left out: the biLM never saw them in
training, and they would disturb the context of their neighbours. They get zero vectors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence, Union

import numpy
from spacy.tokens import Doc


@dataclass(frozen=True)
class Segment:
    """One biLM input sequence: a Doc's index in the batch, its token positions and texts."""

    doc_index: int
    positions: numpy.ndarray
    words: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.words)

    @property
    def index(self) -> Union[slice, numpy.ndarray]:
        """The positions as a slice when contiguous (cheap, and valid for any array type)."""
        first, last = int(self.positions[0]), int(self.positions[-1])
        if last - first + 1 == len(self.positions):
            return slice(first, last + 1)
        return self.positions


def iter_segments(docs: Sequence[Doc], max_tokens: int) -> Iterator[Segment]:
    """Yield every non-empty segment of every Doc, in Doc order, then token order."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    for doc_index, doc in enumerate(docs):
        if not len(doc):
            continue
        texts = [token.text for token in doc]
        is_word = doc.to_array("IS_SPACE") == 0
        for start, end in _spans(doc):
            positions = numpy.flatnonzero(is_word[start:end]) + start
            for offset in range(0, len(positions), max_tokens):
                window = positions[offset : offset + max_tokens]
                yield Segment(doc_index, window, tuple(texts[i] for i in window.tolist()))


def _spans(doc: Doc) -> Iterator[tuple[int, int]]:
    if doc.has_annotation("SENT_START"):
        for sent in doc.sents:
            yield sent.start, sent.end
    else:
        yield 0, len(doc)
