"""The LSTM cell's arithmetic, once for the inference and the training loop. Gates are in
TensorFlow's order (input, candidate, forget, output). ``tanh`` is ``2 sigmoid(2x) - 1``: ATen's
float32 tanh is several times slower than its sigmoid on some x86 CPUs, and the identity stays
within a few ulps of 1 (far inside the float64 bound the loops are held to)."""

from __future__ import annotations

from typing import Optional

import torch


def tanh_into(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """``out = tanh(x)`` (``out`` may be ``x``); returns ``out``."""
    return torch.mul(x, 2.0, out=out).sigmoid_().mul_(2.0).sub_(1.0)


def cell_update_(
    gates: torch.Tensor,
    previous_cells: Optional[torch.Tensor],
    cells: torch.Tensor,
    cell_outputs: torch.Tensor,
    cell_clip: Optional[float],
    tanh_cells: Optional[torch.Tensor] = None,
    clip_passes: Optional[torch.Tensor] = None,
) -> None:
    """One step for ``(..., rows, 4C)`` gate pre-activations, which become the activations:
    ``cells`` gets ``c_t = f * c_{t-1} + i * j`` (clipped) from ``previous_cells`` (None at the first
    step; may be ``cells``), ``cell_outputs`` gets ``o * tanh(c_t)``; for the backward pass,
    ``tanh_cells`` keeps ``tanh(c_t)`` and ``clip_passes`` marks where the clip passed the gradient."""
    cell = gates.shape[-1] // 4
    in_gate = gates[..., :cell].sigmoid_()
    candidate = tanh_into(gates[..., cell : 2 * cell], gates[..., cell : 2 * cell])
    forget_and_out = gates[..., 2 * cell :].sigmoid_()
    forget_gate, out_gate = forget_and_out[..., :cell], forget_and_out[..., cell:]
    if previous_cells is cells:
        cells.mul_(forget_gate).addcmul_(in_gate, candidate)
    else:
        torch.mul(in_gate, candidate, out=cells)
        if previous_cells is not None:
            cells.addcmul_(forget_gate, previous_cells)
    if cell_clip:
        if clip_passes is not None:
            torch.abs(cells, out=clip_passes).le_(cell_clip)
        cells.clamp_(-cell_clip, cell_clip)
    tanh = tanh_into(cells, cell_outputs if tanh_cells is None else tanh_cells)
    torch.mul(tanh, out_gate, out=cell_outputs)
