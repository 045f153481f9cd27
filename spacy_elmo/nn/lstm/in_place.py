"""The in-place loop: fused directions, preallocated buffers, every step computed in place.

Only valid without autograd (it overwrites tensors that backward would need). Per layer:

- the two directions' recurrent and projection weights are stacked once and cached until a
  parameter changes (:class:`..derived_cache.DerivedTensors`), not re-stacked per batch;
- input-to-gate products are computed a window of steps at a time (one matmul per direction
  and window), so memory stays bounded however long the sentences are;
- each step adds the recurrent product into that step's gate slice, updates the cell state in
  place, and writes the projection straight into the layer's output buffer, which is also
  where the next step reads its hidden state from: no per-step concatenation or copies;
- the stacked weights keep each matrix's own row layout (output units by inputs) and the
  matmuls read them through a transposed view: each output is then a dot product of two
  contiguous rows, which the BLAS sums in vector lanes. Stored the other way round (inputs by
  outputs, contiguous), the 512 or 4096 products of the projection were summed one by one,
  and the loop's float32 error against a float64 reference was 2-3x the reference loop's
  (1.6e-6 vs 6.0e-7 on 60-token sentences of the project's biLM); it is now no larger.
  Embedding speed is the same either way (measured end to end at both model sizes);
- the cell uses ``tanh`` itself. An earlier version computed it as ``2 sigmoid(2x) - 1`` to
  save time, which cost accuracy near zero (the subtraction cancels); with current torch,
  ``tanh_`` is no slower than ``sigmoid_`` on CPUs;
- layers of at most :data:`TRANSPOSED_PROJECTION_CELLS` cells compute the projection
  transposed, ``W (P x C) @ cell outputs^T (C x 4)`` per group of four rows
  (:func:`projects_transposed` has the numbers). MKL sums the usual form's outputs for a few
  rows with more rounding than the one-row products of the reference loop, which made the
  loop's error on a sentence alone 1.1-1.4x the reference's on clipped stacks of 64-512 cells;
  it is now the reference's. Every group being one product of one shape, a row's bits no
  longer depend on how many rows the step has either: at these sizes a sentence gets the same
  bits alone and in any batch (at 4096 cells, in batches of more than 16 rows, they differ by
  up to 1e-7);
- widths that are not whole lines (toy sizes: cells 10, projections 6) are padded with zero
  units (:mod:`..row_layout`): every row then sits at the same alignment, so a row's bits do
  not depend on its place in the batch. Published sizes need no padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import torch

from ..derived_cache import DerivedTensors
from ..row_layout import aligned_width, padded_columns

if TYPE_CHECKING:
    from .stack import LstmStack

# Matmuls always get at least this many rows (finished or padding rows make up the number):
# BLAS libraries switch to other kernels, which round differently, for 1-3 rows, and a sentence
# embedded alone would then differ slightly from the same sentence embedded in a batch.
MIN_ROWS = 4

# Steps with at most this many rows (the tail of the longest sentences, or sentences embedded
# alone) get their input products in groups of MIN_ROWS rows (:func:`row_group_products`):
# MKL sums products of up to 8-12 rows (depending on the shapes) in vector lanes, and the
# reference loop computes each step's input product for that step's rows only.
TAIL_ROWS = 16
# Bytes of input weights per column block in those products: a block stays in the L2 cache.
TAIL_BLOCK_BYTES = 512 * 1024

# Rows (steps x sentences) of input-to-gate products computed per matmul: enough for an
# efficient matmul while bounding the buffer (at the original size, 2 directions x 1024 rows x
# 16384 gates x 4 bytes = 128 MB).
PRE_GATE_ROWS = 1024

# Layers of at most this many cells compute their projection transposed (projects_transposed).
TRANSPOSED_PROJECTION_CELLS = 512

# Cell rows are padded to whole multiples of this many bytes (two AVX-512 vectors): the cell
# state's element-wise updates then have no scalar tail inside any row. Other rows (inputs,
# outputs) only need the alignment of :data:`..row_layout.ROW_BYTES`.
CELL_ROW_BYTES = 128


@dataclass
class FusedWeights:
    """One layer's weights for both directions, laid out for batched matmuls, with the cell
    and projection widths padded as the module docstring says (zero weights and biases)."""

    bias: torch.Tensor  # (dirs, 4C), forget bias included
    recurrent: torch.Tensor  # (dirs, P, 4C): a transposed view of the (dirs, 4C, P) weights
    projection: torch.Tensor  # (dirs, C, P): a transposed view of the (dirs, P, C) weights
    inputs: list[torch.Tensor]  # per direction (4C, D), D the padded width of the layer's input
    cell: int  # C, padded
    projection_dim: int  # P, padded
    transposed: bool  # the projection as W @ cell outputs^T per group of rows (projects_transposed)


def fused_weights(stacks: Sequence["LstmStack"], index: int) -> FusedWeights:
    """Layer ``index``'s stacked weights, rebuilt only after a parameter changes."""
    first = stacks[0]
    caches = first.__dict__.setdefault("_fused_weight_cache", {})
    cache = caches.setdefault((index, tuple(id(stack) for stack in stacks)), DerivedTensors())
    layers = [stack.layers[index] for stack in stacks]
    params = [
        p
        for layer in layers
        for p in (
            layer.bias,
            layer.recurrent_weight,
            layer.projection_weight,
            layer.input_weight,
        )
    ]

    def build() -> FusedWeights:
        dtype = layers[0].bias.dtype
        cell = aligned_width(layers[0].cell_dim, dtype, CELL_ROW_BYTES)
        proj = aligned_width(layers[0].projection_dim, dtype)
        dim = aligned_width(layers[0].input_dim, dtype)
        return FusedWeights(
            bias=torch.stack([_gate_blocks(layer.gate_bias(first.forget_bias), cell) for layer in layers]),
            recurrent=torch.stack([_gate_blocks(layer.recurrent_weight, cell, proj) for layer in layers]).transpose(
                1, 2
            ),
            projection=torch.stack(
                [padded_columns(padded_columns(layer.projection_weight, cell).t(), proj).t() for layer in layers]
            ).transpose(1, 2),
            inputs=[_gate_blocks(layer.input_weight, cell, dim) for layer in layers],
            cell=cell,
            projection_dim=proj,
            transposed=projects_transposed(cell),
        )

    return cache.get(params, build, extra_key=first.forget_bias)


