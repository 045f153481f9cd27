"""The autograd-safe fused loop: both directions per step, nothing visible to autograd modified in place.

Used when gradients flow (pretraining, fine-tuning) and for mixed precision. Rows are sorted
longest first, so a row that has finished is never needed again: the state simply shrinks to
the rows still running (no per-step concatenation), and the per-step outputs are scattered into
the padded result by one ``index_copy`` at the end.

In full precision each layer runs as one autograd op with a hand-written backward pass
(:mod:`.backward`; the LSTMs' forward + backward about 1.3x faster on a CPU). The loop
below, recorded op by op by autograd, remains for mixed precision and as that backward pass's
yardstick: ``custom_backward=False`` (or ``USE_CUSTOM_BACKWARD = False``) selects it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

import numpy
import torch

from .backward import run_layer_by_hand
from .chain import chain_layers
from .packing import StepLayout, step_layout

if TYPE_CHECKING:
    from .stack import LstmStack, ProjectedLstmLayer

# Default of ``run_fused(custom_backward=...)``: the hand-written backward pass in full precision.
USE_CUSTOM_BACKWARD = True


def run_fused(
    stacks: Sequence["LstmStack"],
    inputs: torch.Tensor,
    active: Sequence[int],
    compute_dtype: Optional[torch.dtype] = None,
    custom_backward: Optional[bool] = None,
    input_masks: Sequence[torch.Tensor] = (),
) -> list[torch.Tensor]:
    """Per-layer outputs ``(n_stacks, time, batch, P)`` for time-major inputs.

    With ``compute_dtype`` the matmuls run in that dtype while the cell state, the clipping and
    the outputs stay in the inputs' dtype (always on the autograd-recorded loop).
    ``custom_backward`` (default :data:`USE_CUSTOM_BACKWARD`) picks the hand-written backward
    pass in full precision; False records the loop op by op. ``input_masks`` (dropout, one
    ``(n_stacks, time, batch, P)`` tensor per layer above the first) multiply those layers'
    inputs, which the skip connections then add.
    """
    if custom_backward is None:
        custom_backward = USE_CUSTOM_BACKWARD
    first = stacks[0]
    layout = None
    # Under an outer autocast the matmuls' dtype is autocast's business: the recorded loop.
    if custom_backward and compute_dtype is None and not torch.is_autocast_enabled(inputs.device.type):
        layout = step_layout(active, inputs.shape[1], inputs.shape[2], inputs.device)

    def run_layer(index: int, layer_input: torch.Tensor) -> torch.Tensor:
        layers = [stack.layers[index] for stack in stacks]
        if layout is not None:
            return _run_layer_by_hand(layers, layer_input, layout, first)
        return _run_layer(layers, layer_input, active, first, compute_dtype)

    return chain_layers(len(first.layers), inputs, run_layer, first.use_skip_connections, input_masks)


def _run_layer_by_hand(
    layers: Sequence["ProjectedLstmLayer"], inputs: torch.Tensor, layout: StepLayout, options: "LstmStack"
) -> torch.Tensor:
    return run_layer_by_hand(
        inputs,
        torch.stack([layer.input_weight for layer in layers]),
        torch.stack([layer.recurrent_weight for layer in layers]),
        torch.stack([layer.projection_weight for layer in layers]),
        torch.stack([layer.gate_bias(options.forget_bias) for layer in layers]),
        layout,
        options.cell_clip,
        options.proj_clip,
    )


def _run_layer(
    layers: Sequence["ProjectedLstmLayer"],
    inputs: torch.Tensor,
    active: Sequence[int],
    options: "LstmStack",
    compute_dtype: Optional[torch.dtype],
) -> torch.Tensor:
    n_dirs, steps, batch, _ = inputs.shape
    cell, proj = layers[0].cell_dim, layers[0].projection_dim
    state_dtype = inputs.dtype

    def low(tensor: torch.Tensor) -> torch.Tensor:
        return tensor if compute_dtype is None else tensor.to(compute_dtype)

    input_weight = low(torch.stack([layer.input_weight for layer in layers]))  # (dirs, 4C, D)
    recurrent = low(torch.stack([layer.recurrent_weight for layer in layers]).transpose(1, 2))  # (dirs, P, 4C)
    projection = low(torch.stack([layer.projection_weight for layer in layers]).transpose(1, 2))  # (dirs, C, P)
    bias = torch.stack([layer.gate_bias(options.forget_bias) for layer in layers])  # (dirs, 4C)

    # Input-to-gate products of every step in one matmul: (dirs, time, batch, 4C).
    flat = low(inputs).reshape(n_dirs, steps * batch, -1)
    pre_gates = torch.bmm(flat, input_weight.transpose(1, 2)).to(state_dtype)
    pre_gates = (pre_gates + bias[:, None, :]).view(n_dirs, steps, batch, 4 * cell)
    # One view per step, taken once: slicing pre_gates[:, t] inside the loop would make the
    # backward pass build a full-size gradient tensor at every step (measured 1.5x slower).
    per_step = pre_gates.unbind(1)

    hidden = inputs.new_zeros(n_dirs, batch, proj)
    memory = inputs.new_zeros(n_dirs, batch, cell)
    step_outputs = []
    for t in range(steps):
        n = active[t]
        if n == 0:
            break
        hidden, memory = hidden[:, :n], memory[:, :n]
        if compute_dtype is None:
            gates = torch.baddbmm(per_step[t][:, :n], hidden, recurrent)
        else:
            gates = per_step[t][:, :n] + torch.bmm(low(hidden), recurrent).to(state_dtype)
        in_gate, candidate, forget_gate, out_gate = gates.chunk(4, dim=-1)
        memory = torch.sigmoid(in_gate) * torch.tanh(candidate) + torch.sigmoid(forget_gate) * memory
        if options.cell_clip:
            memory = memory.clamp(-options.cell_clip, options.cell_clip)
        cell_output = torch.sigmoid(out_gate) * torch.tanh(memory)
        hidden = torch.bmm(low(cell_output), projection).to(state_dtype)
        if options.proj_clip:
            hidden = hidden.clamp(-options.proj_clip, options.proj_clip)
        step_outputs.append(hidden)
    return _scatter_steps(step_outputs, active, n_dirs, steps, batch, proj, inputs)


def _scatter_steps(
    step_outputs: list[torch.Tensor],
    active: Sequence[int],
    n_dirs: int,
    steps: int,
    batch: int,
    proj: int,
    like: torch.Tensor,
) -> torch.Tensor:
    """Place step t's ``(dirs, active[t], P)`` output at rows ``:active[t]`` of time ``t``."""
    result = like.new_zeros(n_dirs, steps * batch, proj)
    if not step_outputs:
        return result.view(n_dirs, steps, batch, proj)
    positions = numpy.concatenate(
        [t * batch + numpy.arange(n, dtype=numpy.int64) for t, n in enumerate(active[: len(step_outputs)])]
    )
    packed = torch.cat(step_outputs, dim=1)
    index = torch.from_numpy(positions).to(like.device)
    return result.index_copy(1, index, packed).view(n_dirs, steps, batch, proj)
