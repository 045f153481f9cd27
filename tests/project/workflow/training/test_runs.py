"""The training steps' device choice: ``--gpu auto`` never asks for a GPU that is not there."""
import pytest
import torch

from scripts.workflow.training import runs as train_runs


def test_numbers_are_used_as_given():
    assert train_runs.gpu_id("-1") == -1 and train_runs.gpu_id("1") == 1


@pytest.mark.parametrize("cuda, cupy, expected", [(False, True, -1), (True, False, -1), (True, True, 0)])
def test_auto_needs_both_a_gpu_and_cupy(monkeypatch, cuda, cupy, expected):
    import importlib.util

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "cupy" and cupy else (None if name == "cupy" else real(name, *a)))
    assert train_runs.gpu_id("auto") == expected