def _gate_blocks(weight: torch.Tensor, cell: int, columns: Optional[int] = None) -> torch.Tensor:
    """``weight`` ``(4 C0, ...)`` (gates i, j, f, o) with each gate's rows padded with zero rows
    to ``cell`` and, for a matrix, its columns with zeros to ``columns``; ``weight`` itself
    when nothing needs padding."""
    rows = weight.shape[0] // 4
    width = weight.shape[1] if weight.dim() == 2 else None
    if rows == cell and (width is None or width == columns):
        return weight
    gates = weight.reshape(4, rows, -1).transpose(1, 2)  # (4, width, rows): pad the rows as columns
    gates = padded_columns(gates, cell).transpose(1, 2)  # (4, cell, width)
    if width is None:
        return gates.reshape(4 * cell).contiguous()
    columns = width if columns is None else columns
    return padded_columns(gates, columns).reshape(4 * cell, columns).contiguous()


def projects_transposed(cell: int) -> bool:
    """Whether layers of ``cell`` cells compute the projection transposed, per group of rows.

    Both forms are the same products summed in different orders. Measured on random stacks
    whose cell and projection clips bite (mean error of the top layer against float64, one
    sentence of 150 steps alone, 3-6 seeds), the per-direction reference loop's one-row products
    against ``outputs @ W^T`` and against ``W @ outputs^T``: at 64 cells 2.86e-7, 3.26e-7,
    2.81e-7; at 256 cells 4.34e-7, 5.05e-7, 4.31e-7; at 512 cells 5.26e-7, 5.76e-7, 5.36e-7;
    at 1024 cells 7.38e-7, 6.49e-7, 7.39e-7; at 4096 (the published size) 1.30e-6, 6.47e-7,
    1.31e-6. With 17 or 40 rows the two forms gave the same bits; the groups of four rows add
    no time measurable on this machine (512 cells, batches of 1, 8 and 32 sentences: 0.92-1.03x).
    """
    return cell <= TRANSPOSED_PROJECTION_CELLS


