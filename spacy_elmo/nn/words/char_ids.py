"""Words to character ids, in the encoding that AllenNLP and bilm-tf share.

A word becomes its UTF-8 bytes (at most 48), framed by begin- and end-of-word marks and padded
to 50 positions; every id is then shifted by one so that 0 can mean "no token here".
Sentence boundaries (BOS/EOS) are pseudo-words with fixed ids; the literal strings ``<S>`` and
``</S>`` are encoded as those boundaries, as the reference implementation does.
"""

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
    """Pad a batch of tokenized sentences into an int64 array (batch, max_len, 50) of char ids.

    With ``add_boundaries`` every sentence is framed by BOS and EOS and its length counts them.
    Rows past a sentence's length are all zero (the padding id).

    This is the plain per-token reference: the library itself encodes batches with
    :func:`spacy_elmo.nn.words.word_batch.encode_padded`, which returns the same arrays about ten times
    faster. This one is kept for tests (which check the two agree) and the reference loop in
    ``benchmarks/plain_elmo.py``.
    """
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
