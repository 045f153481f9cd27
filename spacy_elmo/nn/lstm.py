"""ELMo's directional LSTM stack: projection, cell and projection clipping, residual connections.

The time loop is the cost floor of the whole model, so it does as little as possible per step:
the input-to-gate products of every step come from one matmul before the loop, and each step
does one batched recurrent matmul for *both* directions, the elementwise cell update and one
batched projection matmul. Rows must be sorted by length, longest first: at step t only the
rows still running are computed (as a packed sequence would), so padding costs nothing.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

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


class LstmStack(nn.Module):
    """An L-layer LSTM language model reading in one direction."""

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
        self.layers = nn.ModuleList(ProjectedLstmLayer(d, cell_dim, projection_dim) for d in dims)
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.use_skip_connections = use_skip_connections
        self.forget_bias = forget_bias

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """Per-layer outputs ``(batch, time, projection_dim)`` for rows sorted longest first."""
        return [out[0] for out in run_stacks([self], inputs.unsqueeze(0), lengths)]


def _gate_bias(layer: ProjectedLstmLayer, forget_bias: float) -> torch.Tensor:
    if not forget_bias:
        return layer.bias
    shift = torch.zeros_like(layer.bias)
    cell = layer.cell_dim
    shift[2 * cell : 3 * cell] = forget_bias
    return layer.bias + shift


def run_stacks(
    stacks: Sequence[LstmStack], inputs: torch.Tensor, lengths: torch.Tensor
) -> list[torch.Tensor]:
    """Run several same-shaped stacks (e.g. forward and backward) in one time loop.

    ``inputs`` is ``(n_stacks, batch, time, input_dim)``; stack ``d`` reads ``inputs[d]``
    left to right (reverse the backward direction's rows before calling). ``lengths`` holds
    each row's length, sorted in decreasing order. Returns one ``(n_stacks, batch, time, P)``
    tensor per layer, zero at padded positions; every row starts from a zero state.
    """
    first = stacks[0]
    n_dirs, batch, steps, _ = inputs.shape
    lengths_list = [int(n) for n in lengths.tolist()]
    if any(a < b for a, b in zip(lengths_list, lengths_list[1:])):
        raise ValueError("run_stacks needs rows sorted by decreasing length")
    # active[t] = number of rows whose length exceeds t (a prefix, thanks to the sort).
    active = [sum(1 for n in lengths_list if n > t) for t in range(steps)]
    mask = (torch.arange(steps, device=inputs.device)[None, :] < lengths.to(inputs.device)[:, None])
    mask = mask.to(inputs.dtype)[None, :, :, None]

    outputs: list[torch.Tensor] = []
    layer_input = inputs
    for index in range(len(first.layers)):
        layers = [stack.layers[index] for stack in stacks]
        layer_output = _run_layer(layers, layer_input, active, first)
        if index > 0 and first.use_skip_connections:
            layer_output = layer_output + layer_input
        layer_output = layer_output * mask
        outputs.append(layer_output)
        layer_input = layer_output
    return outputs


def _run_layer(
    layers: Sequence[ProjectedLstmLayer],
    inputs: torch.Tensor,
    active: list[int],
    options: LstmStack,
) -> torch.Tensor:
    n_dirs, batch, steps, _ = inputs.shape
    cell, proj = layers[0].cell_dim, layers[0].projection_dim
    # All input-to-gate products at once, laid out time-major for cheap per-step slices.
    pre_gates = torch.stack(
        [
            nn.functional.linear(inputs[d], layer.input_weight, _gate_bias(layer, options.forget_bias))
            for d, layer in enumerate(layers)
        ]
    ).permute(2, 0, 1, 3).contiguous()  # (time, dirs, batch, 4*cell)
    recurrent = torch.stack([layer.recurrent_weight.t() for layer in layers])  # (dirs, P, 4C)
    projection = torch.stack([layer.projection_weight.t() for layer in layers])  # (dirs, C, P)

    hidden = inputs.new_zeros(n_dirs, batch, proj)
    memory = inputs.new_zeros(n_dirs, batch, cell)
    step_outputs = []
    for t in range(steps):
        n = active[t]
        if n == 0:
            step_outputs.append(inputs.new_zeros(n_dirs, batch, proj))
            continue
        gates = torch.baddbmm(pre_gates[t, :, :n], hidden[:, :n], recurrent)
        in_gate, candidate, forget_gate, out_gate = gates.chunk(4, dim=-1)
        new_memory = torch.sigmoid(in_gate) * torch.tanh(candidate) + torch.sigmoid(forget_gate) * memory[:, :n]
        if options.cell_clip:
            new_memory = new_memory.clamp(-options.cell_clip, options.cell_clip)
        new_hidden = torch.bmm(torch.sigmoid(out_gate) * torch.tanh(new_memory), projection)
        if options.proj_clip:
            new_hidden = new_hidden.clamp(-options.proj_clip, options.proj_clip)
        if n < batch:
            new_hidden = torch.cat([new_hidden, hidden[:, n:]], dim=1)
            new_memory = torch.cat([new_memory, memory[:, n:]], dim=1)
        hidden, memory = new_hidden, new_memory
        step_outputs.append(hidden)
    if not step_outputs:
        return inputs.new_zeros(n_dirs, batch, 0, proj)
    return torch.stack(step_outputs, dim=2)
