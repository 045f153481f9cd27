"""Words to ids in ELMoForManyLangs' encoding: code points looked up in a char dictionary.

A token is cut to ``max_characters_per_token - 2`` code points between a begin and an end mark
(their code swaps ``<bow>`` and ``<eow>``, and the weights were trained so), padded with
``<pad>``; the sentence marks get their own ids; a word table adds the word's id in a last
column. Ids are shifted by one: 0 means "no token here", as in the byte encoding."""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy

from ...config import BiLMConfig, Lexicon

BOS_WORD = "<bos>"
EOS_WORD = "<eos>"


class CodePointEncoding:
    """The ids of words for one model's dictionaries (a :class:`~.word_batch.TokenEncoding`)."""

    boundaries = (BOS_WORD, EOS_WORD)

    def __init__(self, config: BiLMConfig, lexicon: Lexicon) -> None:
        chars = lexicon.chars
        self.max_chars = config.max_characters_per_token
        self.width = config.ids_per_token
        self.begin, self.end = chars["<eow>"] + 1, chars["<bow>"] + 1  # swapped, as in their code
        self.unknown, self.padding = chars["<oov>"] + 1, chars["<pad>"] + 1
        self.markers = {word: chars[word] + 1 for word in self.boundaries}
        self.words: Optional[Mapping[str, int]] = lexicon.words if config.word_dim else None
        # One table lookup per code point: lookup[c] is the shifted id of chr(c).
        points = {ord(key): index + 1 for key, index in chars.items() if len(key) == 1}
        self.lookup = numpy.full(max(points, default=0) + 1, self.unknown, dtype=numpy.int32)
        self.lookup[numpy.fromiter(points, dtype=numpy.int64)] = numpy.fromiter(points.values(), dtype=numpy.int64)

    def ids(self, words: Sequence[str]) -> numpy.ndarray:
        """Ids ``(n_words, width)`` int64."""
        cut = [word[: self.max_chars - 2] for word in words]
        lengths = numpy.fromiter((len(word) for word in cut), dtype=numpy.int64, count=len(cut))
        ids = numpy.full((len(cut), self.width), self.padding, dtype=numpy.int64)
        ids[:, 0] = self.begin
        columns = numpy.arange(self.max_chars)[None, :]
        inside = (columns >= 1) & (columns <= lengths[:, None])
        points = numpy.frombuffer("".join(cut).encode("utf-32-le", errors="surrogatepass"), dtype="<u4")
        points = points.astype(numpy.int64)
        known = points < self.lookup.shape[0]
        ids[:, : self.max_chars][inside] = numpy.where(known, self.lookup[numpy.where(known, points, 0)], self.unknown)
        ids[numpy.arange(len(cut)), lengths + 1] = self.end
        for row in numpy.flatnonzero(lengths == len(BOS_WORD)).tolist():  # both marks have 5 chars
            if cut[row] in self.markers:
                ids[row, 1:3] = (self.markers[cut[row]], self.end)
                ids[row, 3 : self.max_chars] = self.padding
        if self.words is not None:
            unknown = self.words["<oov>"]
            ids[:, -1] = [self.words.get(word, unknown) + 1 for word in cut]
        return ids
