"""Sentences to the tensors one training step needs: char ids, lengths and target word ids."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy
import torch

from ...nn.words.word_batch import encode_padded
from ..vocab import Vocabulary

PAD_TARGET = -1


@dataclass
class StepInputs:
    """Padded ``<S> w1 .. wn </S>``; ``n_tokens``: predictions per direction (words + 1 per sentence)."""

    char_ids: torch.Tensor
    lengths: torch.Tensor
    targets: torch.Tensor
    n_tokens: int

    def to(self, device: torch.device) -> "StepInputs":
        return StepInputs(
            self.char_ids.to(device, non_blocking=True),
            self.lengths,
            self.targets.to(device, non_blocking=True),
            self.n_tokens,
        )


class StepInputBuilder:
    """Encodes batches: char ids (each distinct word once), target ids from the vocabulary."""

    def __init__(self, vocab: Vocabulary) -> None:
        self.vocab = vocab

    def encode(self, sentences: Sequence[Sequence[str]]) -> StepInputs:
        char_ids, lengths = encode_padded(sentences)
        steps = char_ids.shape[1]
        targets = numpy.full((len(sentences), steps), PAD_TARGET, dtype=numpy.int64)
        for row, sentence in enumerate(sentences):
            targets[row, : len(sentence) + 2] = self.vocab.framed_ids(sentence)
        return StepInputs(
            torch.from_numpy(char_ids),
            torch.from_numpy(lengths),
            torch.from_numpy(targets),
            int(lengths.sum()) - len(sentences),
        )
