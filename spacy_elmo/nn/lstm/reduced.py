"""The inference loop in reduced precision: the ``precision`` setting's ``"bfloat16"`` and ``"int8"``.

The same LSTM as the other loops, without autograd, with its three products per layer and
direction (inputs to gates, hidden state to gates, cell outputs to the projection) computed by
:class:`..reduced_products.ReducedWeight` in bfloat16 or int8; the bias, the cell state, the gate
non-linearities (:func:`reduced_cell_step_`), the clipping, the skip connections and the
outputs stay float32. The float32 loops are not touched: :mod:`.dispatch` sends a call here only
for a reduced precision.

The converted weights are built once per layer, precision and parameter version, and kept with
the stack like the in-place loop's stacked weights (:class:`..derived_cache.DerivedTensors`).
As in the in-place loop, the input products run a window of steps at a time, for the rows still
active at the window's first step; each step then adds the recurrent product of its active rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import torch

from ..derived_cache import DerivedTensors
from ..reduced_products import ReducedWeight

if TYPE_CHECKING:
    from .stack import LstmStack

# Rows (steps x sentences) of input-to-gate products per window: the products run in row blocks
# anyway (:data:`..reduced_products.BLOCK_ROWS`), so a small window loses nothing, and its buffer
# (shared by the layers) stays small enough to be reused rather than faulted in per layer.
PRE_GATE_ROWS = 128


@dataclass
class ReducedLayer:
    """One layer's weights for each direction in a reduced precision, and its float32 biases."""

    bias: torch.Tensor  # (dirs, 4C), forget bias included, float32
    inputs: list[ReducedWeight]  # per direction, (4C, D)
    recurrent: list[ReducedWeight]  # per direction, (4C, P)
    projection: list[ReducedWeight]  # per direction, (P, C)
    cell: int
    projection_dim: int


def reduced_layer(stacks: Sequence["LstmStack"], index: int, precision: str) -> ReducedLayer:
    """Layer ``index``'s converted weights, rebuilt only after a parameter changes."""
    first = stacks[0]
    caches = first.__dict__.setdefault("_reduced_weight_cache", {})
    cache = caches.setdefault((index, tuple(id(stack) for stack in stacks), precision), DerivedTensors())
    layers = [stack.layers[index] for stack in stacks]
    params = [p for layer in layers for p in layer.parameters()]

    def build() -> ReducedLayer:
        return ReducedLayer(
            bias=torch.stack([layer.gate_bias(first.forget_bias) for layer in layers]).to(torch.float32),
            inputs=[ReducedWeight(layer.input_weight, precision) for layer in layers],
            recurrent=[ReducedWeight(layer.recurrent_weight, precision) for layer in layers],
            projection=[ReducedWeight(layer.projection_weight, precision) for layer in layers],
            cell=layers[0].cell_dim,
            projection_dim=layers[0].projection_dim,
        )

    return cache.get(params, build, extra_key=first.forget_bias)


def run_reduced(
    stacks: Sequence["LstmStack"], inputs: torch.Tensor, active: Sequence[int], precision: str
) -> list[torch.Tensor]:
    """Per-layer outputs ``(n_stacks, time, batch, P)`` in the inputs' dtype for time-major
    inputs, the products in ``precision`` ("bfloat16" or "int8"), without autograd."""
    first = stacks[0]
    outputs: list[torch.Tensor] = []
    layer_input = inputs.to(torch.float32)
    n_dirs, _, batch, _ = inputs.shape
    window = max(1, PRE_GATE_ROWS // max(batch, 1))
    scratch = layer_input.new_empty(n_dirs, window * batch, 4 * first.layers[0].cell_dim)
    with torch.no_grad():
        for index in range(len(first.layers)):
            weights = reduced_layer(stacks, index, precision)
            layer_output = _run_layer(weights, layer_input, active, first, window, scratch)
            if index > 0 and first.use_skip_connections:
                layer_output += layer_input  # both are zero at padded positions
            outputs.append(layer_output)
            layer_input = layer_output
    return [output.to(inputs.dtype) for output in outputs]


def _run_layer(
    weights: ReducedLayer,
    inputs: torch.Tensor,
    active: Sequence[int],
    options: "LstmStack",
    window: int,
    pre_buffer: torch.Tensor,
) -> torch.Tensor:
    n_dirs, steps, batch, dim = inputs.shape
    cell, proj = weights.cell, weights.projection_dim
    output = inputs.new_zeros(n_dirs, steps, batch, proj)
    steps_run = sum(1 for n in active if n > 0)
    if steps_run == 0:
        return output
    memory = inputs.new_zeros(n_dirs, batch, cell)
    cell_output = inputs.new_zeros(n_dirs, batch, cell)
    for start in range(0, steps_run, window):
        stop = min(steps_run, start + window)
        rows = active[start]
        pre_gates = pre_buffer[:, : (stop - start) * rows].view(n_dirs, stop - start, rows, 4 * cell)
        for d in range(n_dirs):
            flat = pre_gates[d].view(-1, 4 * cell)
            weights.inputs[d].product_into(inputs[d, start:stop, :rows].reshape(-1, dim), flat, weights.bias[d])
        for t in range(start, stop):
            n = active[t]
            gates = pre_gates[:, t - start, :n]
            if t > 0:
                for d in range(n_dirs):
                    weights.recurrent[d].product_into(output[d, t - 1, :n], gates[d], accumulate=True)
            reduced_cell_step_(gates, memory[:, :n], cell_output[:, :n], cell, options.cell_clip)
            for d in range(n_dirs):
                weights.projection[d].product_into(cell_output[d, :n], output[d, t, :n])
            if options.proj_clip:
                output[:, t, :n].clamp_(-options.proj_clip, options.proj_clip)
    return output


def tanh_via_sigmoid_(x: torch.Tensor) -> torch.Tensor:
    """``tanh(x)`` in place as ``2 sigmoid(2x) - 1``: ATen's float32 tanh is ~6x slower per value
    than its sigmoid on the CPU measured (AMD EPYC, AVX-512), ~4x slower than these four ops;
    the two differ by at most 2.4e-7
    (measured over [-30, 30]; the tests hold it), far below the reduced products' own error.
    Returns ``x``."""
    return x.mul_(2.0).sigmoid_().mul_(2.0).sub_(1.0)


def reduced_cell_step_(
    gates: torch.Tensor, memory: torch.Tensor, cell_output: torch.Tensor, cell: int, cell_clip: Optional[float]
) -> None:
    """:func:`.in_place.cell_step_` (whose float32 results must not move) with its two tanh
    computed by :func:`tanh_via_sigmoid_`: ``memory`` becomes c_t, ``cell_output`` o_t *
    tanh(c_t); ``gates`` hold the pre-activations (i, j, f, o) and are overwritten."""
    in_gate = gates[..., :cell].sigmoid_()
    candidate = tanh_via_sigmoid_(gates[..., cell : 2 * cell])
    forget_and_out = gates[..., 2 * cell :].sigmoid_()
    forget_gate, out_gate = forget_and_out[..., :cell], forget_and_out[..., cell:]
    memory.mul_(forget_gate).addcmul_(in_gate, candidate)
    if cell_clip:
        memory.clamp_(-cell_clip, cell_clip)
    # tanh_via_sigmoid_ of memory, its first step writing into cell_output
    torch.mul(memory, 2.0, out=cell_output).sigmoid_().mul_(2.0).sub_(1.0).mul_(out_gate)
