"""ELMo's directional LSTM stacks: parameters, and the entry point that runs them.

Both directions of a layer run in one time loop (one batched recurrent matmul per step for the
two directions), the input-to-gate products of all steps come from one big matmul before the
loop, and rows sorted by length mean only the rows still running are computed at each step.
Four loops implement this, chosen by what the caller needs:

- :mod:`.inference`: no autograd; writes into preallocated buffers in place (fastest).
- :mod:`.fused`: autograd-safe (pretraining, fine-tuning), and the mixed-precision path.
- :mod:`.graphed`: no autograd, on GPUs where launches dominate (small batches): windows
  of steps recorded and replayed as CUDA graphs (full precision or mixed).
- :mod:`.reference`: one direction at a time, plainly written; the tests' yardstick.

All four work on *time-major* inputs ``(directions, time, batch, dim)``: a time step's rows
are then one contiguous block per direction.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy
import torch
from torch import nn

from .fused import run_fused
from .graphed import graphs_available, graphs_pay, run_graphed
from .inference import run_inference
from .reference import run_per_direction


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

    def gate_bias(self, forget_bias: float) -> torch.Tensor:
        """The stored bias plus the run-time forget bias (TF adds it to the forget gate only)."""
        if not forget_bias:
            return self.bias
        shift = torch.zeros_like(self.bias)
        shift[2 * self.cell_dim : 3 * self.cell_dim] = forget_bias
        return self.bias + shift


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


def active_rows(lengths: Sequence[int], steps: int) -> list[int]:
    """``active[t]``: how many rows are longer than ``t``; rows must be sorted longest first."""
    lengths = numpy.asarray(lengths, dtype=numpy.int64)
    if lengths.size > 1 and (numpy.diff(lengths) > 0).any():
        raise ValueError("LSTM rows must be sorted by decreasing length")
    return (lengths[None, :] > numpy.arange(steps)[:, None]).sum(axis=1).tolist()


def layer_input_masks(stacks: Sequence[LstmStack], inputs: torch.Tensor, p: float) -> list[torch.Tensor]:
    """Inverted-dropout masks ``(n_stacks, time, batch, P)`` (0 or ``1/(1-p)``), one per layer
    above the first; none when ``p`` is 0 or there is one layer."""
    if not 0.0 <= p < 1.0:
        raise ValueError(f"layer dropout must be in [0, 1), not {p}")
    n_layers = len(stacks[0].layers)
    if p == 0.0 or n_layers < 2:
        return []
    n_stacks, steps, batch, _ = inputs.shape
    shape = (n_stacks, steps, batch, stacks[0].layers[0].projection_dim)
    return [inputs.new_empty(shape).bernoulli_(1.0 - p).div_(1.0 - p) for _ in range(n_layers - 1)]


def needs_autograd(stacks: Sequence[LstmStack], inputs: torch.Tensor) -> bool:
    """True when gradients must flow: then the in-place inference loop may not be used."""
    if not torch.is_grad_enabled():
        return False
    return inputs.requires_grad or any(p.requires_grad for s in stacks for p in s.parameters())


def run_stacks(
    stacks: Sequence[LstmStack],
    inputs: torch.Tensor,
    lengths: torch.Tensor,
    compute_dtype: Optional[torch.dtype] = None,
    per_direction: bool = False,
    cuda_graphs: bool = True,
    windowed: bool = False,
    layer_dropout: float = 0.0,
) -> list[torch.Tensor]:
    """Run several same-shaped stacks (e.g. forward and backward) in one time loop.

    ``inputs`` is ``(n_stacks, batch, time, input_dim)``; stack ``d`` reads ``inputs[d]``
    left to right (reverse the backward direction's rows before calling). ``lengths`` holds
    each row's length, sorted in decreasing order. Returns one ``(n_stacks, batch, time, P)``
    tensor per layer, zero at padded positions; every row starts from a zero state.
    ``compute_dtype`` (e.g. ``torch.bfloat16``) runs the matmuls in that precision, keeping
    the cell state and the outputs in the inputs' dtype. ``per_direction`` runs the plain
    reference loop instead (one stack at a time); ``cuda_graphs`` False keeps a GPU off the
    CUDA-graph loop; ``windowed`` asks for the window loop (without autograd) on any device.
    ``layer_dropout`` (training only) drops the inputs of layers 1.. (see :func:`run_time_major`).
    """
    steps = inputs.shape[2]
    active = active_rows([int(n) for n in lengths.tolist()], steps)
    time_major = inputs.transpose(1, 2).contiguous()
    outputs = run_time_major(stacks, time_major, active, compute_dtype, per_direction, cuda_graphs, windowed, layer_dropout)
    return [out.transpose(1, 2).contiguous() for out in outputs]


def run_time_major(
    stacks: Sequence[LstmStack],
    inputs: torch.Tensor,
    active: Sequence[int],
    compute_dtype: Optional[torch.dtype] = None,
    per_direction: bool = False,
    cuda_graphs: bool = True,
    windowed: bool = False,
    layer_dropout: float = 0.0,
) -> list[torch.Tensor]:
    """:func:`run_stacks` on time-major ``(n_stacks, time, batch, dim)`` inputs and outputs.

    Without autograd: on a GPU the CUDA-graph window loop where it pays (small batches and
    small or reduced-precision matmuls, see :data:`.graphed.GRAPH_MAX_ROWS`; never when
    ``cuda_graphs`` is False), elsewhere the in-place inference loop. The autograd-safe fused loop runs when gradients are
    needed or a lower ``compute_dtype`` is asked for off the graph path; ``per_direction``
    asks for the reference loop; ``windowed`` the window loop (graphed on a GPU unless
    ``cuda_graphs`` is False, eager elsewhere).

    ``layer_dropout`` > 0 (pretraining) drops, with fresh masks from torch's global generator,
    the input of every layer above the first, as bilm-tf's ``DropoutWrapper(input_keep_prob)``
    does; the skip connection then adds the dropped input, as in bilm-tf, where the dropout
    wraps the residual cell. Only the fused and the reference loop take it.
    """
    masks = layer_input_masks(stacks, inputs, layer_dropout)
    if per_direction:
        return run_per_direction(stacks, inputs, active, masks)
    if masks:
        return run_fused(stacks, inputs, active, compute_dtype if compute_dtype != inputs.dtype else None, input_masks=masks)
    low_precision = compute_dtype is not None and compute_dtype != inputs.dtype
    autograd = needs_autograd(stacks, inputs)
    if not autograd and (windowed or (cuda_graphs and graphs_pay(stacks, inputs, compute_dtype))):
        use_graphs = cuda_graphs and graphs_available(inputs)
        return run_graphed(stacks, inputs, active, compute_dtype if low_precision else None, use_graphs)
    if low_precision or autograd:
        return run_fused(stacks, inputs, active, compute_dtype if low_precision else None)
    return run_inference(stacks, inputs, active)
