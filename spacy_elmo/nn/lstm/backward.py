"""One fused LSTM layer (both directions) with a hand-written backward pass.

Under autograd the fused loop records ~15 small ops per time step, and the backward pass replays
them one at a time, with one small recurrent-weight matmul per step. Here the forward loop runs
without autograd and keeps only what the backward pass needs (gate activations, cell states,
their tanh, cell outputs, projected outputs, and where each clip let the gradient through). The
backward loop computes each step's gate gradients by hand and stores them all, so that the
input-weight, recurrent-weight, projection and input gradients are each one matmul over every
step once the loop is done. Elementwise work stays inside the loops, on one step's rows: whole
``(dirs, total, C)`` temporaries cost more in fresh memory than they save in op calls.

Everything per position is packed (:mod:`.packing`): padding is neither stored nor computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch.autograd.function import once_differentiable

from .packing import StepLayout, pack, previous_step, unpack


def run_layer_by_hand(
    inputs: torch.Tensor,
    input_weight: torch.Tensor,
    recurrent_weight: torch.Tensor,
    projection_weight: torch.Tensor,
    bias: torch.Tensor,
    layout: StepLayout,
    cell_clip: Optional[float],
    proj_clip: Optional[float],
) -> torch.Tensor:
    """Padded outputs ``(dirs, time, batch, P)`` of one layer for time-major inputs.

    Weights are stacked per direction: ``(dirs, 4C, D)``, ``(dirs, 4C, P)``, ``(dirs, P, C)``
    and the bias (forget bias included) ``(dirs, 4C)``. A falsy clip means no clipping.
    """
    return _FusedLayer.apply(
        inputs, input_weight, recurrent_weight, projection_weight, bias, layout, cell_clip or None, proj_clip or None
    )


@dataclass
class _Saved:
    """What the forward pass keeps for the backward pass, all packed ``(dirs, total, X)``.

    ``gates`` holds the activations (sigmoid, tanh, sigmoid, sigmoid); ``cells`` and ``hidden``
    are clipped; the ``*_passes`` masks (None without a clip) are 1 where the clip let the
    gradient through, in the values' dtype (a bool mask multiplies several times slower).
    """

    gates: torch.Tensor
    cells: torch.Tensor
    tanh_cells: torch.Tensor
    cell_outputs: torch.Tensor
    hidden: torch.Tensor
    cell_passes: Optional[torch.Tensor]
    hidden_passes: Optional[torch.Tensor]

    @classmethod
    def allocate(
        cls, gates: torch.Tensor, proj: int, cell_clip: Optional[float], proj_clip: Optional[float]
    ) -> "_Saved":
        dirs, total, width = gates.shape

        def new(size: int) -> torch.Tensor:
            return gates.new_empty(dirs, total, size)

        cell = width // 4
        cell_passes = None if cell_clip is None else new(cell)
        hidden_passes = None if proj_clip is None else new(proj)
        return cls(gates, new(cell), new(cell), new(cell), new(proj), cell_passes, hidden_passes)

    def tensors(self) -> tuple[Optional[torch.Tensor], ...]:
        return (
            self.gates,
            self.cells,
            self.tanh_cells,
            self.cell_outputs,
            self.hidden,
            self.cell_passes,
            self.hidden_passes,
        )


def _clip_into(raw: torch.Tensor, bound: float, clipped: torch.Tensor, passes: torch.Tensor) -> None:
    """Clip ``raw`` into ``clipped``; ``passes`` gets 1 where torch.clamp's backward passes the
    gradient (``-bound <= raw <= bound``: exactly where clipping changed nothing), else 0."""
    torch.clamp(raw, -bound, bound, out=clipped)
    torch.eq(raw, clipped, out=passes)


def _forward(
    inputs: torch.Tensor,
    weights: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    layout: StepLayout,
    clips: tuple[Optional[float], Optional[float]],
) -> _Saved:
    """The fused loop, written into packed buffers; ``hidden`` holds the layer's outputs.
    ``weights`` and ``clips`` are :func:`run_layer_by_hand`'s, in its order."""
    input_weight, recurrent_weight, projection_weight, bias = weights
    cell_clip, proj_clip = clips
    # Input-to-gate products (bias included) of every position at once: (dirs, total, 4C).
    # The loop turns them into the gate activations, in place.
    gates = torch.baddbmm(bias.unsqueeze(1), pack(inputs, layout), input_weight.transpose(1, 2))
    cell = projection_weight.shape[2]
    saved = _Saved.allocate(gates, projection_weight.shape[1], cell_clip, proj_clip)
    recurrent, projection = recurrent_weight.transpose(1, 2), projection_weight.transpose(1, 2)
    for t, n in enumerate(layout.active):
        now = layout.rows(t)
        step = gates[:, now]
        in_gate, candidate, forget, out_gate = step.chunk(4, dim=-1)
        if t:
            step.baddbmm_(saved.hidden[:, layout.rows(t - 1, n)], recurrent)
        in_gate.sigmoid_()
        candidate.tanh_()
        step[..., 2 * cell :].sigmoid_()  # forget and output gates
        cells = saved.cells[:, now]
        raw = torch.mul(in_gate, candidate, out=cells if cell_clip is None else None)
        if t:
            raw.addcmul_(forget, saved.cells[:, layout.rows(t - 1, n)])
        if cell_clip is not None and saved.cell_passes is not None:
            _clip_into(raw, cell_clip, cells, saved.cell_passes[:, now])
        tanh_cells = torch.tanh(cells, out=saved.tanh_cells[:, now])
        cell_output = torch.mul(tanh_cells, out_gate, out=saved.cell_outputs[:, now])
        if proj_clip is None or saved.hidden_passes is None:
            torch.bmm(cell_output, projection, out=saved.hidden[:, now])
        else:
            _clip_into(torch.bmm(cell_output, projection), proj_clip, saved.hidden[:, now], saved.hidden_passes[:, now])
    return saved


