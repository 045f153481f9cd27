"""The biLM's training objective: in ``<S> w1 .. wn </S>`` the forward top layer at k predicts token
k+1, the backward one token k-1, both through the shared output layer; the loss is the mean of the
two directions' mean NLLs (bilm-tf's), so ``exp(loss)`` reads as a perplexity."""

from __future__ import annotations

import torch
from torch import nn

from ..nn.bilm import BiLM, BiLMStates
from ..nn.lstm import TRAINING_DTYPES
from ..nn.precision import DEFAULT_PRECISION
from .data.step_inputs import PAD_TARGET
from .softmax import SoftmaxLoss, exact_nll_sum


def directional_predictions(
    states: BiLMStates, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(forward_hidden, forward_targets, backward_hidden, backward_targets)`` over real tokens."""
    valid = targets[:, 1:] != PAD_TARGET
    forward_hidden = states.forward[-1][:, :-1][valid]
    backward_hidden = states.backward[-1][:, 1:][valid]
    return forward_hidden, targets[:, 1:][valid], backward_hidden, targets[:, :-1][valid]


class LanguageModelObjective(nn.Module):
    """``forward`` gives each direction's summed training NLL, ``(2,)``: what DDP sees as one module."""

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
        assert softmax is not None
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
    """Summed exact NLL of each direction, ``(2,)``: what perplexity is computed from."""
    assert bilm.softmax is not None
    states = bilm.contextualize(char_ids, lengths)
    forward_hidden, forward_targets, backward_hidden, backward_targets = directional_predictions(states, targets)
    return torch.stack(
        [
            exact_nll_sum(forward_hidden, bilm.softmax, forward_targets),
            exact_nll_sum(backward_hidden, bilm.softmax, backward_targets),
        ]
    )
