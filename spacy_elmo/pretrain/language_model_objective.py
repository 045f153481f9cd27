"""The biLM's training objective: two language models over one sentence, no peeking.

In ``<S> w1 .. wn </S>`` the forward top layer at position k has read positions <= k and predicts
token k+1; the backward one has read positions >= k and predicts token k-1. Both use the shared
output layer; the loss is the mean of the two directions' mean NLLs (bilm-tf's), so
``exp(loss)`` reads as a perplexity.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from ..nn.bilm import BiLM, BiLMStates
from .data.step_inputs import PAD_TARGET
from .softmax import SoftmaxLoss, exact_nll_sum


def directional_predictions(
    states: BiLMStates, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(forward_hidden, forward_targets, backward_hidden, backward_targets)`` over real tokens:
    ``length - 1`` predictions per sentence and direction."""
    valid = targets[:, 1:] != PAD_TARGET
    forward_hidden = states.forward[-1][:, :-1][valid]
    backward_hidden = states.backward[-1][:, 1:][valid]
    return forward_hidden, targets[:, 1:][valid], backward_hidden, targets[:, :-1][valid]


# Odd multipliers for the row keys of :func:`distinct_rows` (any fixed values work: a collision
# is detected, never trusted).
_ROW_KEY_MULTIPLIERS = torch.randint(1, 2**62, (256,), generator=torch.Generator().manual_seed(20)) * 2 + 1


def distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(unique, inverse)`` of an integer matrix's rows, faster than ``torch.unique(dim=0)`` (which
    sorts column by column): each row becomes one 64-bit key; a collision falls back to it."""
    width = rows.shape[1]
    if rows.shape[0] == 0 or width > _ROW_KEY_MULTIPLIERS.shape[0]:
        return torch.unique(rows, dim=0, return_inverse=True)
    keys = (rows * _ROW_KEY_MULTIPLIERS[:width].to(rows.device)).sum(dim=1)
    _, inverse = torch.unique(keys, return_inverse=True)
    n = int(inverse.max()) + 1
    positions = torch.arange(rows.shape[0], device=rows.device)
    first = torch.full((n,), rows.shape[0], dtype=torch.long, device=rows.device)
    first.scatter_reduce_(0, inverse, positions, reduce="amin")
    unique = rows[first]
    if not torch.equal(unique[inverse], rows):
        return torch.unique(rows, dim=0, return_inverse=True)
    return unique, inverse


class UniqueWordEncoding:
    """Makes the char encoder run once per distinct word of a batch instead of once per position
    (a batch repeats most of its words). Outputs are identical, gradients the same sums in another
    order. Hooks reduce the input to distinct rows and expand the output back, so the model's
    code and weights are untouched."""

    def __init__(self, encoder: nn.Module) -> None:
        self._inverse: list[tuple[torch.Tensor, torch.Size]] = []
        self._handles = [
            encoder.register_forward_pre_hook(self._reduce),
            # Prepended: when wrappers nest, the last one to reduce is the first to expand.
            encoder.register_forward_hook(self._expand, prepend=True),
        ]

    def _reduce(self, module: nn.Module, args: tuple) -> tuple:
        char_ids = args[0]
        flat = char_ids.reshape(-1, char_ids.shape[-1])
        unique, inverse = distinct_rows(flat)
        self._inverse.append((inverse, char_ids.shape[:-1]))
        return (unique, *args[1:])

    def _expand(self, module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor:
        inverse, leading = self._inverse.pop()
        return output[inverse].reshape(*leading, output.shape[-1])

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []


class LanguageModelObjective(nn.Module):
    """A :class:`BiLM` whose ``forward`` returns the summed training NLL of each direction, ``(2,)``:
    what DDP needs to see as one module. ``dropout`` hits the token vectors (by a hook on the char
    encoder: the BiLM has no dropout of its own) and the top layer's output, ``lstm_dropout`` the
    input of every LSTM layer above the first, in training only; ``close`` removes the hooks."""

    def __init__(
        self,
        bilm: BiLM,
        softmax_loss: SoftmaxLoss,
        dropout: float = 0.0,
        unique_words: bool = True,
        lstm_dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if bilm.softmax is None:
            raise ValueError("Pretraining needs a BiLM with an output softmax (a vocabulary)")
        self.bilm = bilm
        self.softmax_loss = softmax_loss
        self.dropout = dropout
        self.lstm_dropout = lstm_dropout
        # Set (e.g. to bfloat16 on a GPU) to autocast the training softmax's matmuls.
        self.compute_dtype: Optional[torch.dtype] = None
        # Registered first, so that dropout (below) sees the expanded, per-position output.
        self._unique = UniqueWordEncoding(bilm.char_encoder) if unique_words else None
        self._hook: Optional[torch.utils.hooks.RemovableHandle] = None
        if dropout > 0:
            self._hook = bilm.char_encoder.register_forward_hook(self._drop_token_vectors)

    def _drop_token_vectors(self, module: nn.Module, inputs: object, output: torch.Tensor) -> torch.Tensor:
        return nn.functional.dropout(output, self.dropout, training=module.training)

    def close(self) -> None:
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        if self._unique is not None:
            self._unique.remove()
            self._unique = None

    def forward(self, char_ids: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        softmax = self.bilm.softmax
        if softmax is None:  # checked in __init__, unless it was removed since
            raise ValueError("Pretraining needs a BiLM with an output softmax (a vocabulary)")
        # No prediction reads the forward stack at EOS or the backward stack at BOS: skip those steps.
        states = self.bilm.contextualize(
            char_ids, lengths, final_boundary=False, layer_dropout=self.lstm_dropout if self.training else 0.0
        )
        forward_hidden, forward_targets, backward_hidden, backward_targets = directional_predictions(states, targets)
        sums = []
        for hidden, targets in ((forward_hidden, forward_targets), (backward_hidden, backward_targets)):
            hidden = nn.functional.dropout(hidden, self.dropout, training=self.training)
            with torch.autocast(
                hidden.device.type, dtype=self.compute_dtype or torch.bfloat16, enabled=self.compute_dtype is not None
            ):
                sums.append(self.softmax_loss.training_nll_sum(hidden, softmax, targets))
        return torch.stack(sums)


def exact_direction_nll(
    bilm: BiLM, char_ids: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor
) -> torch.Tensor:
    """Summed exact NLL of each direction, ``(2,)`` (for perplexity; no dropout, no sampling)."""
    if bilm.softmax is None:
        raise ValueError("The model has no output softmax")
    states = bilm.contextualize(char_ids, lengths)
    forward_hidden, forward_targets, backward_hidden, backward_targets = directional_predictions(states, targets)
    return torch.stack(
        [
            exact_nll_sum(forward_hidden, bilm.softmax, forward_targets),
            exact_nll_sum(backward_hidden, bilm.softmax, backward_targets),
        ]
    )
