"""Highway layers with bilm-tf's gate convention."""

from __future__ import annotations

from typing import Callable, Optional, Sequence, cast

import torch
from torch import nn


class Highway(nn.Module):
    """``y = g * relu(W_t x + b_t) + (1 - g) * x`` with ``g = sigmoid(W_g x + b_g)``.

    The gate multiplies the *transform* branch, as bilm-tf's "carry" gate does, so its weights
    load without sign flips. Each layer holds one linear map with the transform rows first and
    the gate rows second, so a layer costs one matmul.
    """

    def __init__(self, dim: int, n_layers: int) -> None:
        super().__init__()
        self.dim = dim
        # nn.ModuleList is not generic: the cast tells the type checker what its items are
        self.layers = cast(Sequence[nn.Linear], nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(n_layers)))

    def forward(
        self, inputs: torch.Tensor, linear: Optional[Callable[[torch.Tensor, nn.Linear], torch.Tensor]] = None
    ) -> torch.Tensor:
        """``linear(x, layer)`` computes each layer's product (default: the layer itself)."""
        x = inputs
        for layer in self.layers:
            transform, gate = (layer(x) if linear is None else linear(x, layer)).split(self.dim, dim=-1)
            gate = torch.sigmoid(gate)
            x = gate * torch.relu(transform) + (1.0 - gate) * x
        return x
