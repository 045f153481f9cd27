"""The training loop: both directions per step, each layer one autograd op with a written-out backward.

The forward loop runs without autograd and keeps what the backward needs; the reverse loop
computes each step's gate gradients by hand, so the weight and input gradients are one product
each over every step (recorded by autograd, a layer would be ~15 small ops per step). Positions
are packed: step t's rows (the first ``active[t]``) sit at ``offsets[t]``, padding is not stored."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

import numpy
import torch
from torch.autograd.function import once_differentiable

from .cell import cell_update_
from .chain import chain_layers

if TYPE_CHECKING:
    from .stack import LstmStack


@dataclass(frozen=True)
class StepLayout:
    """Where each time step's rows live in packed tensors (shared by a stack's layers)."""

    active: tuple[int, ...]  # rows at each step that has any
    offsets: tuple[int, ...]  # first packed row of each step
    batch: int
    steps: int  # time steps of the padded inputs
    positions: torch.Tensor  # packed row -> padded row ``t * batch + i``
    previous: torch.Tensor  # packed row -> packed row of the same sentence at t-1 (``total`` at t=0)

    def rows(self, t: int, n: int = -1) -> slice:
        """Packed rows of step t: its first ``n`` rows (default: all of them)."""
        return slice(self.offsets[t], self.offsets[t] + (self.active[t] if n < 0 else n))


def step_layout(active: Sequence[int], steps: int, batch: int, device: torch.device) -> StepLayout:
    """The layout for ``active[t]`` rows at step t (non-increasing; it ends at the first 0)."""
    running = [int(n) for n in active[:steps]]
    running = running[: next((t for t, n in enumerate(running) if n == 0), len(running))]
    offsets = numpy.concatenate([[0], numpy.cumsum(running, dtype=numpy.int64)]).astype(numpy.int64)
    total = int(offsets[-1])
    positions, previous = [numpy.zeros(0, dtype=numpy.int64)], [numpy.zeros(0, dtype=numpy.int64)]
    for t, n in enumerate(running):
        rows = numpy.arange(n, dtype=numpy.int64)
        positions.append(t * batch + rows)
        previous.append(numpy.full(n, total, dtype=numpy.int64) if t == 0 else offsets[t - 1] + rows)
    return StepLayout(
        tuple(running),
        tuple(int(o) for o in offsets[:-1]),
        batch,
        steps,
        torch.from_numpy(numpy.concatenate(positions)).to(device),
        torch.from_numpy(numpy.concatenate(previous)).to(device),
    )


def _pack(padded: torch.Tensor, layout: StepLayout) -> torch.Tensor:
    """``(dirs, time, batch, X)`` -> packed ``(dirs, total, X)``."""
    dirs, steps, batch, width = padded.shape
    return padded.reshape(dirs, steps * batch, width).index_select(1, layout.positions)


def _unpack(packed: torch.Tensor, layout: StepLayout) -> torch.Tensor:
    """Packed ``(dirs, total, X)`` -> ``(dirs, time, batch, X)``, zero at padding."""
    dirs, _, width = packed.shape
    result = packed.new_zeros(dirs, layout.steps * layout.batch, width)
    return result.index_copy_(1, layout.positions, packed).view(dirs, layout.steps, layout.batch, width)


def _previous_step(values: torch.Tensor, layout: StepLayout) -> torch.Tensor:
    """Each packed row's value at the step before, zero at t=0."""
    padded = torch.cat([values, values.new_zeros(values.shape[0], 1, values.shape[2])], dim=1)
    return padded.index_select(1, layout.previous)


def _bmm(a: torch.Tensor, b: torch.Tensor, dtype: Optional[torch.dtype]) -> torch.Tensor:
    """``a @ b`` batched, computed in ``dtype`` when given, returned in ``a``'s dtype."""
    if dtype is None:
        return torch.bmm(a, b)
    return torch.bmm(a.to(dtype), b.to(dtype)).to(a.dtype)


