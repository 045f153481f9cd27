"""Dropout between LSTM layers (pretraining): the hand-written backward pass, the loop autograd
records and the plain reference loop agree when given the same masks."""

import pytest
import torch

from spacy_elmo.nn.lstm import LstmStack, active_rows, layer_input_masks, run_time_major
from spacy_elmo.nn.lstm.fused import run_fused
from spacy_elmo.nn.lstm.reference import run_per_direction

LENGTHS = [7, 5, 5, 2, 0]


def _stacks(n_layers: int = 3) -> list[LstmStack]:
    torch.manual_seed(0)
    stacks = [LstmStack(6, 10, 5, n_layers=n_layers, cell_clip=1.0, proj_clip=0.5) for _ in range(2)]
    with torch.no_grad():
        for stack in stacks:
            for parameter in stack.parameters():
                parameter.normal_(0.0, 0.6)
    return [stack.double() for stack in stacks]


def _run(loop, stacks, masks):
    steps = max(LENGTHS)
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(2, steps, len(LENGTHS), 6, generator=generator, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(2, steps, len(LENGTHS), 5, generator=generator, dtype=torch.float64)
    for stack in stacks:
        stack.zero_grad(set_to_none=True)
    outputs = loop(stacks, inputs, active_rows(LENGTHS, steps), masks)
    sum(((out * weights) ** 2).sum() for out in outputs).backward()
    grads = [p.grad.clone() for s in stacks for p in s.parameters()] + [inputs.grad.clone()]
    return [out.detach() for out in outputs], grads


LOOPS = {
    "hand-written backward": lambda s, x, a, m: run_fused(s, x, a, custom_backward=True, input_masks=m),
    "autograd-recorded loop": lambda s, x, a, m: run_fused(s, x, a, custom_backward=False, input_masks=m),
}


@pytest.mark.parametrize("loop", LOOPS.values(), ids=LOOPS.keys())
def test_fused_loops_with_dropout_equal_the_reference_loop(loop):
    stacks = _stacks()
    torch.manual_seed(5)
    masks = layer_input_masks(stacks, torch.zeros(2, max(LENGTHS), len(LENGTHS), 6, dtype=torch.float64), 0.4)
    assert len(masks) == 2 and all((m == 0).any() for m in masks)
    expected_out, expected_grads = _run(run_per_direction, stacks, masks)
    outputs, grads = _run(loop, stacks, masks)
    for ours, theirs in zip(outputs + grads, expected_out + expected_grads):
        torch.testing.assert_close(ours, theirs, rtol=1e-10, atol=1e-12)
    # The masks matter: without them every layer above the first gives other outputs.
    plain_out, _ = _run(loop, stacks, [])
    torch.testing.assert_close(plain_out[0], outputs[0], rtol=0, atol=0)
    assert all(not torch.allclose(a, b) for a, b in zip(plain_out[1:], outputs[1:]))


def test_dropped_input_feeds_both_the_layer_and_its_skip_connection():
    # bilm-tf wraps the residual cell in the dropout: layer j's output is LSTM_j(d) + d, d the
    # dropped input. With everything dropped, layer 1 then sees (and adds) only zeros, so its
    # output cannot depend on the inputs, though layer 0's does.
    stacks = _stacks(n_layers=2)
    steps, active = max(LENGTHS), active_rows(LENGTHS, max(LENGTHS))
    masks = [torch.zeros(2, steps, len(LENGTHS), 5, dtype=torch.float64)]
    one = run_per_direction(stacks, torch.randn(2, steps, len(LENGTHS), 6, dtype=torch.float64), active, masks)
    other = run_per_direction(stacks, torch.randn(2, steps, len(LENGTHS), 6, dtype=torch.float64), active, masks)
    assert not torch.allclose(one[0], other[0])
    torch.testing.assert_close(one[1], other[1], rtol=0, atol=0)
    assert one[1].abs().sum() > 0


def test_masks_are_inverted_dropout_at_the_asked_rate():
    stacks = _stacks()
    torch.manual_seed(3)
    masks = layer_input_masks(stacks, torch.zeros(2, 50, 40, 6), 0.25)
    values = torch.cat([m.flatten() for m in masks])
    assert values.unique().tolist() == [0.0, pytest.approx(1 / 0.75)]
    assert abs(float((values == 0).float().mean()) - 0.25) < 0.02
    assert layer_input_masks(stacks, torch.zeros(2, 5, 4, 6), 0.0) == []
    with pytest.raises(ValueError, match="layer dropout"):
        layer_input_masks(stacks, torch.zeros(2, 5, 4, 6), 1.0)


def test_no_dropout_leaves_every_loop_bit_identical():
    stacks = [stack.float() for stack in _stacks()]
    inputs = torch.randn(2, max(LENGTHS), len(LENGTHS), 6)
    active = active_rows(LENGTHS, max(LENGTHS))
    with torch.no_grad():
        before = run_time_major(stacks, inputs, active)
        after = run_time_major(stacks, inputs, active, layer_dropout=0.0)
    for a, b in zip(before, after):
        assert torch.equal(a, b)
    # With dropout, the run_time_major entry point gives the reference loop's result for the same draw.
    torch.manual_seed(9)
    fused = run_time_major(stacks, inputs, active, layer_dropout=0.3)
    torch.manual_seed(9)
    reference = run_time_major(stacks, inputs, active, per_direction=True, layer_dropout=0.3)
    for a, b in zip(fused, reference):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
