"""The reduced-precision loop: close to float32, padding zero, inference only, its converted
weights cached until a parameter changes; float32 calls never reach it."""

import pytest
import torch

from spacy_elmo.nn.lstm import active_rows, run_time_major
from spacy_elmo.nn.lstm import reduced as lstm_reduced
from spacy_elmo.nn.lstm.in_place import cell_step_

from ..test_speed_paths import LENGTHS, random_stacks, time_major_inputs


def run(stacks, inputs, **options):
    with torch.no_grad():
        return run_time_major(stacks, inputs, active_rows(LENGTHS, max(LENGTHS)), **options)


@pytest.mark.parametrize("precision,mean_bound,max_bound", [("bfloat16", 7e-3, 7e-2), ("int8", 1.6e-2, 1.6e-1)])
def test_each_layer_is_close_to_float32(precision, mean_bound, max_bound):
    """Error per layer over the mean magnitude of float32's layer (3 layers, clipped cells and
    projections, 16 cells: the error grows with depth). Measured, layers 1-3: bfloat16 mean
    3.8e-3, 4.1e-3, 4.9e-3, max 3.0e-2, 3.9e-2, 5.0e-2; int8 mean 8.2e-3, 9.7e-3, 1.2e-2, max
    6.9e-2, 8.8e-2, 1.2e-1."""
    stacks = random_stacks(torch.float32, seed=3)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    reference = run(stacks, inputs)
    reduced = run(stacks, inputs, precision=precision)
    assert len(reduced) == len(reference) == 3
    for got, want in zip(reduced, reference):
        assert got.shape == want.shape and got.dtype == torch.float32
        error = (got - want).abs() / want.abs().mean()
        assert 1e-4 < error.mean() < mean_bound
        assert error.max() < max_bound
        for row, length in enumerate(LENGTHS):
            assert (got[:, length:, row] == 0).all()


def test_float32_is_the_default_and_untouched(monkeypatch):
    stacks = random_stacks(torch.float32, seed=4)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    default = run(stacks, inputs)

    def refuse(*args, **kwargs):
        raise AssertionError("float32 must not reach the reduced loop")

    monkeypatch.setattr("spacy_elmo.nn.lstm.dispatch.run_reduced", refuse)
    explicit = run(stacks, inputs, precision="float32")
    for a, b in zip(default, explicit):
        assert torch.equal(a, b)


def test_inference_only_and_checked_values():
    stacks = random_stacks(torch.float32, seed=5)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    active = active_rows(LENGTHS, max(LENGTHS))
    with pytest.raises(ValueError, match="inference only"):
        run_time_major(stacks, inputs, active, precision="int8")  # parameters require grad
    with torch.no_grad(), pytest.raises(ValueError, match="inference only"):
        run_time_major(stacks, inputs, active, precision="bfloat16", layer_dropout=0.5)
    with torch.no_grad(), pytest.raises(ValueError, match="precision must be one of"):
        run_time_major(stacks, inputs, active, precision="float16")


def test_converted_weights_are_built_once_and_follow_parameter_changes(monkeypatch):
    stacks = random_stacks(torch.float32, seed=6)
    inputs = time_major_inputs(LENGTHS, 6, torch.float32)
    builds = []
    real = lstm_reduced.ReducedWeight

    def counting(weight, precision):
        builds.append(precision)
        return real(weight, precision)

    monkeypatch.setattr(lstm_reduced, "ReducedWeight", counting)
    first = run(stacks, inputs, precision="int8")
    assert len(builds) == 3 * 3 * 2  # layers x matrices x directions
    again = run(stacks, inputs, precision="int8")
    assert len(builds) == 18
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    with torch.no_grad():
        stacks[1].layers[0].recurrent_weight.mul_(0.5)
    changed = run(stacks, inputs, precision="int8")
    assert len(builds) == 18 + 3 * 2  # layer 0 only
    assert not torch.equal(changed[0], first[0])
    run(stacks, inputs, precision="bfloat16")
    assert builds.count("bfloat16") == 18  # each precision has its own


def test_float64_stacks_get_float64_outputs():
    stacks = random_stacks(torch.float64, seed=7)
    inputs = time_major_inputs(LENGTHS, 6, torch.float64)
    reference = run(stacks, inputs)
    reduced = run(stacks, inputs, precision="bfloat16")
    for got, want in zip(reduced, reference):
        assert got.dtype == torch.float64
        assert (got - want).abs().mean() < 1e-2 * want.abs().mean()


def test_tanh_via_sigmoid_is_within_a_few_ulps_of_tanh_in_place():
    x = torch.cat([torch.linspace(-30, 30, 600_001), torch.tensor([0.0, 1e-8, -1e-30, 90.0, -90.0])])
    want = torch.tanh(x)
    got = x.clone()
    assert lstm_reduced.tanh_via_sigmoid_(got) is got
    assert (got - want).abs().max() <= 2.4e-7
    assert got[-2] == 1.0 and got[-1] == -1.0 and got.abs().max() <= 1.0


@pytest.mark.parametrize("cell_clip", [None, 3.0])
def test_the_reduced_cell_step_is_the_float32_one_but_for_its_tanh(cell_clip):
    generator = torch.Generator().manual_seed(7)
    cell = 24
    gates = torch.randn(2, 5, 4 * cell, generator=generator) * 4
    memory = torch.randn(2, 5, cell, generator=generator) * 4
    want = [gates.clone(), memory.clone(), torch.empty(2, 5, cell)]
    got = [gates.clone(), memory.clone(), torch.empty(2, 5, cell)]
    cell_step_(*want, cell, cell_clip)
    lstm_reduced.reduced_cell_step_(*got, cell, cell_clip)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)
    assert not torch.equal(got[2], want[2])  # the tanh is another computation
    if cell_clip:
        assert got[1].abs().max() <= cell_clip
