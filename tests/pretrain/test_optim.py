"""The fused optimizers take the same steps as torch's plain ones (to float rounding)."""

import pytest
import torch

from spacy_elmo.pretrain import optim
from spacy_elmo.pretrain.settings import TrainingSettings


@pytest.mark.parametrize("name", ["adam", "adagrad"])
def test_fused_optimizer_takes_the_plain_steps(name, monkeypatch):
    settings = TrainingSettings(optimizer=name, learning_rate=0.05)
    results = []
    for fused in (True, False):
        monkeypatch.setattr(optim, "USE_FUSED", fused)
        torch.manual_seed(0)
        parameters = [torch.nn.Parameter(torch.randn(7, 5)), torch.nn.Parameter(torch.randn(3))]
        optimizer = optim.make_optimizer(parameters, settings)
        assert optimizer.defaults.get("fused") is (True if fused else None)
        for step in range(5):
            for p in parameters:
                p.grad = torch.sin(p.detach() * (step + 1))
            optimizer.step()
        results.append([p.detach().clone() for p in parameters])
    for fused, plain in zip(*results):
        assert not torch.equal(fused, torch.zeros_like(fused))
        torch.testing.assert_close(fused, plain, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["adam", "adagrad"])
def test_a_step_is_seen_by_the_derived_weight_caches(name):
    """Every step must advance each parameter's version counter: evaluation rebuilds the tensors
    it derives from the weights only when a version moves (fused kernels do not move them)."""
    from spacy_elmo.nn.derived_cache import DerivedTensors

    weight = torch.nn.Parameter(torch.ones(3, 3))
    optimizer = optim.make_optimizer([weight], TrainingSettings(optimizer=name, learning_rate=0.1))
    cache = DerivedTensors()
    before = cache.get([weight], lambda: weight.detach().clone())
    weight.grad = torch.ones(3, 3)
    optimizer.step()
    after = cache.get([weight], lambda: weight.detach().clone())
    assert not torch.equal(before, after)
    torch.testing.assert_close(after, weight.detach())
