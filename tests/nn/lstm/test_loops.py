"""The inference and the training loop compute the reference loop's function: outputs, gradients
and dropout, in float64 (where the three differ by rounding only) and in float32."""

import pytest
import torch

from spacy_elmo.nn.lstm import active_rows, layer_input_masks, run_stacks, run_time_major
from spacy_elmo.nn.lstm.inference import run_inference
from spacy_elmo.nn.lstm.reference import run_reference
from spacy_elmo.nn.lstm.training import run_training

from .helpers import LENGTHS, random_stacks, time_major_inputs

ACTIVE = active_rows(LENGTHS, max(LENGTHS))


def _loss_gradients(loop, stacks, inputs, masks=()):
    """Outputs, then the gradients of every parameter and of the inputs, of a weighted squared loss."""
    inputs = inputs.clone().requires_grad_(True)
    generator = torch.Generator().manual_seed(2)
    for stack in stacks:
        stack.zero_grad(set_to_none=True)
    outputs = loop(stacks, inputs, ACTIVE, masks)
    weights = [torch.randn(out.shape, generator=generator, dtype=out.dtype) for out in outputs]
    sum(((out * w) ** 2).sum() for out, w in zip(outputs, weights)).backward()
    grads = [p.grad.clone() for s in stacks for p in s.parameters()] + [inputs.grad.clone()]
    return [out.detach() for out in outputs], grads


@pytest.mark.parametrize("n_stacks", [1, 2])
@pytest.mark.parametrize("clips", [(1.0, 0.5), (None, None)])
@pytest.mark.parametrize("skip", [True, False])
def test_the_fast_loops_compute_the_reference_in_float64(n_stacks, clips, skip):
    stacks = random_stacks(n_stacks=n_stacks, cell_clip=clips[0], proj_clip=clips[1], skip=skip)
    inputs = time_major_inputs(LENGTHS, n_stacks)
    expected, expected_grads = _loss_gradients(run_reference, stacks, inputs)
    trained, grads = _loss_gradients(lambda s, x, a, m: run_training(s, x, a, m), stacks, inputs)
    with torch.no_grad():
        inferred = run_inference(stacks, inputs, ACTIVE)
    for ours in (trained, inferred):
        for got, want in zip(ours, expected):
            torch.testing.assert_close(got, want, rtol=0, atol=1e-12)
    for got, want in zip(grads, expected_grads):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    if clips[0]:  # the clips are at work in these tests
        assert any((out.abs() == clips[1]).any() for out in expected)


def test_float32_loops_agree_with_the_reference():
    stacks = random_stacks(torch.float32, seed=3)
    inputs = time_major_inputs(LENGTHS, dtype=torch.float32)
    with torch.no_grad():
        expected = run_reference(stacks, inputs, ACTIVE)
        for loop in (run_inference, run_training):
            for got, want in zip(loop(stacks, inputs, ACTIVE), expected):
                torch.testing.assert_close(got, want, rtol=0, atol=1e-5)


def test_padding_stays_zero_and_rows_do_not_leak():
    stacks = random_stacks()
    inputs = time_major_inputs(LENGTHS)
    changed = inputs.clone()
    changed[:, :, 0] += 1.0  # another first row: no other row may move
    with torch.no_grad():
        before, after = run_inference(stacks, inputs, ACTIVE), run_inference(stacks, changed, ACTIVE)
    for a, b in zip(before, after):
        for row, length in enumerate(LENGTHS):
            assert (a[:, length:, row] == 0).all()
        torch.testing.assert_close(a[:, :, 1:], b[:, :, 1:], rtol=0, atol=1e-12)
        assert not torch.allclose(a[:, :, 0], b[:, :, 0])


def test_dispatch_and_the_batch_major_entry_point():
    stacks = random_stacks()
    inputs = time_major_inputs(LENGTHS)
    with torch.no_grad():
        expected = run_reference(stacks, inputs, ACTIVE)
        batch_major = run_stacks(stacks, inputs.transpose(1, 2), torch.tensor(LENGTHS))
    for got, want in zip(batch_major, expected):
        torch.testing.assert_close(got, want.transpose(1, 2), rtol=0, atol=1e-12)
    trained = run_time_major(stacks, inputs, ACTIVE)  # parameters require grad: the training loop
    assert all(out.requires_grad for out in trained)
    with pytest.raises(ValueError, match="sorted by decreasing length"):
        active_rows([1, 3], 3)


