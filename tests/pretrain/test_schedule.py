"""The learning-rate schedule: warm-up, then none / linear / cosine decay to min_learning_rate."""

import math

import pytest

from spacy_elmo.pretrain.optim import decay_progress, learning_rate_at
from spacy_elmo.pretrain.settings import TrainingSettings


def _settings(**values) -> TrainingSettings:
    return TrainingSettings(**{"learning_rate": 0.1, "warmup_steps": 10, "max_steps": 110, **values})


def test_warmup_is_linear_and_unchanged_by_the_decay():
    for decay in ("none", "linear", "cosine"):
        settings = _settings(lr_decay=decay, min_learning_rate=0.01)
        assert learning_rate_at(0, settings) == pytest.approx(0.01)
        assert learning_rate_at(4, settings) == pytest.approx(0.05)
        assert learning_rate_at(9, settings) == pytest.approx(0.1)


@pytest.mark.parametrize(
    "decay, half, quarter",
    [("none", 0.1, 0.1), ("linear", 0.055, 0.0775), ("cosine", 0.055, 0.01 + 0.09 * 0.5 * (1 + math.cos(math.pi / 4)))],
)
def test_decay_values_by_steps(decay, half, quarter):
    settings = _settings(lr_decay=decay, min_learning_rate=0.01)
    # The span is the 100 steps after the warm-up: step 10 starts it, step 110 would end it.
    assert decay_progress(10, 0, settings, None) == 0.0
    assert decay_progress(60, 0, settings, None) == 0.5
    assert learning_rate_at(10, settings, decay_progress(10, 0, settings, None)) == pytest.approx(0.1)
    assert learning_rate_at(60, settings, decay_progress(60, 0, settings, None)) == pytest.approx(half)
    assert learning_rate_at(35, settings, decay_progress(35, 0, settings, None)) == pytest.approx(quarter)
    end = 0.1 if decay == "none" else 0.01
    assert learning_rate_at(110, settings, decay_progress(110, 0, settings, None)) == pytest.approx(end)
    assert learning_rate_at(500, settings, 7.0) == pytest.approx(end)  # past the budget: held at the end value


def test_decay_by_tokens_counts_from_the_end_of_the_warmup():
    settings = _settings(lr_decay="linear", max_tokens=11_000, max_steps=0)
    assert decay_progress(5, 500, settings, None) == 0.0  # still warming up
    assert decay_progress(10, 1_000, settings, 1_000) == 0.0
    assert decay_progress(50, 6_000, settings, 1_000) == 0.5
    assert learning_rate_at(50, settings, 0.5) == pytest.approx(0.05)
    assert decay_progress(99, 12_000, settings, 1_000) == 1.0
    # Both budgets set: the decay follows the tokens.
    both = _settings(lr_decay="linear", max_tokens=11_000, max_steps=20)
    assert decay_progress(15, 6_000, both, 1_000) == 0.5


def test_schedule_settings_are_checked():
    with pytest.raises(ValueError, match="lr_decay"):
        _settings(lr_decay="exponential")
    with pytest.raises(ValueError, match="min_learning_rate"):
        _settings(min_learning_rate=0.2)
    with pytest.raises(ValueError, match="max_steps or training.max_tokens"):
        _settings(max_steps=0)
    with pytest.raises(ValueError, match="lstm_dropout"):
        _settings(lstm_dropout=1.0)
    with pytest.raises(ValueError, match="negative"):
        _settings(max_tokens=-1)