def run_training(
    stacks: Sequence["LstmStack"],
    inputs: torch.Tensor,
    active: Sequence[int],
    input_masks: Sequence[torch.Tensor] = (),
    compute_dtype: Optional[torch.dtype] = None,
) -> list[torch.Tensor]:
    """Per-layer outputs ``(n_stacks, time, batch, P)`` for time-major inputs, differentiable.

    ``input_masks`` (dropout: one ``(n_stacks, time, batch, P)`` tensor per layer above the
    first) multiply those layers' inputs, which the skip connections then add.
    """
    first = stacks[0]
    layout = step_layout(active, inputs.shape[1], inputs.shape[2], inputs.device)
    clips = (first.cell_clip or None, first.proj_clip or None)

    def run_layer(index: int, layer_input: torch.Tensor) -> torch.Tensor:
        layers = [stack.layers[index] for stack in stacks]
        with torch.autocast(inputs.device.type, enabled=False):
            return _LayerFunction.apply(
                layer_input,
                torch.stack([layer.input_weight for layer in layers]),
                torch.stack([layer.recurrent_weight for layer in layers]),
                torch.stack([layer.projection_weight for layer in layers]),
                torch.stack([layer.gate_bias(first.forget_bias) for layer in layers]),
                layout,
                clips,
                compute_dtype,
            )

    return chain_layers(len(first.layers), inputs, run_layer, first.use_skip_connections, input_masks)


@dataclass
class _Saved:
    """What the forward pass keeps for the backward pass, all packed ``(dirs, total, X)``;
    the ``*_passes`` masks (None without a clip) are 1 where the clip let the gradient through."""

    gates: torch.Tensor  # activations (sigmoid, tanh, sigmoid, sigmoid)
    cells: torch.Tensor
    tanh_cells: torch.Tensor
    cell_outputs: torch.Tensor
    hidden: torch.Tensor
    cell_passes: Optional[torch.Tensor]
    hidden_passes: Optional[torch.Tensor]


def _forward(inputs, input_weight, recurrent_weight, projection_weight, bias, layout, clips, dtype) -> _Saved:
    cell_clip, proj_clip = clips
    dirs = inputs.shape[0]
    cell, proj = projection_weight.shape[2], projection_weight.shape[1]
    gates = _bmm(_pack(inputs, layout), input_weight.transpose(1, 2), dtype).add_(bias.unsqueeze(1))
    total = gates.shape[1]
    new = lambda size: gates.new_empty(dirs, total, size)  # noqa: E731
    saved = _Saved(
        gates,
        new(cell),
        new(cell),
        new(cell),
        new(proj),
        None if cell_clip is None else new(cell),
        None if proj_clip is None else new(proj),
    )
    recurrent, projection = recurrent_weight.transpose(1, 2), projection_weight.transpose(1, 2)
    if dtype is not None:
        recurrent, projection = recurrent.to(dtype), projection.to(dtype)
    for t, n in enumerate(layout.active):
        now = layout.rows(t)
        step = gates[:, now]
        if t and dtype is None:
            step.baddbmm_(saved.hidden[:, layout.rows(t - 1, n)], recurrent)
        elif t:
            step.add_(_bmm(saved.hidden[:, layout.rows(t - 1, n)], recurrent, dtype))
        cell_update_(
            step,
            saved.cells[:, layout.rows(t - 1, n)] if t else None,
            saved.cells[:, now],
            saved.cell_outputs[:, now],
            cell_clip,
            tanh_cells=saved.tanh_cells[:, now],
            clip_passes=None if saved.cell_passes is None else saved.cell_passes[:, now],
        )
        hidden = saved.hidden[:, now]
        if dtype is None:
            torch.bmm(saved.cell_outputs[:, now], projection, out=hidden)
        else:
            hidden.copy_(_bmm(saved.cell_outputs[:, now], projection, dtype))
        if proj_clip is not None and saved.hidden_passes is not None:
            torch.abs(hidden, out=saved.hidden_passes[:, now]).le_(proj_clip)
            hidden.clamp_(-proj_clip, proj_clip)
    return saved


