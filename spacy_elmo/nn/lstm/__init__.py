"""ELMo's two LSTM stacks (steps 3-4 of ``BiLM.forward``): their parameters and their time loops.

- :mod:`.stack`: the parameters, :class:`LstmStack` of :class:`ProjectedLstmLayer` s (what a
  weight file fills);
- :mod:`.dispatch`: :func:`run_stacks` / :func:`run_time_major`, the entry points, and the one
  place that decides which loop runs (its docstring and ``README.md`` here say which runs when);
- one module per loop, all computing the same function:

  - :mod:`.in_place`: no autograd, everything in place (the default for embedding);
  - :mod:`.graphed`: no autograd, windows of steps replayed as CUDA graphs (small GPU batches);
  - :mod:`.fused`: autograd-safe, both directions per step (training, mixed precision), with
    the hand-written backward pass of :mod:`.backward` on the packed rows of :mod:`.packing`;
  - :mod:`.reference`: one direction at a time, plainly written (the tests' yardstick);
- :mod:`.chain`: how layers connect (dropout on the inputs above the first, skip
  connections), shared by the autograd-safe loops.
"""

from .dispatch import LSTM_LOOPS, active_rows, layer_input_masks, loop_options, run_stacks, run_time_major
from .stack import LstmStack, ProjectedLstmLayer

__all__ = [
    "LSTM_LOOPS",
    "LstmStack",
    "ProjectedLstmLayer",
    "active_rows",
    "layer_input_masks",
    "loop_options",
    "run_stacks",
    "run_time_major",
]