def _backward(
    saved: _Saved,
    grad_output: torch.Tensor,
    recurrent_weight: torch.Tensor,
    projection_weight: torch.Tensor,
    layout: StepLayout,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reverse loop: gradients of the gate pre-activations ``(dirs, total, 4C)`` and of the
    projected outputs before their clip ``(dirs, total, P)``, for every step."""
    gates = saved.gates
    one = gates.new_ones(())
    # The outputs' own gradients; each step adds what the next step sends back.
    grad_hidden_all = pack(grad_output, layout)
    grad_gates = torch.empty_like(gates)
    grad_hidden_next: Optional[torch.Tensor] = None
    grad_cell_next: Optional[torch.Tensor] = None
    for t in reversed(range(len(layout.active))):
        now = layout.rows(t)
        grad_hidden = grad_hidden_all[:, now]
        if grad_hidden_next is not None:
            grad_hidden[:, : grad_hidden_next.shape[1]].add_(grad_hidden_next)
        if saved.hidden_passes is not None:
            grad_hidden.mul_(saved.hidden_passes[:, now])
        grad_cell_output = torch.bmm(grad_hidden, projection_weight)
        in_gate, candidate, forget, out_gate = gates[:, now].chunk(4, dim=-1)
        tanh_cells = saved.tanh_cells[:, now]
        # d(cell) = d(cell output) * o * (1 - tanh(c)^2) + what the next step's cell sends back.
        grad_cell = torch.addcmul(one, tanh_cells, tanh_cells, value=-1).mul_(out_gate).mul_(grad_cell_output)
        if grad_cell_next is not None:
            grad_cell[:, : grad_cell_next.shape[1]].add_(grad_cell_next)
        if saved.cell_passes is not None:
            grad_cell.mul_(saved.cell_passes[:, now])
        # Gate pre-activations: sigmoid' = s (1 - s), tanh' = 1 - g^2.
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
            grad_hidden_next = torch.bmm(grad_gates[:, now], recurrent_weight)
    return grad_gates, grad_hidden_all


class _FusedLayer(torch.autograd.Function):
    """Forward: the fused loop without autograd. Backward: the reverse loop, written out."""

    @staticmethod
    def forward(  # type: ignore[override]
        ctx, inputs, input_weight, recurrent_weight, projection_weight, bias, layout, cell_clip, proj_clip
    ):
        weights = (input_weight, recurrent_weight, projection_weight, bias)
        saved = _forward(inputs, weights, layout, (cell_clip, proj_clip))
        ctx.save_for_backward(inputs, input_weight, recurrent_weight, projection_weight, *saved.tensors())
        ctx.layout = layout
        return unpack(saved.hidden, layout)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):  # type: ignore[override]
        inputs, input_weight, recurrent_weight, projection_weight, *tensors = ctx.saved_tensors
        saved, layout = _Saved(*tensors), ctx.layout
        grad_gates, grad_hidden = _backward(saved, grad_output, recurrent_weight, projection_weight, layout)
        # Weight and input gradients: one matmul each over every step; the input and recurrent
        # weights' in one, over their inputs side by side (a wider product runs ~1.3x faster).
        needs = ctx.needs_input_grad
        grad_input_weight = grad_recurrent_weight = None
        if needs[1] or needs[2]:
            width = inputs.shape[-1]
            read = torch.cat([pack(inputs, layout), previous_step(saved.hidden, layout)], dim=2)  # (dirs, total, D + P)
            weight_grads = torch.bmm(read.transpose(1, 2), grad_gates).transpose(1, 2)  # (dirs, 4C, D + P)
            grad_input_weight, grad_recurrent_weight = weight_grads[..., :width], weight_grads[..., width:]
        return (
            unpack(torch.bmm(grad_gates, input_weight), layout) if needs[0] else None,
            grad_input_weight if needs[1] else None,
            grad_recurrent_weight if needs[2] else None,
            torch.bmm(grad_hidden.transpose(1, 2), saved.cell_outputs) if needs[3] else None,
            grad_gates.sum(dim=1) if needs[4] else None,
            None,
            None,
            None,
        )
