"""Words to the 50 char ids AllenNLP and bilm-tf share: UTF-8 bytes (at most 48) between
begin- and end-of-word marks, padded, shifted by one (0: no token). ``<S>`` and ``</S>`` are
the sentence boundaries' ids, as in the reference."""

from __future__ import annotations

from typing import Sequence

import numpy

from ...config import MAX_WORD_LENGTH, N_CHARACTERS  # noqa: F401 (N_CHARACTERS re-exported)

MAX_WORD_BYTES = MAX_WORD_LENGTH - 2

BEGIN_OF_SENTENCE = 256
END_OF_SENTENCE = 257
BEGIN_OF_WORD = 258
END_OF_WORD = 259
PADDING_CHAR = 260

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"


def _marker_ids(marker: int) -> numpy.ndarray:
    ids = numpy.full(MAX_WORD_LENGTH, PADDING_CHAR, dtype=numpy.int64)
    ids[:3] = (BEGIN_OF_WORD, marker, END_OF_WORD)
    return ids + 1


BOS_CHAR_IDS: numpy.ndarray = _marker_ids(BEGIN_OF_SENTENCE)
EOS_CHAR_IDS: numpy.ndarray = _marker_ids(END_OF_SENTENCE)
BOS_CHAR_IDS.setflags(write=False)
EOS_CHAR_IDS.setflags(write=False)


def encode_word(word: str) -> numpy.ndarray:
    """The 50 character ids of one word (already shifted by one)."""
    if word == BOS_TOKEN:
        return BOS_CHAR_IDS.copy()
    if word == EOS_TOKEN:
        return EOS_CHAR_IDS.copy()
    # Lone surrogates have no strict UTF-8 form: keep their raw code units instead of failing.
    raw = word.encode("utf-8", errors="surrogatepass")[:MAX_WORD_BYTES]
    ids = numpy.full(MAX_WORD_LENGTH, PADDING_CHAR, dtype=numpy.int64)
    ids[0] = BEGIN_OF_WORD
    ids[1 : len(raw) + 1] = numpy.frombuffer(raw, dtype=numpy.uint8)
    ids[len(raw) + 1] = END_OF_WORD
    return ids + 1


def encode_sentences(
    sentences: Sequence[Sequence[str]], add_boundaries: bool = True
) -> tuple[numpy.ndarray, numpy.ndarray]:
    """Char ids ``(batch, max_len, 50)`` of tokenized sentences (framed by BOS and EOS with
    ``add_boundaries``; rows past a sentence's end are zero) and the lengths: the plain per-token
    reference that tests and ``benchmarks/plain_elmo.py`` check :func:`.word_batch.encode_padded` by."""
    extra = 2 if add_boundaries else 0
    lengths = numpy.asarray([len(s) + extra for s in sentences], dtype=numpy.int64)
    max_len = int(lengths.max()) if len(sentences) else 0
    ids = numpy.zeros((len(sentences), max_len, MAX_WORD_LENGTH), dtype=numpy.int64)
    for row, sentence in enumerate(sentences):
        offset = 0
        if add_boundaries:
            ids[row, 0] = BOS_CHAR_IDS
            ids[row, len(sentence) + 1] = EOS_CHAR_IDS
            offset = 1
        for position, word in enumerate(sentence):
            ids[row, position + offset] = encode_word(word)
    return ids, lengths
