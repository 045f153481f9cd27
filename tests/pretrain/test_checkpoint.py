"""Checkpoints: plain data only, atomic, and they bring every random generator back."""
from __future__ import annotations

import pickle
import random

import numpy
import pytest
import torch

from spacy_elmo.pretrain.errors import CheckpointError
from spacy_elmo.pretrain.checkpoint import capture_rng, load_checkpoint, restore_rng, save_checkpoint


def draws(generator):
    return (random.random(), float(numpy.random.rand()), float(torch.rand(1)), float(torch.rand(1, generator=generator)))


def test_random_states_come_back_exactly(tmp_path):
    generator = torch.Generator().manual_seed(5)
    random.seed(1), numpy.random.seed(2), torch.manual_seed(3)
    draws(generator)
    save_checkpoint(tmp_path / "c.pt", {"rng": [capture_rng(generator)]})
    expected = draws(generator)
    random.seed(9), numpy.random.seed(9), torch.manual_seed(9)
    other = torch.Generator().manual_seed(9)
    restore_rng(load_checkpoint(tmp_path / "c.pt")["rng"][0], other)
    assert draws(other) == expected


def test_model_and_optimizer_state_round_trip_with_weights_only(tmp_path):
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adagrad(model.parameters(), lr=0.2, initial_accumulator_value=1.0)
    model(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    save_checkpoint(tmp_path / "c.pt", {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": 7})
    loaded = load_checkpoint(tmp_path / "c.pt")
    assert loaded["step"] == 7
    restored = torch.optim.Adagrad(torch.nn.Linear(3, 2).parameters(), lr=0.2)
    restored.load_state_dict(loaded["optimizer"])
    torch.testing.assert_close(restored.state_dict()["state"][0]["sum"], optimizer.state_dict()["state"][0]["sum"])
    assert not list(tmp_path.glob("*.tmp"))


def test_arbitrary_pickled_objects_are_refused(tmp_path):
    class Sneaky:
        def __reduce__(self):
            return (print, ("this would run on load",))

    path = tmp_path / "c.pt"
    torch.save({"format": "spacy-elmo-pretrain-checkpoint", "version": 1, "payload": Sneaky()}, path, pickle_module=pickle)
    with pytest.raises(CheckpointError, match="UnpicklingError") as caught:
        load_checkpoint(path)
    assert isinstance(caught.value.__cause__, pickle.UnpicklingError)


def test_other_files_are_not_taken_for_checkpoints(tmp_path):
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a spacy-elmo"):
        load_checkpoint(tmp_path / "other.pt")
