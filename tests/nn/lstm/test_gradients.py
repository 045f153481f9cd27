"""The autograd fused loop (pretraining, fine-tuning) against the plain reference loop.

Forward outputs are compared elsewhere; this checks the backward pass, which the fused loop's
per-step views and shrinking state could get wrong without changing any output.
"""

from typing import Optional

import pytest
import torch

from spacy_elmo.nn.lstm import LstmStack, run_stacks
from spacy_elmo.nn.lstm import fused as lstm_fused

# Small enough to bite at these weights (3.0 clipped nothing here): see test_clips_bite.
CELL_CLIP, PROJ_CLIP = 1.0, 0.5


def _stacks(
    seed: int, cell_clip: Optional[float] = CELL_CLIP, proj_clip: Optional[float] = PROJ_CLIP
) -> list[LstmStack]:
    torch.manual_seed(seed)
    stacks = [
        LstmStack(6, 10, 5, n_layers=2, cell_clip=cell_clip, proj_clip=proj_clip, use_skip_connections=True)
        for _ in range(2)
    ]
    for stack in stacks:
        for parameter in stack.parameters():
            torch.nn.init.normal_(parameter, std=0.6)
    return [stack.double() for stack in stacks]


def _outputs(stacks: list[LstmStack], per_direction: bool) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(2, 4, 7, 6, generator=generator, dtype=torch.float64, requires_grad=True)
    lengths = torch.tensor([7, 5, 5, 2])
    weights = torch.randn(2, 4, 7, 5, generator=generator, dtype=torch.float64)
    return run_stacks(stacks, inputs, lengths, per_direction=per_direction), inputs, weights


def _gradients(per_direction: bool) -> tuple[list[torch.Tensor], torch.Tensor]:
    stacks = _stacks(0)
    outputs, inputs, weights = _outputs(stacks, per_direction)
    loss = sum(((out * weights) ** 2).sum() for out in outputs)
    loss.backward()
    return [p.grad.clone() for s in stacks for p in s.parameters()], inputs.grad.clone()


def test_clips_bite():
    """Each clip changes the outputs, so the gradient comparison covers the clip masks."""

    def run(cell_clip, proj_clip):
        return _outputs(_stacks(0, cell_clip, proj_clip), per_direction=True)[0]

    unclipped = run(None, None)
    for clips in ((CELL_CLIP, None), (None, PROJ_CLIP)):
        assert not all(torch.equal(a, b) for a, b in zip(run(*clips), unclipped))


@pytest.mark.parametrize("custom_backward", [True, False], ids=["hand-written", "autograd-loop"])
def test_fused_loop_gradients_equal_reference_loop(monkeypatch, custom_backward):
    monkeypatch.setattr(lstm_fused, "USE_CUSTOM_BACKWARD", custom_backward)
    fused_params, fused_inputs = _gradients(per_direction=False)
    reference_params, reference_inputs = _gradients(per_direction=True)
    assert any(g.abs().sum() > 0 for g in fused_params)
    for fused, reference in zip(fused_params, reference_params):
        torch.testing.assert_close(fused, reference, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(fused_inputs, reference_inputs, rtol=1e-10, atol=1e-12)


def test_padded_positions_get_no_input_gradient():
    _, input_grads = _gradients(per_direction=False)
    assert torch.all(input_grads[:, 3, 2:] == 0)  # row 3 has length 2
    assert torch.any(input_grads[:, 3, :2] != 0)
