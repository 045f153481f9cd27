"""The inference loop in reduced precision: close to float32, padding zero, float64 kept."""

import pytest
import torch

from spacy_elmo.nn.lstm import active_rows
from spacy_elmo.nn.lstm.inference import run_inference

from .helpers import LENGTHS, random_stacks, time_major_inputs

ACTIVE = active_rows(LENGTHS, max(LENGTHS))


@pytest.mark.parametrize("precision,mean_bound,max_bound", [("bfloat16", 1e-2, 0.15), ("int8", 2e-2, 0.3)])
def test_each_layer_is_close_to_float32(precision, mean_bound, max_bound):
    """Error per layer over the mean magnitude of float32's layer, on a tiny model whose clips
    bite. Measured on three seeds: mean 0.3-0.6% (bfloat16) and 0.6-1.2% (int8); the largest
    single errors 3-9% and 9-23%, where a value sits at a clip or a gate's steep part."""
    stacks = random_stacks(torch.float32, seed=3)
    inputs = time_major_inputs(LENGTHS, dtype=torch.float32)
    with torch.no_grad():
        reference = run_inference(stacks, inputs, ACTIVE)
        reduced = run_inference(stacks, inputs, ACTIVE, precision)
    assert len(reduced) == len(reference) == 3
    for got, want in zip(reduced, reference):
        assert got.shape == want.shape and got.dtype == torch.float32
        error = (got - want).abs() / want.abs().mean()
        assert 1e-4 < error.mean() < mean_bound
        assert error.max() < max_bound
        for row, length in enumerate(LENGTHS):
            assert (got[:, length:, row] == 0).all()


def test_converted_weights_are_built_once_and_follow_parameter_changes(monkeypatch):
    from spacy_elmo.nn.lstm import inference

    built = []
    original = inference.LayerProducts

    def counting(*args):
        built.append(args[1:])
        return original(*args)

    monkeypatch.setattr(inference, "LayerProducts", counting)
    stacks = random_stacks(torch.float32, seed=5)
    inputs = time_major_inputs(LENGTHS, dtype=torch.float32)
    with torch.no_grad():
        first = run_inference(stacks, inputs, ACTIVE, "int8")
        assert len(built) == 3
        run_inference(stacks, inputs, ACTIVE, "int8")
        assert len(built) == 3  # kept
        stacks[1].layers[0].input_weight.mul_(2.0)
        changed = run_inference(stacks, inputs, ACTIVE, "int8")
    assert len(built) == 4  # only the changed layer again
    assert not torch.allclose(first[0][1], changed[0][1])


def test_float64_stacks_get_float64_outputs():
    stacks = random_stacks(torch.float64, seed=6)
    with torch.no_grad():
        outputs = run_inference(stacks, time_major_inputs(LENGTHS), ACTIVE, "bfloat16")
    assert all(out.dtype == torch.float64 for out in outputs)
