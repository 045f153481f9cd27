"""The optimizer's steps are seen by the tensors evaluation derives from the weights."""

import pytest
import torch

from spacy_elmo.pretrain import optim
from spacy_elmo.pretrain.settings import TrainingSettings


@pytest.mark.parametrize("name", ["adam", "adagrad"])
def test_a_step_is_seen_by_the_derived_weight_caches(name):
    """Every step must advance each parameter's version counter: evaluation rebuilds the tensors
    it derives from the weights only when a version moves (torch's fused optimizers do not)."""
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
