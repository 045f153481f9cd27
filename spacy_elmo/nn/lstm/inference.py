"""The inference loop: both directions per step, no autograd, every step computed in place.

A window of steps' input products is one product; each step adds its recurrent product into its
gate slice, updates the cell state in place and writes the projection where the next step reads
it. The products run in float32 (batched over the directions) or, per direction, in a reduced
precision (:class:`..reduced_products.ReducedWeight`); converted weights are kept per parameter
version."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

import torch

from ..derived_cache import DerivedTensors
from ..reduced_products import ReducedWeight
from .cell import cell_update_

if TYPE_CHECKING:
    from .stack import LstmStack

# Rows (steps x sentences) of input-to-gate products per window: enough for an efficient float32
# product while bounding the buffer. Reduced-precision products run in row blocks anyway, so a
# small window loses nothing there and its buffer stays warm in cache.
WINDOW_ROWS = {"float32": 1024}
REDUCED_WINDOW_ROWS = 128


class LayerProducts:
    """One layer's products for both directions: float32 batched over the directions, or one
    reduced-precision weight per direction."""

    def __init__(self, stacks: Sequence["LstmStack"], index: int, precision: str) -> None:
        layers = [stack.layers[index] for stack in stacks]
        self.cell = layers[0].cell_dim
        self.reduced = precision != "float32"
        bias = torch.stack([layer.gate_bias(stacks[0].forget_bias) for layer in layers])
        self.bias = bias.float() if self.reduced else bias
        if self.reduced:
            self.input_weights = [ReducedWeight(layer.input_weight, precision) for layer in layers]
            self.recurrent_weights = [ReducedWeight(layer.recurrent_weight, precision) for layer in layers]
            self.projection_weights = [ReducedWeight(layer.projection_weight, precision) for layer in layers]
        else:  # (dirs, in, out) transposed views of the stacked weights
            self.input_t = torch.stack([layer.input_weight for layer in layers]).transpose(1, 2)
            self.recurrent_t = torch.stack([layer.recurrent_weight for layer in layers]).transpose(1, 2)
            self.projection_t = torch.stack([layer.projection_weight for layer in layers]).transpose(1, 2)

    def input_into(self, x: torch.Tensor, out: torch.Tensor) -> None:
        """``out = x @ W_input^T + bias`` for ``x`` ``(dirs, rows, D)``."""
        if not self.reduced:
            torch.baddbmm(self.bias[:, None, :], x, self.input_t, out=out)
            return
        for d, weight in enumerate(self.input_weights):
            weight.product_into(x[d], out[d], self.bias[d])

    def add_recurrent(self, hidden: torch.Tensor, gates: torch.Tensor) -> None:
        """``gates += hidden @ W_recurrent^T``."""
        if not self.reduced:
            gates.baddbmm_(hidden, self.recurrent_t)
            return
        for d, weight in enumerate(self.recurrent_weights):
            weight.product_into(hidden[d], gates[d], accumulate=True)

    def project_into(self, cell_outputs: torch.Tensor, out: torch.Tensor) -> None:
        """``out = cell_outputs @ W_projection^T``."""
        if not self.reduced:
            torch.bmm(cell_outputs, self.projection_t, out=out)
            return
        for d, weight in enumerate(self.projection_weights):
            weight.product_into(cell_outputs[d], out[d])


def layer_products(stacks: Sequence["LstmStack"], index: int, precision: str) -> LayerProducts:
    """Layer ``index``'s products, rebuilt only after a parameter changes."""
    first = stacks[0]
    caches = first.__dict__.setdefault("_inference_weight_cache", {})
    cache = caches.setdefault((index, tuple(id(stack) for stack in stacks), precision), DerivedTensors())
    params = [p for stack in stacks for p in stack.layers[index].parameters()]
    return cache.get(params, lambda: LayerProducts(stacks, index, precision), extra_key=first.forget_bias)


def run_inference(
    stacks: Sequence["LstmStack"], inputs: torch.Tensor, active: Sequence[int], precision: str = "float32"
) -> list[torch.Tensor]:
    """Per-layer outputs ``(n_stacks, time, batch, P)`` for time-major inputs, without autograd,
    in the inputs' dtype (reduced precisions compute in float32 around their products)."""
    first = stacks[0]
    dtype = inputs.dtype
    layer_input = inputs if precision == "float32" else inputs.float()
    outputs: list[torch.Tensor] = []
    with torch.no_grad():
        for index in range(len(first.layers)):
            products = layer_products(stacks, index, precision)
            layer_output = _run_layer(products, layer_input, active, first, precision)
            if index > 0 and first.use_skip_connections:
                layer_output += layer_input  # both are zero at padded positions
            outputs.append(layer_output)
            layer_input = layer_output
    return [output.to(dtype) for output in outputs]


def _run_layer(
    products: LayerProducts, inputs: torch.Tensor, active: Sequence[int], options: "LstmStack", precision: str
) -> torch.Tensor:
    n_dirs, steps, batch, dim = inputs.shape
    proj = options.layers[0].projection_dim
    cell = products.cell
    output = inputs.new_zeros(n_dirs, steps, batch, proj)
    steps_run = sum(1 for n in active[:steps] if n > 0)
    if steps_run == 0:
        return output
    memory = inputs.new_zeros(n_dirs, batch, cell)
    cell_outputs = inputs.new_empty(n_dirs, batch, cell)
    window = max(1, WINDOW_ROWS.get(precision, REDUCED_WINDOW_ROWS) // batch)
    pre_buffer = inputs.new_empty(n_dirs, min(window, steps_run) * batch, 4 * cell)
    for start in range(0, steps_run, window):
        stop = min(steps_run, start + window)
        rows = active[start]
        pre_gates = pre_buffer[:, : (stop - start) * rows].view(n_dirs, stop - start, rows, 4 * cell)
        source = inputs[:, start:stop, :rows].reshape(n_dirs, -1, dim)
        products.input_into(source, pre_gates.view(n_dirs, -1, 4 * cell))
        for t in range(start, stop):
            n = active[t]
            gates = pre_gates[:, t - start, :n]
            if t > 0:
                products.add_recurrent(output[:, t - 1, :n], gates)
            state = memory[:, :n]
            cell_update_(gates, state if t > 0 else None, state, cell_outputs[:, :n], options.cell_clip)
            hidden = output[:, t, :n]
            products.project_into(cell_outputs[:, :n], hidden)
            if options.proj_clip:
                hidden.clamp_(-options.proj_clip, options.proj_clip)
    return output