def run_in_place(stacks: Sequence["LstmStack"], inputs: torch.Tensor, active: Sequence[int]) -> list[torch.Tensor]:
    """Per-layer outputs ``(n_stacks, time, batch, P)`` for time-major inputs, without autograd."""
    first = stacks[0]
    outputs: list[torch.Tensor] = []
    n_dirs, steps, batch, dim = inputs.shape
    rows, width = max(batch, MIN_ROWS), aligned_width(dim, inputs.dtype)
    if projects_transposed(aligned_width(first.layers[0].cell_dim, inputs.dtype, CELL_ROW_BYTES)):
        rows = -(-rows // MIN_ROWS) * MIN_ROWS  # whole groups of rows for the projection
    layer_input = inputs
    if rows != batch or width != dim:
        # Zero-length rows so that every matmul has MIN_ROWS rows (whole groups of them where
        # the projection is transposed), zero columns to whole lines.
        layer_input = inputs.new_zeros(n_dirs, steps, rows, width)
        layer_input[:, :, :batch, :dim] = inputs
    with torch.no_grad():
        for index in range(len(first.layers)):
            layer_output = _run_layer(fused_weights(stacks, index), layer_input, active, first)
            if index > 0 and first.use_skip_connections:
                layer_output += layer_input  # both are zero at padded positions
            outputs.append(layer_output)
            layer_input = layer_output
    proj = first.layers[0].projection_dim
    return [output[:, :, :batch, :proj] for output in outputs]


def _run_layer(
    weights: FusedWeights,
    inputs: torch.Tensor,
    active: Sequence[int],
    options: "LstmStack",
) -> torch.Tensor:
    n_dirs, steps, batch, dim = inputs.shape
    cell, proj = weights.cell, weights.projection_dim
    output = inputs.new_zeros(n_dirs, steps, batch, proj)
    steps_run = sum(1 for n in active if n > 0)
    if steps_run == 0:
        return output
    memory = inputs.new_zeros(n_dirs, batch, cell)
    # Zeros: the transposed projection reads whole groups of rows, some never written.
    cell_output = inputs.new_zeros(n_dirs, batch, cell)
    recurrent_product = inputs.new_empty(n_dirs, batch, 4 * cell) if batch > TAIL_ROWS else None
    projected = inputs.new_empty(n_dirs, batch // MIN_ROWS, proj, MIN_ROWS) if weights.transposed else None

    def rows_at(t: int) -> int:
        return min(batch, max(active[t], MIN_ROWS))

    window = max(1, PRE_GATE_ROWS // batch)
    pre_buffer = inputs.new_empty(n_dirs, min(window, steps_run) * rows_at(0), 4 * cell)
    for start, stop in _windows(steps_run, window, [rows_at(t) for t in range(steps_run)]):
        rows = rows_at(start)
        pre_gates = pre_buffer[:, : (stop - start) * rows].view(n_dirs, stop - start, rows, 4 * cell)
        for d, input_weight in enumerate(weights.inputs):
            source = inputs[d, start:stop, :rows]
            if rows <= TAIL_ROWS:
                row_group_products(source, input_weight, weights.bias[d], pre_gates[d])
            else:
                torch.addmm(
                    weights.bias[d],
                    source.reshape(-1, dim),
                    input_weight.t(),
                    out=pre_gates[d].view(-1, 4 * cell),
                )
        for t in range(start, stop):
            n = rows_at(t)
            gates = pre_gates[:, t - start, :n]
            if t > 0 and n > TAIL_ROWS:
                assert recurrent_product is not None  # allocated when batch > TAIL_ROWS, and n <= batch
                # Summed apart, then added, as the reference loop does: the blocked kernel's
                # accumulate-into form starts its running sum from the (often larger) input
                # product and rounds more (1.2x the error at 32 rows, D = 512).
                torch.bmm(
                    output[:, t - 1, :n],
                    weights.recurrent,
                    out=recurrent_product[:, :n],
                )
                gates.add_(recurrent_product[:, :n])
            elif t > 0:
                gates.baddbmm_(output[:, t - 1, :n], weights.recurrent)
            cell_step_(gates, memory[:, :n], cell_output[:, :n], cell, options.cell_clip)
            if projected is not None:
                n = _project_transposed(
                    cell_output,
                    weights.projection,
                    n,
                    projected,
                    output[:, t],
                    options.proj_clip,
                )
            else:
                hidden = output[:, t, :n]
                torch.bmm(cell_output[:, :n], weights.projection, out=hidden)
                if options.proj_clip:
                    hidden.clamp_(-options.proj_clip, options.proj_clip)
            if n > active[t]:
                output[:, t, active[t] : n] = 0.0  # rows made up to MIN_ROWS or a group: keep padding zero
    return output


def _project_transposed(
    cell_output: torch.Tensor,
    projection: torch.Tensor,
    n: int,
    scratch: torch.Tensor,
    output: torch.Tensor,
    clip: Optional[float],
) -> int:
    """The projection of the first ``n`` rows of ``cell_output`` ``(dirs, batch, C)``, rounded up
    to whole groups of MIN_ROWS rows, as ``W @ group^T`` per group (:func:`projects_transposed`),
    clipped into ``output`` ``(dirs, batch, P)``; returns the rows written.

    Every group is its own product of one shape, whatever the step's row count, so a row's bits
    depend on its own values only. ``scratch`` is ``(dirs, batch / MIN_ROWS, P, MIN_ROWS)``.
    """
    n_dirs, _, cell = cell_output.shape
    groups = -(-n // MIN_ROWS)
    rows = groups * MIN_ROWS
    proj = projection.shape[2]
    for d in range(n_dirs):
        weight = projection[d].t().expand(groups, proj, cell)  # (P, C) rows, shared by every group
        group_rows = cell_output[d, :rows].view(groups, MIN_ROWS, cell).transpose(1, 2)
        torch.bmm(weight, group_rows, out=scratch[d, :groups])
    rows_first = scratch[:, :groups].transpose(2, 3)  # (dirs, groups, MIN_ROWS, P)
    target = output[:, :rows].view(n_dirs, groups, MIN_ROWS, proj)
    if clip:
        torch.clamp(rows_first, -clip, clip, out=target)
    else:
        target.copy_(rows_first)
    return rows


def _windows(steps: int, window: int, rows: Sequence[int]) -> list[tuple[int, int]]:
    """Windows of at most ``window`` steps, never straddling the first step of the tail
    (``rows[t] <= TAIL_ROWS``), whose input products are computed apart."""
    tail = next((t for t, n in enumerate(rows) if n <= TAIL_ROWS), steps)
    bounds = list(range(0, tail, window)) + list(range(tail, steps, window)) + [steps]
    return [(a, min(b, a + window)) for a, b in zip(bounds, bounds[1:]) if a < b]


def row_group_products(source: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, out: torch.Tensor) -> None:
    """``out = bias + source @ weight.T`` for ``source`` ``(steps, rows, D)``, computed in
    products of ``MIN_ROWS`` rows, as exact as the per-step reference loop is in its tail.

    One matmul over many rows runs the BLAS's blocked kernel, which sums each output along D
    in one running sum; with a few rows (up to 8-12 at D = 512, 4 at D = 128 with MKL) it runs dot
    products summed in vector lanes, with about half the rounding error. The reference loop
    computes the input product step by step, so its last steps, where few sentences are left,
    get the small kernel: there one product over the window made the inference loop's error
    1.5-2.3x the reference's on long sentences (issue 23, item 12). Here the window's rows go
    in groups of ``MIN_ROWS`` (zero rows fill the last group) against column blocks of the
    weights small enough to stay in cache, batched into one call per block.
    """
    steps, rows, dim = source.shape
    groups = -(-rows // MIN_ROWS)
    padded = source.new_zeros(steps, groups * MIN_ROWS, dim)
    padded[:, :rows] = source
    grouped = padded.view(steps * groups, MIN_ROWS, dim)
    result = source.new_empty(steps, groups * MIN_ROWS, weight.shape[0])
    flat = result.view(steps * groups, MIN_ROWS, -1)
    block = max(64, TAIL_BLOCK_BYTES // (dim * weight.element_size()))
    for first in range(0, weight.shape[0], block):
        columns = weight[first : first + block].t()
        torch.bmm(
            grouped,
            columns.expand(grouped.shape[0], *columns.shape),
            out=flat[:, :, first : first + block],
        )
    torch.add(result[:, :rows], bias, out=out)


def cell_step_(
    gates: torch.Tensor,
    memory: torch.Tensor,
    cell_output: torch.Tensor,
    cell: int,
    cell_clip: Optional[float],
) -> None:
    """LSTM cell update in place: ``memory`` becomes c_t, ``cell_output`` o_t * tanh(c_t).

    ``gates`` hold the pre-activations (i, j, f, o) and are overwritten.
    """
    in_gate = gates[..., :cell].sigmoid_()
    candidate = gates[..., cell : 2 * cell].tanh_()
    forget_and_out = gates[..., 2 * cell :].sigmoid_()
    forget_gate, out_gate = forget_and_out[..., :cell], forget_and_out[..., cell:]
    memory.mul_(forget_gate).addcmul_(in_gate, candidate)
    if cell_clip:
        memory.clamp_(-cell_clip, cell_clip)
    torch.tanh(memory, out=cell_output).mul_(out_gate)
