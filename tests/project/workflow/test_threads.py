"""The one place that sets a step's torch threads (scripts/workflow/threads.py)."""

import os

import pytest
import torch

from scripts.workflow.threads import set_threads


def test_threads_are_set_for_torch_and_openmp(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    try:
        set_threads(0)  # torch's default: nothing changes
        assert torch.get_num_threads() == before and "OMP_NUM_THREADS" not in os.environ
        set_threads(2)
        assert torch.get_num_threads() == 2 and os.environ["OMP_NUM_THREADS"] == "2"
    finally:
        torch.set_num_threads(before)
    with pytest.raises(ValueError, match="threads must be 0"):
        set_threads(-1)