@pytest.mark.parametrize("loop", ["training", "reference"])
def test_dropout_masks_give_the_same_function_in_every_loop(loop):
    stacks = random_stacks()
    inputs = time_major_inputs(LENGTHS)
    torch.manual_seed(5)
    masks = layer_input_masks(stacks, inputs, 0.4)
    assert len(masks) == 2 and all((m == 0).any() for m in masks)
    run = run_reference if loop == "reference" else (lambda s, x, a, m: run_training(s, x, a, m))
    expected, expected_grads = _loss_gradients(run_reference, stacks, inputs, masks)
    outputs, grads = _loss_gradients(run, stacks, inputs, masks)
    for got, want in zip(outputs + grads, expected + expected_grads):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    plain, _ = _loss_gradients(run, stacks, inputs)
    torch.testing.assert_close(plain[0], outputs[0], rtol=0, atol=0)  # the first layer's input is never dropped
    assert all(not torch.allclose(a, b) for a, b in zip(plain[1:], outputs[1:]))


def test_dropped_input_feeds_both_the_layer_and_its_skip_connection():
    # bilm-tf wraps the residual cell in the dropout: layer j's output is LSTM_j(d) + d, d the
    # dropped input. With everything dropped, layer 1 sees (and adds) only zeros.
    stacks = random_stacks(n_layers=2)
    masks = [torch.zeros(2, max(LENGTHS), len(LENGTHS), 5, dtype=torch.float64)]
    one = run_reference(stacks, time_major_inputs(LENGTHS, seed=1), ACTIVE, masks)
    other = run_reference(stacks, time_major_inputs(LENGTHS, seed=2), ACTIVE, masks)
    assert not torch.allclose(one[0], other[0])
    torch.testing.assert_close(one[1], other[1], rtol=0, atol=0)
    assert one[1].abs().sum() > 0


def test_masks_are_inverted_dropout_at_the_asked_rate():
    stacks = random_stacks()
    torch.manual_seed(3)
    masks = layer_input_masks(stacks, torch.zeros(2, 50, 40, 6), 0.25)
    values = torch.cat([m.flatten() for m in masks])
    assert values.unique().tolist() == [0.0, pytest.approx(1 / 0.75)]
    assert abs(float((values == 0).float().mean()) - 0.25) < 0.02
    assert layer_input_masks(stacks, torch.zeros(2, 5, 4, 6), 0.0) == []
    with pytest.raises(ValueError, match="layer dropout"):
        layer_input_masks(stacks, torch.zeros(2, 5, 4, 6), 1.0)


@pytest.mark.parametrize("seed", [0, 1])
def test_training_in_bfloat16_products_stays_close_to_float32(seed):
    """The GPU's mixed-precision training (products in bfloat16, state in float32), run on a CPU,
    on weights whose clips rarely bite (a flipped clip decision moves a gradient by far more
    than rounding). Measured: at most 1.2% of each tensor's largest value, where the reference
    loop under bfloat16 autocast is off by up to 1.8%."""
    stacks = random_stacks(torch.float32, seed=seed, cell_clip=3.0, proj_clip=3.0, scale=0.3)
    inputs = time_major_inputs(LENGTHS, dtype=torch.float32)
    full, full_grads = _loss_gradients(lambda s, x, a, m: run_training(s, x, a, m), stacks, inputs)
    low, low_grads = _loss_gradients(lambda s, x, a, m: run_training(s, x, a, m, torch.bfloat16), stacks, inputs)
    for got, want in zip(low + low_grads, full + full_grads):
        assert got.dtype == torch.float32
        scale = float(want.abs().max())
        assert 0 < float((got - want).abs().max()) <= 0.03 * scale


def test_int8_refuses_gradients():
    stacks = random_stacks(torch.float32)
    with pytest.raises(ValueError, match="inference only"):
        run_time_major(stacks, time_major_inputs(LENGTHS, dtype=torch.float32), ACTIVE, precision="int8")


def test_inference_weights_follow_parameter_changes():
    stacks = random_stacks(torch.float32)
    inputs = time_major_inputs(LENGTHS, dtype=torch.float32)
    with torch.no_grad():
        before = run_inference(stacks, inputs, ACTIVE)
        stacks[0].layers[1].recurrent_weight.mul_(0.5)
        after = run_inference(stacks, inputs, ACTIVE)
        expected = run_reference(stacks, inputs, ACTIVE)
    assert not torch.allclose(before[1], after[1])
    for got, want in zip(after, expected):
        torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
