"""The hand-written LSTM backward pass (nn/lstm/backward.py) against the loop autograd records.

Both run the same fused forward math; the backward passes are written independently, so equal
gradients in float64 (clips active, uneven lengths) pin the hand-written one down.
"""

from typing import Optional

import pytest
import torch

from spacy_elmo.nn.lstm import LstmStack, active_rows
from spacy_elmo.nn.lstm.backward import run_layer_by_hand
from spacy_elmo.nn.lstm.fused import run_fused
from spacy_elmo.nn.lstm.packing import step_layout


def _stacks(
    n_stacks: int,
    cell_clip: Optional[float],
    proj_clip: Optional[float],
    skip: bool = True,
    dtype: torch.dtype = torch.float64,
    seed: int = 0,
) -> list[LstmStack]:
    torch.manual_seed(seed)
    stacks = [
        LstmStack(6, 10, 5, n_layers=3, cell_clip=cell_clip, proj_clip=proj_clip, use_skip_connections=skip)
        for _ in range(n_stacks)
    ]
    with torch.no_grad():
        for stack in stacks:
            for parameter in stack.parameters():
                parameter.normal_(0.0, 0.6)  # large enough for the clips to bite
    return [stack.to(dtype) for stack in stacks]


def _gradients(
    stacks: list[LstmStack], lengths: list[int], custom: bool, steps: Optional[int] = None, dtype=torch.float64
) -> tuple[list[torch.Tensor], list[torch.Tensor], torch.Tensor]:
    """Outputs, parameter gradients and input gradient of a weighted squared loss."""
    steps = steps or max(max(lengths), 1)
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(len(stacks), steps, len(lengths), 6, generator=generator, dtype=dtype, requires_grad=True)
    weights = torch.randn(len(stacks), steps, len(lengths), 5, generator=generator, dtype=dtype)
    for stack in stacks:
        stack.zero_grad(set_to_none=True)
    outputs = run_fused(stacks, inputs, active_rows(lengths, steps), custom_backward=custom)
    loss = sum(((out * weights) ** 2).sum() for out in outputs)
    loss.backward()
    grads = [p.grad.clone() if p.grad is not None else torch.zeros_like(p) for s in stacks for p in s.parameters()]
    return [out.detach() for out in outputs], grads + [inputs.grad.clone()], inputs


def _assert_same(stacks: list[LstmStack], lengths: list[int], rtol: float, atol: float, **kwargs) -> None:
    custom_out, custom_grads, _ = _gradients(stacks, lengths, custom=True, **kwargs)
    autograd_out, autograd_grads, _ = _gradients(stacks, lengths, custom=False, **kwargs)
    for ours, theirs in zip(custom_out, autograd_out):
        torch.testing.assert_close(ours, theirs, rtol=rtol, atol=atol)
    assert any(g.abs().sum() > 0 for g in autograd_grads)
    for ours, theirs in zip(custom_grads, autograd_grads):
        torch.testing.assert_close(ours, theirs, rtol=rtol, atol=atol)


LENGTHS = {
    "one row": [6],
    "one step": [1, 1],
    "equal": [5, 5, 5],
    "uneven": [9, 2, 1, 1],
    "mixed": [7, 5, 5, 2],
    "empty row": [4, 3, 0],
}


CLIPS = {"both": (1.0, 0.5), "none": (None, None), "cell": (1.0, None), "proj": (None, 0.5)}


@pytest.mark.parametrize("lengths", LENGTHS.values(), ids=LENGTHS.keys())
@pytest.mark.parametrize("clips", CLIPS.values(), ids=CLIPS.keys())
def test_hand_written_backward_equals_autograd_loop(lengths, clips):
    _assert_same(_stacks(2, *clips), lengths, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("skip", [True, False])
@pytest.mark.parametrize("n_stacks", [1, 2])
def test_skip_connections_and_one_direction(skip, n_stacks):
    _assert_same(_stacks(n_stacks, 1.0, 0.5, skip=skip), [7, 5, 5, 2], rtol=1e-10, atol=1e-12)


def test_trailing_steps_without_rows():
    """Inputs padded beyond the longest row: those steps run no rows and output zeros."""
    _assert_same(_stacks(2, 1.0, 0.5), [4, 2], rtol=1e-10, atol=1e-12, steps=7)


def test_clips_bite_in_these_tests():
    """The comparisons above would not test the clip masks if nothing were clipped."""
    lengths = [9, 2, 1, 1]
    unclipped, _, _ = _gradients(_stacks(2, None, None), lengths, custom=True)
    proj_only, _, _ = _gradients(_stacks(2, None, 0.5), lengths, custom=True)
    cell_only, _, _ = _gradients(_stacks(2, 1.0, None), lengths, custom=True)
    assert (proj_only[0].abs() == 0.5).any()  # layer 0: no skip connection added
    assert not torch.equal(cell_only[0], unclipped[0])


def test_float32_agrees_with_autograd_loop():
    _assert_same(_stacks(2, 1.0, 0.5, dtype=torch.float32), [9, 6, 6, 3, 1], rtol=1e-5, atol=1e-5, dtype=torch.float32)


def test_default_path_is_hand_written():
    stacks = _stacks(2, 1.0, 0.5)
    inputs = torch.randn(2, 3, 2, 6, dtype=torch.float64, requires_grad=True)
    assert "FusedLayer" in type(run_fused(stacks, inputs, [2, 1, 1])[0].grad_fn).__name__
    assert "FusedLayer" not in type(run_fused(stacks, inputs, [2, 1, 1], custom_backward=False)[0].grad_fn).__name__


def test_backward_twice_with_retained_graph():
    """The backward pass must not consume what the forward pass saved."""
    stacks = _stacks(2, 1.0, 0.5)
    inputs = torch.randn(2, 5, 3, 6, dtype=torch.float64, requires_grad=True)
    loss = sum(out.square().sum() for out in run_fused(stacks, inputs, [3, 2, 1, 1, 1]))
    first = torch.autograd.grad(loss, inputs, retain_graph=True)[0]
    second = torch.autograd.grad(loss, inputs)[0]
    torch.testing.assert_close(first, second, rtol=0, atol=0)


@pytest.mark.parametrize("clips", [(0.4, 0.3), (None, None)], ids=["clipped", "unclipped"])
def test_gradcheck_tiny_layer(clips):
    generator = torch.Generator().manual_seed(3)
    dirs, steps, batch, dim, cell, proj = 2, 4, 3, 3, 4, 2

    def tensor(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64).requires_grad_(True)

    inputs = tensor(dirs, steps, batch, dim)
    gates = 4 * cell
    weights = (tensor(dirs, gates, dim), tensor(dirs, gates, proj), tensor(dirs, proj, cell), tensor(dirs, gates))
    layout = step_layout(active_rows([4, 2, 1], steps), steps, batch, inputs.device)

    def layer(*args: torch.Tensor) -> torch.Tensor:
        return run_layer_by_hand(*args, layout, *clips)

    assert torch.autograd.gradcheck(layer, (inputs, *weights), eps=1e-6, atol=1e-7)
