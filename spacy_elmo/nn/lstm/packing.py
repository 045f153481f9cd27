"""Packed time-major layout for length-sorted rows: only the positions that are computed.

Rows are sorted longest first, so the rows still running at step t are ``:active[t]``. A packed
tensor ``(dirs, total, X)`` holds step t's rows at ``offsets[t] : offsets[t] + active[t]``:
no padding is stored, each step's rows are one contiguous block per direction, and a row's
previous step lies at the same index in the block before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy
import torch


@dataclass(frozen=True)
class StepLayout:
    """Where each time step's rows live in packed tensors (shared by a stack's layers)."""

    active: tuple[int, ...]  # rows at each step that has any
    offsets: tuple[int, ...]  # first packed row of each step
    batch: int
    steps: int  # time steps of the padded inputs
    positions: torch.Tensor  # packed row -> padded row ``t * batch + i``
    previous: torch.Tensor  # packed row -> packed row of the same sentence at t-1 (``total`` at t=0)

    @property
    def total(self) -> int:
        return int(self.positions.shape[0])

    def rows(self, t: int, n: int = -1) -> slice:
        """Packed rows of step t: its first ``n`` rows (default: all of them)."""
        return slice(self.offsets[t], self.offsets[t] + (self.active[t] if n < 0 else n))


def step_layout(active: Sequence[int], steps: int, batch: int, device: torch.device) -> StepLayout:
    """The layout for ``active[t]`` rows at step t (non-increasing; it ends at the first 0)."""
    running: list[int] = []
    for n in active[:steps]:
        if n == 0:
            break
        running.append(int(n))
    offsets = numpy.concatenate([[0], numpy.cumsum(running, dtype=numpy.int64)]).astype(numpy.int64)
    total = int(offsets[-1])
    positions, previous = [], []
    for t, n in enumerate(running):
        rows = numpy.arange(n, dtype=numpy.int64)
        positions.append(t * batch + rows)
        previous.append(numpy.full(n, total, dtype=numpy.int64) if t == 0 else offsets[t - 1] + rows)

    def index(parts: list[numpy.ndarray]) -> torch.Tensor:
        flat = numpy.concatenate(parts) if parts else numpy.zeros(0, dtype=numpy.int64)
        return torch.from_numpy(flat).to(device)

    starts = tuple(int(o) for o in offsets[:-1])
    return StepLayout(tuple(running), starts, batch, steps, index(positions), index(previous))


def pack(padded: torch.Tensor, layout: StepLayout) -> torch.Tensor:
    """``(dirs, time, batch, X)`` -> packed ``(dirs, total, X)``."""
    dirs, steps, batch, width = padded.shape
    return padded.reshape(dirs, steps * batch, width).index_select(1, layout.positions)


def unpack(packed: torch.Tensor, layout: StepLayout) -> torch.Tensor:
    """Packed ``(dirs, total, X)`` -> ``(dirs, time, batch, X)``, zero at padding."""
    dirs, _, width = packed.shape
    result = packed.new_zeros(dirs, layout.steps * layout.batch, width)
    return result.index_copy_(1, layout.positions, packed).view(dirs, layout.steps, layout.batch, width)


def previous_step(values: torch.Tensor, layout: StepLayout) -> torch.Tensor:
    """Each packed row's value at the step before, zero at t=0: ``(dirs, total, X)``."""
    padded = torch.cat([values, values.new_zeros(values.shape[0], 1, values.shape[2])], dim=1)
    return padded.index_select(1, layout.previous)
