"""Sentences to the tensors one training step needs: char ids, lengths and target word ids."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy
import torch

from ..nn.char_ids import BOS_CHAR_IDS, EOS_CHAR_IDS, MAX_WORD_LENGTH, encode_word
from .vocab import Vocabulary

PAD_TARGET = -1


@dataclass
class EncodedBatch:
    """``char_ids`` (B, T, 50) and ``targets`` (B, T) of ``<S> w1 .. wn </S>``, padded with
    zeros and ``PAD_TARGET``; ``lengths`` count BOS and EOS; ``n_tokens`` is the number of
    predictions each direction makes (words + 1 per sentence)."""

    char_ids: torch.Tensor
    lengths: torch.Tensor
    targets: torch.Tensor
    n_tokens: int

    def to(self, device: torch.device) -> "EncodedBatch":
        return EncodedBatch(
            self.char_ids.to(device, non_blocking=True),
            self.lengths,
            self.targets.to(device, non_blocking=True),
            self.n_tokens,
        )


class BatchEncoder:
    """Encodes batches, remembering the char ids of frequent words (most tokens repeat)."""

    def __init__(self, vocab: Vocabulary, cache_size: int = 200_000) -> None:
        self.vocab = vocab
        self.cache_size = cache_size
        self._chars: dict[str, numpy.ndarray] = {}

    def encode(self, sentences: Sequence[Sequence[str]]) -> EncodedBatch:
        lengths = numpy.asarray([len(s) + 2 for s in sentences], dtype=numpy.int64)
        steps = int(lengths.max()) if len(sentences) else 0
        char_ids = numpy.zeros((len(sentences), steps, MAX_WORD_LENGTH), dtype=numpy.int64)
        targets = numpy.full((len(sentences), steps), PAD_TARGET, dtype=numpy.int64)
        for row, sentence in enumerate(sentences):
            n = len(sentence)
            char_ids[row, 0] = BOS_CHAR_IDS
            if n:
                char_ids[row, 1 : n + 1] = numpy.stack([self._word_ids(w) for w in sentence])
            char_ids[row, n + 1] = EOS_CHAR_IDS
            targets[row, : n + 2] = self.vocab.framed_ids(sentence)
        return EncodedBatch(
            torch.from_numpy(char_ids),
            torch.from_numpy(lengths),
            torch.from_numpy(targets),
            int(lengths.sum()) - len(sentences),
        )

    def _word_ids(self, word: str) -> numpy.ndarray:
        ids = self._chars.get(word)
        if ids is None:
            if len(self._chars) >= self.cache_size:
                self._chars.clear()
            ids = self._chars[word] = encode_word(word)
        return ids
