"""A batch of sentences as distinct words plus an index, with char ids built in a few numpy calls.

:class:`TokenEncoding` is how every caller gets a model's ids (``BiLM.encoding``): :data:`BYTES`
is bilm-tf's encoding, :class:`~.code_points.CodePointEncoding` ELMoForManyLangs'."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import numpy
import torch

from .char_ids import (
    BEGIN_OF_WORD,
    BOS_CHAR_IDS,
    BOS_TOKEN,
    END_OF_WORD,
    EOS_CHAR_IDS,
    EOS_TOKEN,
    MAX_WORD_BYTES,
    MAX_WORD_LENGTH,
    PADDING_CHAR,
)


@dataclass
class WordBatch:
    """``words``: distinct words in first-seen order; ``token_words[k]``: the word of token k
    (tokens numbered sentence after sentence); ``lengths``: tokens per sentence."""

    words: list[str]
    token_words: numpy.ndarray
    lengths: numpy.ndarray

    @property
    def n_tokens(self) -> int:
        return int(self.token_words.shape[0])


def index_words(sentences: Sequence[Sequence[str]], reserved: Sequence[str] = ()) -> WordBatch:
    """Number the distinct words of ``sentences`` and map every token to its word.

    ``reserved`` words get the first numbers, whether or not the sentences use them.
    """
    numbers: dict[str, int] = {word: index for index, word in enumerate(reserved)}
    token_words = [numbers.setdefault(word, len(numbers)) for sentence in sentences for word in sentence]
    lengths = numpy.fromiter((len(s) for s in sentences), dtype=numpy.int64, count=len(sentences))
    return WordBatch(list(numbers), numpy.asarray(token_words, dtype=numpy.int64), lengths)


def words_to_char_ids(words: Sequence[str]) -> numpy.ndarray:
    """Char ids ``(n_words, 50)`` int64, shifted by one as the model expects."""
    encoded = [word.encode("utf-8", errors="surrogatepass")[:MAX_WORD_BYTES] for word in words]
    n_bytes = numpy.fromiter((len(raw) for raw in encoded), dtype=numpy.int64, count=len(encoded))
    ids = numpy.full((len(encoded), MAX_WORD_LENGTH), PADDING_CHAR + 1, dtype=numpy.int64)
    ids[:, 0] = BEGIN_OF_WORD + 1
    # Row-major order of the mask matches the order of the concatenated bytes.
    columns = numpy.arange(MAX_WORD_LENGTH)[None, :]
    inside = (columns >= 1) & (columns <= n_bytes[:, None])
    ids[inside] = numpy.frombuffer(b"".join(encoded), dtype=numpy.uint8).astype(numpy.int64) + 1
    ids[numpy.arange(len(encoded)), n_bytes + 1] = END_OF_WORD + 1
    # The literal boundary strings are encoded as the boundaries; only 3- and 4-byte words can be.
    for row in numpy.flatnonzero((n_bytes == len(BOS_TOKEN)) | (n_bytes == len(EOS_TOKEN))).tolist():
        if words[row] in _BOUNDARY_IDS:
            ids[row] = _BOUNDARY_IDS[words[row]]
    return ids


_BOUNDARY_IDS = {BOS_TOKEN: BOS_CHAR_IDS, EOS_TOKEN: EOS_CHAR_IDS}


class TokenEncoding(Protocol):
    """How one model turns words into id rows: ``ids(words)`` is ``(n_words, width)`` int64,
    all rows non-zero in column 0 (an all-zero row means "no token"); ``boundaries`` are the
    words that frame every sentence (their ids are the sentence marks)."""

    boundaries: tuple[str, str]
    width: int

    def ids(self, words: Sequence[str]) -> numpy.ndarray: ...


class ByteEncoding:
    """bilm-tf's encoding: UTF-8 bytes, sentences framed by ``<S>`` and ``</S>``."""

    boundaries = (BOS_TOKEN, EOS_TOKEN)
    width = MAX_WORD_LENGTH

    def ids(self, words: Sequence[str]) -> numpy.ndarray:
        return words_to_char_ids(words)


BYTES = ByteEncoding()


def encode_padded(
    sentences: Sequence[Sequence[str]], add_boundaries: bool = True, encoding: TokenEncoding = BYTES
) -> tuple[numpy.ndarray, numpy.ndarray]:
    """Same result as :func:`spacy_elmo.nn.words.char_ids.encode_sentences`, built from distinct words:
    int64 ids ``(batch, max_len, width)`` (all zero past a sentence's end) and the lengths.

    The encoder the ``spacy_elmo.BiLM.v1`` model's forward uses (with the biLM's ``encoding``)."""
    batch = index_words(sentences, reserved=encoding.boundaries if add_boundaries else ())
    extra = 2 if add_boundaries else 0
    lengths = batch.lengths + extra
    width = int(lengths.max()) if len(sentences) else 0
    word_ids = encoding.ids(batch.words)
    # Row of each position in word_ids, or -1 for padding.
    positions = numpy.arange(width)[None, :]
    rows = numpy.full((len(sentences), width), -1, dtype=numpy.int64)
    starts = numpy.cumsum(batch.lengths) - batch.lengths
    inside = (positions >= extra // 2) & (positions < batch.lengths[:, None] + extra // 2)
    rows[inside] = batch.token_words[(starts[:, None] + positions - extra // 2)[inside]]
    if add_boundaries and len(sentences):
        rows[:, 0] = 0
        rows[numpy.arange(len(sentences)), batch.lengths + 1] = 1
    ids = numpy.zeros((len(sentences), width, encoding.width), dtype=numpy.int64)
    ids[rows >= 0] = word_ids[rows[rows >= 0]]
    return ids, lengths


# Odd 63-bit multipliers for the row keys of :func:`distinct_rows` (any fixed values work: a
# collision is detected and handled, never trusted).
_ROW_KEY_MULTIPLIERS = torch.randint(1, 2**62, (256,), generator=torch.Generator().manual_seed(20)) * 2 + 1


def distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(unique, inverse)`` of the rows of an integer matrix: ``unique[inverse] == rows``.

    ``torch.unique(dim=0)`` sorts the rows column by column, slowly; here each row becomes one
    64-bit key (wrapping multiply-add), the keys are made unique, and the result is checked,
    falling back to ``torch.unique`` on a key collision.
    """
    width = rows.shape[1]
    if rows.shape[0] == 0 or width > _ROW_KEY_MULTIPLIERS.shape[0]:
        return torch.unique(rows, dim=0, return_inverse=True)
    keys = (rows * _ROW_KEY_MULTIPLIERS[:width].to(rows.device)).sum(dim=1)
    _, inverse = torch.unique(keys, return_inverse=True)
    positions = torch.arange(rows.shape[0], device=rows.device)
    first = torch.full((int(inverse.max()) + 1,), rows.shape[0], dtype=torch.long, device=rows.device)
    first.scatter_reduce_(0, inverse, positions, reduce="amin")
    unique = rows[first]
    if not torch.equal(unique[inverse], rows):
        return torch.unique(rows, dim=0, return_inverse=True)
    return unique, inverse
