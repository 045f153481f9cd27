"""The biLM's training objective: two language models over one sentence, no peeking.

For a framed sentence ``<S> w1 .. wn </S>`` the forward top layer at position k predicts the
token at k+1 and has only read positions <= k; the backward top layer at k predicts the token at
k-1 and has only read positions >= k. Both score their predictions with the shared output
layer. The loss is the mean of the two directions' mean NLLs (bilm-tf's
``0.5 * (loss_forward + loss_backward)``), so ``exp(loss)`` reads as a perplexity.
"""

from __future__ import annotations

import torch
from torch import nn

from ..nn.bilm import BiLM, BiLMStates
from ..nn.lstm import TRAINING_DTYPES
from ..nn.precision import DEFAULT_PRECISION
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


class LanguageModelObjective(nn.Module):
    """Wraps a :class:`BiLM` (and its shared output layer) so that ``forward`` returns the
    summed training NLL of each direction, ``(2,)``: what DDP needs to see as one module.

    In training mode ``dropout`` hits the char-CNN's token vectors (the first LSTM layer's
    input) and the top layer's output before the softmax, ``lstm_dropout`` the input of every
    LSTM layer above the first (bilm-tf drops every layer's input, and the top layer's output,
    with one rate). ``precision`` (one that runs on the model's device: float32, or bfloat16 or
    float16 on a GPU) sets the products' dtype, the softmax's included.
    """

    def __init__(
        self,
        bilm: BiLM,
        softmax_loss: SoftmaxLoss,
        dropout: float = 0.0,
        lstm_dropout: float = 0.0,
        precision: str = DEFAULT_PRECISION,
    ) -> None:
        super().__init__()
        if bilm.softmax is None:
            raise ValueError("Pretraining needs a BiLM with an output softmax (a vocabulary)")
        self.bilm = bilm
        self.softmax_loss = softmax_loss
        self.dropout = dropout
        self.lstm_dropout = lstm_dropout
        self.precision = precision

    def forward(self, char_ids: torch.Tensor, lengths: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        softmax = self.bilm.softmax
        if softmax is None:  # checked in __init__, unless it was removed since
            raise ValueError("Pretraining needs a BiLM with an output softmax (a vocabulary)")
        # No prediction reads the forward stack at EOS or the backward stack at BOS: skip those steps.
        states = self.bilm.contextualize(
            char_ids,
            lengths,
            precision=self.precision,
            final_boundary=False,
            token_dropout=self.dropout if self.training else 0.0,
            layer_dropout=self.lstm_dropout if self.training else 0.0,
        )
        forward_hidden, forward_targets, backward_hidden, backward_targets = directional_predictions(states, targets)
        dtype = TRAINING_DTYPES.get(self.precision)
        sums = []
        for hidden, targets in ((forward_hidden, forward_targets), (backward_hidden, backward_targets)):
            hidden = nn.functional.dropout(hidden, self.dropout, training=self.training)
            with torch.autocast(hidden.device.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
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
