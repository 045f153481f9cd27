"""Running LSTM stacks, and the one place that decides which time loop runs.

Every loop computes the same function of the same parameters (:mod:`.stack`); they differ in
what they allow and how fast they are. All take *time-major* inputs
``(directions, time, batch, dim)`` with rows sorted longest first, so that the rows still
running at step t are the first ``active[t]`` and a step's rows are one contiguous block.
:func:`run_time_major` runs the first loop whose condition holds (``README.md`` here has the
same table with the measurements behind it):

1. ``per_direction`` -> :mod:`.reference`: one direction at a time, plainly written; the
   yardstick the other loops are tested against.
2. dropout masks (``layer_dropout`` > 0, two layers or more) -> :mod:`.fused`: the masks
   are for training, so gradients flow.
3. no autograd, and ``windowed`` or a small batch on a GPU (:func:`.graphed.graphs_pay`) ->
   :mod:`.graphed`: windows of steps replayed as CUDA graphs, where kernel launches cost as
   much as the arithmetic (run eagerly off GPUs or with ``cuda_graphs`` False).
4. autograd, or a ``compute_dtype`` below the inputs' dtype -> :mod:`.fused`: nothing that
   autograd keeps is overwritten; in full precision each layer is one op with a hand-written
   backward pass (:mod:`.backward`, on the packed layout of :mod:`.packing`).
5. otherwise -> :mod:`.in_place`: everything in place in preallocated buffers, the fastest.

A ``precision`` other than ``"float32"`` (:mod:`..precision`; inference only) sends the call to
:mod:`.reduced` before any of these, whose products run in bfloat16 or int8; it refuses
autograd and dropout. In float32 nothing above changes.

A model states its wishes as ``BiLM.lstm_loop`` (one of :data:`LSTM_LOOPS`), ``cuda_graphs``
and ``autocast_dtype``; :func:`loop_options` turns them into this module's keywords.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy
import torch

from ..precision import DEFAULT_PRECISION, check_precision
from .fused import run_fused
from .graphed import graphs_available, graphs_pay, run_graphed
from .in_place import run_in_place
from .reduced import run_reduced
from .reference import run_per_direction

if TYPE_CHECKING:
    from .stack import LstmStack

#: ``BiLM.lstm_loop``'s choices: the selection above, the reference loop, the window loop.
LSTM_LOOPS = ("fused", "per_direction", "windowed")


def loop_options(lstm_loop: str, cuda_graphs: bool, compute_dtype: Optional[torch.dtype]) -> dict[str, Any]:
    """Keyword arguments of :func:`run_time_major` for a model's ``lstm_loop`` (one of
    :data:`LSTM_LOOPS`), ``cuda_graphs`` and autocast dtype."""
    return dict(
        compute_dtype=compute_dtype,
        per_direction=lstm_loop == "per_direction",
        cuda_graphs=cuda_graphs,
        windowed=lstm_loop == "windowed",
    )


def active_rows(lengths: Sequence[int], steps: int) -> list[int]:
    """``active[t]``: how many rows are longer than ``t``; rows must be sorted longest first."""
    lengths = numpy.asarray(lengths, dtype=numpy.int64)
    if lengths.size > 1 and (numpy.diff(lengths) > 0).any():
        raise ValueError("LSTM rows must be sorted by decreasing length")
    return (lengths[None, :] > numpy.arange(steps)[:, None]).sum(axis=1).tolist()


def layer_input_masks(stacks: Sequence["LstmStack"], inputs: torch.Tensor, p: float) -> list[torch.Tensor]:
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


def needs_autograd(stacks: Sequence["LstmStack"], inputs: torch.Tensor) -> bool:
    """True when gradients must flow: then the in-place loop may not be used."""
    if not torch.is_grad_enabled():
        return False
    return inputs.requires_grad or any(p.requires_grad for s in stacks for p in s.parameters())


def run_stacks(
    stacks: Sequence["LstmStack"], inputs: torch.Tensor, lengths: torch.Tensor, **options: Any
) -> list[torch.Tensor]:
    """Run several same-shaped stacks (e.g. forward and backward) in one time loop.

    ``inputs`` is ``(n_stacks, batch, time, input_dim)``; stack ``d`` reads ``inputs[d]``
    left to right (reverse the backward direction's rows before calling). ``lengths`` holds
    each row's length, sorted in decreasing order. Returns one ``(n_stacks, batch, time, P)``
    tensor per layer, zero at padded positions; every row starts from a zero state.
    ``options`` are :func:`run_time_major`'s (which loop, precision, dropout).
    """
    steps = inputs.shape[2]
    active = active_rows([int(n) for n in lengths.tolist()], steps)
    time_major = inputs.transpose(1, 2).contiguous()
    outputs = run_time_major(stacks, time_major, active, **options)
    return [out.transpose(1, 2).contiguous() for out in outputs]


def run_time_major(
    stacks: Sequence["LstmStack"],
    inputs: torch.Tensor,
    active: Sequence[int],
    compute_dtype: Optional[torch.dtype] = None,
    per_direction: bool = False,
    cuda_graphs: bool = True,
    windowed: bool = False,
    layer_dropout: float = 0.0,
    precision: str = DEFAULT_PRECISION,
) -> list[torch.Tensor]:
    """:func:`run_stacks` on time-major ``(n_stacks, time, batch, dim)`` inputs and outputs.

    The loop is chosen as the module docstring's table says. ``compute_dtype`` (e.g.
    ``torch.bfloat16``) runs the matmuls in that precision, keeping the cell state and the
    outputs in the inputs' dtype. ``per_direction`` asks for the reference loop (one stack at a
    time); ``cuda_graphs`` False keeps a GPU off CUDA graphs; ``windowed`` asks for the window
    loop (without autograd) on any device, graphed on a GPU unless ``cuda_graphs`` is False.

    ``layer_dropout`` > 0 (pretraining) drops, with fresh masks from torch's global generator,
    the input of every layer above the first, as bilm-tf's ``DropoutWrapper(input_keep_prob)``
    does; the skip connection then adds the dropped input, as in bilm-tf, where the dropout
    wraps the residual cell. Only the fused and the reference loop take it.

    ``precision`` ``"bfloat16"`` or ``"int8"`` runs the products in that precision
    (:mod:`.reduced`, inference only; it takes precedence over ``compute_dtype``); callers
    check the CPU first (:func:`..precision.effective_precision`).
    """
    if check_precision(precision) != DEFAULT_PRECISION:
        if layer_dropout or needs_autograd(stacks, inputs):
            raise ValueError(f"precision {precision!r} is for inference only: run without gradients and layer dropout")
        return run_reduced(stacks, inputs, active, precision)
    masks = layer_input_masks(stacks, inputs, layer_dropout)
    if per_direction:
        return run_per_direction(stacks, inputs, active, masks)
    if masks:
        return run_fused(
            stacks, inputs, active, compute_dtype if compute_dtype != inputs.dtype else None, input_masks=masks
        )
    low_precision = compute_dtype is not None and compute_dtype != inputs.dtype
    autograd = needs_autograd(stacks, inputs)
    if not autograd and (windowed or (cuda_graphs and graphs_pay(stacks, inputs, compute_dtype))):
        use_graphs = cuda_graphs and graphs_available(inputs)
        return run_graphed(stacks, inputs, active, compute_dtype if low_precision else None, use_graphs)
    if low_precision or autograd:
        return run_fused(stacks, inputs, active, compute_dtype if low_precision else None)
    return run_in_place(stacks, inputs, active)
