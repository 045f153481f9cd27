"""Docs cut into the sentences the biLM reads (the whole Doc when it has no sentences), since
it was trained on sentences. Whitespace tokens are left out (the biLM never saw them, and they
would disturb their neighbours' context) and get zero vectors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence, Union

import numpy
from spacy.tokens import Doc


@dataclass(frozen=True)
class DocSentence:
    """One sentence of a Doc: the Doc's index in the batch, its token positions and texts."""

    doc_index: int
    positions: numpy.ndarray
    words: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.words)

    @property
    def index(self) -> Union[slice, numpy.ndarray]:
        """The positions as a slice when contiguous (cheap, and valid for any array type)."""
        return contiguous_index(self.positions)


def contiguous_index(positions: numpy.ndarray) -> Union[slice, numpy.ndarray]:
    """Increasing token ``positions`` as a slice when they have no gaps, else as they are."""
    first, last = int(positions[0]), int(positions[-1])
    if last - first + 1 == len(positions):
        return slice(first, last + 1)
    return positions


def doc_sentences(docs: Sequence[Doc]) -> Iterator[DocSentence]:
    """Yield every sentence of every Doc that has a word, in Doc order, then token order."""
    for doc_index, doc in enumerate(docs):
        if not len(doc):
            continue
        texts = [token.text for token in doc]
        is_word = doc.to_array("IS_SPACE") == 0
        for start, end in _spans(doc):
            positions = numpy.flatnonzero(is_word[start:end]) + start
            if len(positions):
                yield DocSentence(doc_index, positions, tuple(texts[i] for i in positions.tolist()))


def _spans(doc: Doc) -> Iterator[tuple[int, int]]:
    if doc.has_annotation("SENT_START"):
        for sent in doc.sents:
            yield sent.start, sent.end
    else:
        yield 0, len(doc)
