"""How a stack's layers connect: layer i+1 reads layer i's output times its dropout mask; with
skip connections it adds that input to its output, as bilm-tf does."""

from __future__ import annotations

from typing import Callable, Sequence

import torch


def chain_layers(
    n_layers: int,
    inputs: torch.Tensor,
    run_layer: Callable[[int, torch.Tensor], torch.Tensor],
    use_skip_connections: bool,
    input_masks: Sequence[torch.Tensor] = (),
) -> list[torch.Tensor]:
    """Every layer's output; ``run_layer(index, layer_input)`` runs one layer's time loop."""
    outputs = []
    layer_input = inputs
    for index in range(n_layers):
        if index > 0 and input_masks:
            layer_input = layer_input * input_masks[index - 1]
        layer_output = run_layer(index, layer_input)
        if index > 0 and use_skip_connections:
            layer_output = layer_output + layer_input
        outputs.append(layer_output)
        layer_input = layer_output
    return outputs