def _backward(saved: _Saved, grad_output, recurrent_weight, projection_weight, layout, dtype):
    """The reverse loop: gradients of the gate pre-activations ``(dirs, total, 4C)`` and of the
    projected outputs before their clip ``(dirs, total, P)``, for every step."""
    gates = saved.gates
    one = gates.new_ones(())
    grad_hidden_all = _pack(grad_output, layout)  # each step adds what the next one sends back
    grad_gates = torch.empty_like(gates)
    grad_hidden_next: Optional[torch.Tensor] = None
    grad_cell_next: Optional[torch.Tensor] = None
    if dtype is not None:
        recurrent_weight, projection_weight = recurrent_weight.to(dtype), projection_weight.to(dtype)
    for t in reversed(range(len(layout.active))):
        now = layout.rows(t)
        grad_hidden = grad_hidden_all[:, now]
        if grad_hidden_next is not None:
            grad_hidden[:, : grad_hidden_next.shape[1]].add_(grad_hidden_next)
        if saved.hidden_passes is not None:
            grad_hidden.mul_(saved.hidden_passes[:, now])
        grad_cell_output = _bmm(grad_hidden, projection_weight, dtype)
        in_gate, candidate, forget, out_gate = gates[:, now].chunk(4, dim=-1)
        tanh_cells = saved.tanh_cells[:, now]
        # d(cell) = d(cell output) * o * (1 - tanh(c)^2) + what the next step's cell sends back
        grad_cell = torch.addcmul(one, tanh_cells, tanh_cells, value=-1).mul_(out_gate).mul_(grad_cell_output)
        if grad_cell_next is not None:
            grad_cell[:, : grad_cell_next.shape[1]].add_(grad_cell_next)
        if saved.cell_passes is not None:
            grad_cell.mul_(saved.cell_passes[:, now])
        # sigmoid' = s (1 - s), tanh' = 1 - g^2
        grads = grad_gates[:, now].chunk(4, dim=-1)
        torch.addcmul(in_gate, in_gate, in_gate, value=-1, out=grads[0]).mul_(candidate).mul_(grad_cell)
        torch.addcmul(one, candidate, candidate, value=-1, out=grads[1]).mul_(in_gate).mul_(grad_cell)
        if t:
            previous_cells = saved.cells[:, layout.rows(t - 1, layout.active[t])]
            torch.addcmul(forget, forget, forget, value=-1, out=grads[2]).mul_(previous_cells).mul_(grad_cell)
        else:
            grads[2].zero_()  # the cell state before the first step is zero
        torch.addcmul(out_gate, out_gate, out_gate, value=-1, out=grads[3]).mul_(tanh_cells).mul_(grad_cell_output)
        if t:
            grad_cell_next = grad_cell.mul_(forget)
            grad_hidden_next = _bmm(grad_gates[:, now], recurrent_weight, dtype)
    return grad_gates, grad_hidden_all


class _LayerFunction(torch.autograd.Function):
    """One layer of both directions: the loop above forward, its reverse loop backward."""

    @staticmethod
    def forward(ctx, inputs, input_weight, recurrent_weight, projection_weight, bias, layout, clips, dtype):  # type: ignore[override]
        saved = _forward(inputs, input_weight, recurrent_weight, projection_weight, bias, layout, clips, dtype)
        ctx.save_for_backward(
            inputs,
            input_weight,
            recurrent_weight,
            projection_weight,
            saved.gates,
            saved.cells,
            saved.tanh_cells,
            saved.cell_outputs,
            saved.hidden,
            saved.cell_passes,
            saved.hidden_passes,
        )
        ctx.layout, ctx.dtype = layout, dtype
        return _unpack(saved.hidden, layout)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):  # type: ignore[override]
        inputs, input_weight, recurrent_weight, projection_weight, *tensors = ctx.saved_tensors
        saved, layout, dtype = _Saved(*tensors), ctx.layout, ctx.dtype
        grad_gates, grad_hidden = _backward(saved, grad_output, recurrent_weight, projection_weight, layout, dtype)
        needs = ctx.needs_input_grad
        grad_input_weight = grad_recurrent_weight = None
        if needs[1] or needs[2]:
            # Both weights' gradients in one product over their inputs side by side.
            width = inputs.shape[-1]
            read = torch.cat([_pack(inputs, layout), _previous_step(saved.hidden, layout)], dim=2)
            weight_grads = _bmm(read.transpose(1, 2), grad_gates, dtype).transpose(1, 2)
            grad_input_weight, grad_recurrent_weight = weight_grads[..., :width], weight_grads[..., width:]
        return (
            _unpack(_bmm(grad_gates, input_weight, dtype), layout) if needs[0] else None,
            grad_input_weight if needs[1] else None,
            grad_recurrent_weight if needs[2] else None,
            _bmm(grad_hidden.transpose(1, 2), saved.cell_outputs, dtype) if needs[3] else None,
            grad_gates.sum(dim=1) if needs[4] else None,
            None,
            None,
            None,
        )
