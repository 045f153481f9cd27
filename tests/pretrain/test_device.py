"""Choosing the pretraining device: ``auto`` follows what torch sees."""

import pytest
import torch

from spacy_elmo.pretrain.distributed import resolve_device


def test_auto_is_the_cpu_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")


def test_auto_takes_the_gpu_when_torch_sees_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    chosen = []
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    assert resolve_device("auto", local_rank=1) == torch.device("cuda", 1)
    assert chosen == [torch.device("cuda", 1)]


def test_unknown_devices_are_refused():
    with pytest.raises(ValueError, match="auto"):
        resolve_device("meta")
