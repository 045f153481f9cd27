"""The parameters of ELMo's LSTMs: one projected layer, and a stack of them reading one way.
The loops (:mod:`spacy_elmo.nn.lstm`) run them; nothing here runs a time loop."""

from __future__ import annotations

import math
from typing import Optional, Sequence, cast

import torch
from torch import nn


class ProjectedLstmLayer(nn.Module):
    """Parameters of one LSTM layer with a projected (and clipped) output, no peepholes.

    Gates are stored in TensorFlow's order (input, candidate, forget, output) so bilm-tf
    weights map onto them directly. The forget bias is added at run time, not stored.
    """

    def __init__(self, input_dim: int, cell_dim: int, projection_dim: int) -> None:
        super().__init__()
        self.input_dim, self.cell_dim, self.projection_dim = input_dim, cell_dim, projection_dim
        self.input_weight = nn.Parameter(torch.empty(4 * cell_dim, input_dim))
        self.recurrent_weight = nn.Parameter(torch.empty(4 * cell_dim, projection_dim))
        self.bias = nn.Parameter(torch.zeros(4 * cell_dim))
        self.projection_weight = nn.Parameter(torch.empty(projection_dim, cell_dim))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.cell_dim)
        for weight in (self.input_weight, self.recurrent_weight, self.projection_weight):
            nn.init.uniform_(weight, -bound, bound)
        nn.init.zeros_(self.bias)

    def gate_bias(self, forget_bias: float) -> torch.Tensor:
        """The stored bias plus the run-time forget bias (TF adds it to the forget gate only)."""
        if not forget_bias:
            return self.bias
        shift = torch.zeros_like(self.bias)
        shift[2 * self.cell_dim : 3 * self.cell_dim] = forget_bias
        return self.bias + shift


class LstmStack(nn.Module):
    """The parameters of an L-layer LSTM language model reading in one direction (run them with
    :func:`.dispatch.run_stacks`; a stack is not called itself)."""

    def __init__(
        self,
        input_dim: int,
        cell_dim: int,
        projection_dim: int,
        n_layers: int,
        cell_clip: Optional[float] = None,
        proj_clip: Optional[float] = None,
        use_skip_connections: bool = True,
        forget_bias: float = 1.0,
    ) -> None:
        super().__init__()
        dims = [input_dim] + [projection_dim] * (n_layers - 1)
        # nn.ModuleList is not generic: the cast tells the type checker what its items are
        self.layers = cast(
            Sequence[ProjectedLstmLayer], nn.ModuleList(ProjectedLstmLayer(d, cell_dim, projection_dim) for d in dims)
        )
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.use_skip_connections = use_skip_connections
        self.forget_bias = forget_bias
