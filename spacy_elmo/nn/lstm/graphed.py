"""The GPU inference loop: windows of LSTM steps replayed as CUDA graphs.

On a GPU one LSTM step is a dozen small kernels, and at ELMo's sizes launching them costs as
much as running them. A CUDA graph replays a recorded window of steps with one launch, but it
replays fixed shapes at fixed addresses, so this loop is built around static buffers:

- a window runs the rows still active at its first step, rounded up to a multiple of
  :data:`ROW_BUCKET` (rows are sorted longest first), for all its steps: rows that finish
  inside the window, and the rows added by the rounding, run on. Rows are independent and
  time runs forward within a row (the backward direction's rows are reversed before the
  loop), so whatever the extra rows compute never reaches a real position; one mask multiply
  per layer zeroes the padded positions afterwards, as the other loops leave them;
- a window reads its inputs from, and writes its outputs to, static buffers: one copy in and
  one copy out per window. The state carried from one window to the next (cell and hidden)
  stays in static buffers too;
- graphs are recorded per layer and row count and kept with the layer's derived weights
  (:class:`..derived_cache.DerivedTensors`), so a change of any parameter rebuilds them: a
  stale graph is never replayed. A graph also keeps the matmul settings it was recorded under
  (``torch.backends.cuda.matmul.allow_tf32``): call ``BiLM.clear_inference_caches()`` after
  changing them.

With a ``compute_dtype`` (bfloat16/float16) the matmuls run in that dtype while the gates, the
cell state, the clipping and the outputs stay in float32, as in :mod:`.fused`.

The same window code runs eagerly where graphs are unavailable (CPU tensors, or
``use_graphs=False``); the tests check it against the reference loop there.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Optional, Sequence, TypedDict

import torch

from ..derived_cache import DerivedTensors
from .in_place import cell_step_

if TYPE_CHECKING:
    from .stack import LstmStack, ProjectedLstmLayer

# Rows are rounded up to a multiple of this, so that batches of similar size share a graph.
ROW_BUCKET = 32
# Rows x steps of input-to-gate products per window (the window's scratch: 2 directions x 4096
# rows x 16384 gates x 4 bytes = 512 MB at the original size), and at most this many steps.
WINDOW_GATE_ROWS = 4096
MAX_WINDOW_STEPS = 32
# The default path records graphs only where the loop is bound by kernel launches, not by
# arithmetic: batches of at most GRAPH_MAX_ROWS rows whose recurrent matmul per row and step
# (P x 4C multiply-adds, divided by REDUCED_PRECISION_SPEEDUP in bfloat16/float16) is at most
# GRAPH_MAX_ROW_WORK. Measured on an H200 (benchmarks/bench_gpu.py): in batches of 32
# sentences of running text, graphs ran 1.06-1.10x the in-place loop for the small model (128
# x 4096) in float32 and 1.29-1.76x for both sizes in bfloat16, but 0.74x for the original
# (512 x 16384) in float32, whose matmuls keep the GPU busy anyway; in batches of ~500
# sentences they gained nothing anywhere (0.84-1.14x).
GRAPH_MAX_ROWS = 128
GRAPH_MAX_ROW_WORK = 2**21
REDUCED_PRECISION_SPEEDUP = 8
# Graphs kept per layer (least recently used dropped first): one per row bucket in use.
MAX_GRAPHS_PER_LAYER = 16


def graphs_available(inputs: torch.Tensor) -> bool:
    """True when ``inputs`` live on a CUDA device, where windows are recorded as graphs."""
    return inputs.is_cuda and torch.cuda.is_available()


def graphs_pay(stacks: Sequence["LstmStack"], inputs: torch.Tensor, compute_dtype: Optional[torch.dtype]) -> bool:
    """True when the default path should record graphs (see GRAPH_MAX_ROWS): a GPU, a small
    batch, and matmuls small enough (for their precision) that launches dominate."""
    if not graphs_available(inputs) or inputs.shape[2] > GRAPH_MAX_ROWS:
        return False
    layer = stacks[0].layers[0]
    work = layer.projection_dim * 4 * layer.cell_dim
    if compute_dtype is not None and compute_dtype != inputs.dtype:
        work //= REDUCED_PRECISION_SPEEDUP
    return work <= GRAPH_MAX_ROW_WORK


def run_graphed(
    stacks: Sequence["LstmStack"],
    inputs: torch.Tensor,
    active: Sequence[int],
    compute_dtype: Optional[torch.dtype] = None,
    use_graphs: Optional[bool] = None,
    row_bucket: int = ROW_BUCKET,
) -> list[torch.Tensor]:
    """Per-layer outputs ``(n_stacks, time, batch, P)`` for time-major inputs, without autograd.

    ``use_graphs`` defaults to :func:`graphs_available`; False runs the same windows eagerly.
    """
    if use_graphs is None:
        use_graphs = graphs_available(inputs)
    first = stacks[0]
    n_dirs, steps, batch, _ = inputs.shape
    outputs: list[torch.Tensor] = []
    if steps == 0 or batch == 0 or not any(active):
        proj = first.layers[0].projection_dim
        return [inputs.new_zeros(n_dirs, steps, batch, proj) for _ in first.layers]
    mask = (torch.arange(batch)[None, :] < torch.tensor(list(active))[:, None]).to(inputs)
    mask = mask.to(inputs.device)[None, :, :, None]  # (1, time, batch, 1)
    layer_input = inputs
    with torch.no_grad():
        for index in range(len(first.layers)):
            layer = _graphed_layer(stacks, index, compute_dtype, inputs)
            with layer.lock:  # the runners' buffers serve one call at a time
                layer_output = _run_windows(layer, layer_input, active, row_bucket, use_graphs)
            layer_output.mul_(mask)
            if index > 0 and first.use_skip_connections:
                layer_output += layer_input
            outputs.append(layer_output)
            layer_input = layer_output
    return outputs


def _run_windows(
    layer: "_GraphedLayer", inputs: torch.Tensor, active: Sequence[int], row_bucket: int, use_graphs: bool
) -> torch.Tensor:
    """One layer over all steps, window by window; padded positions are not zeroed yet.

    Each window runs the rows still active at its first step, rounded up to ``row_bucket``:
    rows are sorted longest first, so finished rows drop out as the windows go on (as in the
    in-place loop), and the carried state moves to the smaller window's buffers.
    """
    n_dirs, steps, batch = inputs.shape[:3]
    output = inputs.new_zeros(n_dirs, steps, batch, layer.proj, dtype=layer.state_dtype)
    previous: Optional[_WindowRunner] = None
    start = 0
    while start < steps and active[start] > 0:
        runner = layer.runner(-(-active[start] // row_bucket) * row_bucket, use_graphs)
        if previous is None:
            runner.reset()
        elif previous is not runner:
            runner.take_state(previous)
        stop = min(steps, start + runner.window)
        rows = min(batch, runner.rows)
        runner.load(inputs[:, start:stop, :rows])
        runner.step()
        output[:, start:stop, :rows] = runner.window_output[:, : stop - start, :rows]
        previous, start = runner, stop
    return output


class _GraphedLayer:
    """One layer's weights for both directions, laid out for the window loop, and its runners."""

    def __init__(
        self,
        layers: Sequence["ProjectedLstmLayer"],
        options: "LstmStack",
        compute_dtype: Optional[torch.dtype],
        like: torch.Tensor,
    ) -> None:
        cell = layers[0].cell_dim
        self.cell, self.proj, self.input_dim = cell, layers[0].projection_dim, layers[0].input_dim
        self.cell_clip, self.proj_clip = options.cell_clip, options.proj_clip
        self.state_dtype = like.dtype
        self.matmul_dtype = compute_dtype or like.dtype
        self.bias = torch.stack([layer.gate_bias(options.forget_bias) for layer in layers])
        self.input_weight = torch.stack([layer.input_weight.t() for layer in layers]).to(self.matmul_dtype)
        self.recurrent = torch.stack([layer.recurrent_weight.t() for layer in layers]).to(self.matmul_dtype)
        self.projection = torch.stack([layer.projection_weight.t() for layer in layers]).to(self.matmul_dtype)
        self._runners: "OrderedDict[tuple[int, bool], _WindowRunner]" = OrderedDict()
        self._scratch: dict[torch.dtype, torch.Tensor] = {}
        self.lock = threading.Lock()  # held while a call uses the runners (threads share a model)

    def scratch(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """A buffer of ``shape`` shared by this layer's runners (they never run at once).

        A runner keeps the tensor it was given, so replacing a too-small buffer with a larger
        one leaves the graphs recorded over the old one valid. Called while a runner is built
        (outside inference mode, see :meth:`runner`).
        """
        numel = math.prod(shape)
        buffer = self._scratch.get(dtype)
        if buffer is None or buffer.numel() < numel:
            buffer = torch.zeros(numel, dtype=dtype, device=self.bias.device)
            self._scratch[dtype] = buffer
        return buffer[:numel].view(shape)

    @property
    def n_dirs(self) -> int:
        return self.bias.shape[0]

    def runner(self, rows: int, use_graphs: bool) -> "_WindowRunner":
        key = (rows, use_graphs)
        runner = self._runners.pop(key, None)
        if runner is None:
            if len(self._runners) >= MAX_GRAPHS_PER_LAYER:
                self._runners.popitem(last=False)
            # Normal tensors, not inference tensors: the buffers are updated in place by later
            # calls, which may run under no_grad outside inference_mode.
            with torch.inference_mode(False):
                runner = _WindowRunner(self, rows, use_graphs)
        self._runners[key] = runner
        return runner


def _graphed_layer(
    stacks: Sequence["LstmStack"], index: int, compute_dtype: Optional[torch.dtype], like: torch.Tensor
) -> _GraphedLayer:
    """Layer ``index``'s window-loop weights and graphs, rebuilt only after a parameter changes."""
    first = stacks[0]
    caches = first.__dict__.setdefault("_graphed_layer_cache", {})
    key = (index, tuple(id(stack) for stack in stacks), compute_dtype, like.dtype, like.device)
    cache = caches.setdefault(key, DerivedTensors())
    layers = [stack.layers[index] for stack in stacks]
    params = [p for layer in layers for p in layer.parameters()]
    return cache.get(params, lambda: _GraphedLayer(layers, first, compute_dtype, like), extra_key=first.forget_bias)


class _TensorOptions(TypedDict):
    """The keyword arguments ``torch.zeros`` gets for a buffer."""

    dtype: torch.dtype
    device: torch.device


class _WindowRunner:
    """Static buffers for ``rows`` rows and a window of steps, and the window's recorded graph."""

    def __init__(self, layer: _GraphedLayer, rows: int, use_graphs: bool) -> None:
        self.layer, self.rows = layer, rows
        self.window = max(1, min(MAX_WINDOW_STEPS, WINDOW_GATE_ROWS // rows))
        n_dirs, cell, proj = layer.n_dirs, layer.cell, layer.proj
        state: _TensorOptions = {"dtype": layer.state_dtype, "device": layer.bias.device}
        low: _TensorOptions = {"dtype": layer.matmul_dtype, "device": layer.bias.device}
        self.low_precision = layer.matmul_dtype != layer.state_dtype
        self.window_input = torch.zeros(n_dirs, self.window, rows, layer.input_dim, **low)
        self.window_output = torch.zeros(n_dirs, self.window, rows, proj, **state)
        self.pre_gates = layer.scratch((n_dirs, self.window, rows, 4 * cell), layer.state_dtype)
        self.memory = torch.zeros(n_dirs, rows, cell, **state)
        self.hidden = torch.zeros(n_dirs, rows, proj, **state)  # h_{t-1} entering the window
        self.cell_output = torch.zeros(n_dirs, rows, cell, **state)
        if self.low_precision:
            self.pre_low = layer.scratch((n_dirs, self.window * rows, 4 * cell), layer.matmul_dtype)
            self.hidden_low = torch.zeros(n_dirs, rows, proj, **low)
            self.cell_low = torch.zeros(n_dirs, rows, cell, **low)
            self.recurrent_low = torch.zeros(n_dirs, rows, 4 * cell, **low)
            self.projected_low = torch.zeros(n_dirs, rows, proj, **low)
        self.graph: Optional["torch.cuda.CUDAGraph"] = None
        if use_graphs:
            self.graph = self._record()

    def reset(self) -> None:
        """Zero state: the first window of a layer."""
        self.memory.zero_()
        self.hidden.zero_()

    def take_state(self, other: "_WindowRunner") -> None:
        """Carry on from ``other``'s state (a runner of at least as many rows)."""
        self.memory.copy_(other.memory[:, : self.rows])
        self.hidden.copy_(other.hidden[:, : self.rows])

    def load(self, chunk: torch.Tensor) -> None:
        """Put ``(dirs, steps <= window, rows <= self.rows, D)`` inputs in the window; zeros elsewhere."""
        steps, rows = chunk.shape[1], chunk.shape[2]
        self.window_input[:, :steps, :rows].copy_(chunk)
        if rows < self.rows:
            self.window_input[:, :steps, rows:].zero_()
        if steps < self.window:
            self.window_input[:, steps:].zero_()

    def step(self) -> None:
        """Run the window: replay the graph, or the same operations eagerly."""
        if self.graph is not None:
            self.graph.replay()
        else:
            self._window()

    def _record(self) -> "torch.cuda.CUDAGraph":
        """Warm up on a side stream (cuBLAS picks and allocates its kernels), then record."""
        stream = torch.cuda.Stream(device=self.pre_gates.device)
        stream.wait_stream(torch.cuda.current_stream(self.pre_gates.device))
        with torch.cuda.stream(stream):
            self._window()
        torch.cuda.current_stream(self.pre_gates.device).wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._window()
        return graph

    def _window(self) -> None:
        """``window`` LSTM steps from the static input buffer and carried state."""
        layer = self.layer
        n_dirs, cell = layer.n_dirs, layer.cell
        flat_input = self.window_input.view(n_dirs, -1, layer.input_dim)
        pre_gates = self.pre_gates.view(n_dirs, -1, 4 * cell)
        if self.low_precision:
            torch.bmm(flat_input, layer.input_weight, out=self.pre_low)
            torch.add(layer.bias[:, None, :], self.pre_low, out=pre_gates)
        else:
            torch.baddbmm(layer.bias[:, None, :], flat_input, layer.input_weight, out=pre_gates)
        for k in range(self.window):
            gates = self.pre_gates[:, k]
            previous = self.hidden if k == 0 else self.window_output[:, k - 1]
            if self.low_precision:
                self.hidden_low.copy_(previous)
                torch.bmm(self.hidden_low, layer.recurrent, out=self.recurrent_low)
                gates.add_(self.recurrent_low)
            else:
                gates.baddbmm_(previous, layer.recurrent)
            cell_step_(gates, self.memory, self.cell_output, cell, layer.cell_clip)
            hidden = self.window_output[:, k]
            if self.low_precision:
                self.cell_low.copy_(self.cell_output)
                torch.bmm(self.cell_low, layer.projection, out=self.projected_low)
                hidden.copy_(self.projected_low)
            else:
                torch.bmm(self.cell_output, layer.projection, out=hidden)
            if layer.proj_clip:
                hidden.clamp_(-layer.proj_clip, layer.proj_clip)
        self.hidden.copy_(self.window_output[:, -1])
