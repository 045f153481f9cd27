"""The biLM's training objective: two language models over one sentence, no peeking.

For a framed sentence ``<S> w1 .. wn </S>`` the forward top layer at position k predicts the
token at k+1 and has only read positions <= k; the backward top layer at k predicts the token at
k-1 and has only read positions >= k. Both score their predictions with the shared output
layer. The loss is the mean of the two directions' mean NLLs (bilm-tf's
``0.5 * (loss_forward + loss_backward)``), so ``exp(loss)`` reads as a perplexity.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import nn

from ..nn.bilm import BiLM, BiLMStates
from .data.step_inputs import PAD_TARGET
from .softmax import SoftmaxLoss, exact_nll_sum, full_softmax_nll


def directional_predictions(
    states: BiLMStates, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(forward_hidden, forward_targets, backward_hidden, backward_targets)`` over real tokens.

    Forward position k (< length-1) predicts ``targets[k+1]``; backward position k (>= 1)
    predicts ``targets[k-1]``. Both have exactly ``length - 1`` predictions per sentence, and
    the same mask: the predicting position (or the target) lies inside the sentence.
    """
    valid = targets[:, 1:] != PAD_TARGET
    forward_hidden = states.forward[-1][:, :-1][valid]
    backward_hidden = states.backward[-1][:, 1:][valid]
    return forward_hidden, targets[:, 1:][valid], backward_hidden, targets[:, :-1][valid]


def per_position_nll(
    bilm: BiLM, char_ids: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact NLL at every predicting position, ``(batch, time - 1)`` per direction, 0 at padding.

    Column k of the forward result is the prediction made at position k (of token k+1);
    column k of the backward result is the one made at position k+1 (of token k).
    """
    if bilm.softmax is None:
        raise ValueError("The model has no output softmax")
    states = bilm.contextualize(char_ids, lengths)
    valid = targets[:, 1:] != PAD_TARGET
    safe_next = targets[:, 1:].clamp(min=0)
    safe_prev = targets[:, :-1].clamp(min=0)
    batch, steps = safe_next.shape
    forward = full_softmax_nll(
        states.forward[-1][:, :-1].reshape(batch * steps, -1), bilm.softmax, safe_next.reshape(-1)
    )
    backward = full_softmax_nll(
        states.backward[-1][:, 1:].reshape(batch * steps, -1), bilm.softmax, safe_prev.reshape(-1)
    )
    zero = torch.zeros((), dtype=forward.dtype, device=forward.device)
    return (
        torch.where(valid, forward.reshape(batch, steps), zero),
        torch.where(valid, backward.reshape(batch, steps), zero),
    )


# Odd 63-bit multipliers for the row keys of :func:`distinct_rows` (any fixed values work: a
# collision is detected and handled, never trusted).
_ROW_KEY_MULTIPLIERS = torch.randint(1, 2**62, (256,), generator=torch.Generator().manual_seed(20)) * 2 + 1


def distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(unique, inverse)`` of the rows of an integer matrix: ``unique[inverse] == rows``.

    ``torch.unique(dim=0)`` sorts the rows column by column (12 ms a step for 2,000 positions
    of 50 char ids); here each row becomes one 64-bit key (wrapping multiply-add), the keys
    are made unique, and the result is checked row by row, falling back to ``torch.unique`` on
    a key collision. The distinct rows come in key order, not in ``torch.unique``'s order.
    """
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
    """Makes the char encoder run once per distinct word of a batch instead of once per position.

    A batch of 2,000 positions has about 800 distinct words (padding included, once), and the
    char-CNN costs the same for each, so this cuts its share of a training step by more than
    half. Outputs are identical; gradients are the same sums in another order. It works
    through hooks (the input is reduced to distinct rows before ``forward``, the output is
    expanded back after it), so the model's code and its saved weights are untouched.
    """

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
    """Wraps a :class:`BiLM` (and its shared output layer) so that ``forward`` returns the
    summed training NLL of each direction, ``(2,)``: what DDP needs to see as one module.

    ``dropout`` hits the char-CNN's token vectors (the first LSTM layer's input) and the top
    layer's output before the softmax, in training mode only; ``lstm_dropout`` the input of
    every LSTM layer above the first (bilm-tf drops every layer's input, and the top layer's
    output, with one rate). The first goes through a forward hook on the char encoder, since
    :class:`BiLM` has no dropout of its own; the char encoder also runs once per distinct
    word (:class:`UniqueWordEncoding`). ``close`` removes both hooks.
    """

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
