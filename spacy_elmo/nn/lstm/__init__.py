"""ELMo's two LSTM stacks: their parameters (:mod:`.stack`) and the loops that run them.

Every loop computes the same function of the same parameters, on *time-major* inputs
``(directions, time, batch, dim)`` whose rows are sorted longest first, so the rows still running
at step t are the first ``active[t]``. :func:`run_time_major` picks one:

| when | loop | why |
| --- | --- | --- |
| ``reference=True`` | :mod:`.reference` | one direction at a time, plainly written: the tests' yardstick |
| gradients or dropout | :mod:`.training` | each layer one autograd op with a written-out backward pass |
| otherwise | :mod:`.inference` | in place, no autograd; products in float32, bfloat16, int8 or float16 |

The inference and training loops share the cell's arithmetic (:mod:`.cell`).
"""

from __future__ import annotations

from typing import Sequence

import numpy
import torch

from .inference import run_inference
from .reference import run_reference
from .stack import LstmStack, ProjectedLstmLayer
from .training import run_training

__all__ = ["LstmStack", "ProjectedLstmLayer", "active_rows", "run_stacks", "run_time_major"]

#: The dtype the training loop's products run in, per precision (float32: None, no cast).
TRAINING_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}


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
    """True when gradients must flow through the loop."""
    if not torch.is_grad_enabled():
        return False
    return inputs.requires_grad or any(p.requires_grad for s in stacks for p in s.parameters())


def run_time_major(
    stacks: Sequence[LstmStack],
    inputs: torch.Tensor,
    active: Sequence[int],
    precision: str = "float32",
    layer_dropout: float = 0.0,
    reference: bool = False,
) -> list[torch.Tensor]:
    """Per-layer outputs ``(n_stacks, time, batch, P)``, zero at padding, every row from a zero
    state. ``precision`` must run on the inputs' device (:func:`..precision.running_precision`).
    ``layer_dropout`` drops the input of every layer above the first (fresh masks from torch's
    generator), as bilm-tf's ``DropoutWrapper(input_keep_prob)``; the skip connection adds it."""
    masks = layer_input_masks(stacks, inputs, layer_dropout)
    if reference:
        return run_reference(stacks, inputs, active, masks)
    if masks or needs_autograd(stacks, inputs):
        if precision == "int8":
            raise ValueError("precision 'int8' is for inference only: run it without gradients and dropout")
        return run_training(stacks, inputs, active, masks, TRAINING_DTYPES.get(precision))
    return run_inference(stacks, inputs, active, precision)


def run_stacks(
    stacks: Sequence[LstmStack], inputs: torch.Tensor, lengths: torch.Tensor, **options
) -> list[torch.Tensor]:
    """:func:`run_time_major` on batch-major inputs ``(n_stacks, batch, time, dim)`` with each
    row's ``lengths`` (sorted longest first); one ``(n_stacks, batch, time, P)`` per layer."""
    steps = inputs.shape[2]
    active = active_rows([int(n) for n in lengths.tolist()], steps)
    outputs = run_time_major(stacks, inputs.transpose(1, 2).contiguous(), active, **options)
    return [out.transpose(1, 2).contiguous() for out in outputs]
