"""The plain loop, one direction and one step at a time: the yardstick the other loops are
tested against, written for reading; it runs under autograd."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import torch
from torch.nn import functional as F

from .chain import chain_layers

if TYPE_CHECKING:
    from .stack import LstmStack, ProjectedLstmLayer


def run_reference(
    stacks: Sequence["LstmStack"], inputs: torch.Tensor, active: Sequence[int], input_masks: Sequence[torch.Tensor] = ()
) -> list[torch.Tensor]:
    """Per-layer outputs ``(n_stacks, time, batch, P)``; each stack runs its own time loop.
    ``input_masks`` as in :func:`.training.run_training`."""
    per_stack = [run_stack(stack, inputs[d], active, [m[d] for m in input_masks]) for d, stack in enumerate(stacks)]
    return [torch.stack(layer_outputs) for layer_outputs in zip(*per_stack)]


def run_stack(
    stack: "LstmStack", inputs: torch.Tensor, active: Sequence[int], input_masks: Sequence[torch.Tensor] = ()
) -> list[torch.Tensor]:
    """Per-layer outputs ``(time, batch, P)`` of one stack on time-major ``(time, batch, D)``;
    ``input_masks[i]`` ``(time, batch, P)`` multiplies layer i+1's input (dropout)."""
    return chain_layers(
        len(stack.layers),
        inputs,
        lambda index, layer_input: _run_layer(stack.layers[index], stack, layer_input, active),
        stack.use_skip_connections,
        input_masks,
    )


def _run_layer(
    layer: "ProjectedLstmLayer", stack: "LstmStack", inputs: torch.Tensor, active: Sequence[int]
) -> torch.Tensor:
    steps, batch, _ = inputs.shape
    cell_dim = layer.cell_dim
    bias = layer.gate_bias(stack.forget_bias)
    hidden = inputs.new_zeros(batch, layer.projection_dim)
    memory = inputs.new_zeros(batch, cell_dim)
    step_outputs = []
    for t in range(steps):
        n = active[t]
        gates = F.linear(inputs[t, :n], layer.input_weight, bias) + F.linear(hidden[:n], layer.recurrent_weight)
        in_gate = torch.sigmoid(gates[:, :cell_dim])
        candidate = torch.tanh(gates[:, cell_dim : 2 * cell_dim])
        forget_gate = torch.sigmoid(gates[:, 2 * cell_dim : 3 * cell_dim])
        out_gate = torch.sigmoid(gates[:, 3 * cell_dim :])
        new_memory = in_gate * candidate + forget_gate * memory[:n]
        if stack.cell_clip:
            new_memory = torch.clamp(new_memory, -stack.cell_clip, stack.cell_clip)
        new_hidden = F.linear(out_gate * torch.tanh(new_memory), layer.projection_weight)
        if stack.proj_clip:
            new_hidden = torch.clamp(new_hidden, -stack.proj_clip, stack.proj_clip)
        # Finished rows keep their last state (they are never read again) and output zeros.
        memory = torch.cat([new_memory, memory[n:]])
        hidden = torch.cat([new_hidden, hidden[n:]])
        step_outputs.append(torch.cat([new_hidden, new_hidden.new_zeros(batch - n, new_hidden.shape[1])]))
    if not step_outputs:
        return inputs.new_zeros(0, batch, layer.projection_dim)
    return torch.stack(step_outputs)
