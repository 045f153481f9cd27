"""The optimizer and its learning-rate warm-up.

Adagrad with an initial accumulator of 1.0 is bilm-tf's recipe (lr 0.2); Adam is there for
small models and short runs. The learning rate is a pure function of the step, so resuming
needs no scheduler state.
"""
from __future__ import annotations

from typing import Iterable

import torch

from .settings import TrainingSettings


def make_optimizer(parameters: Iterable[torch.nn.Parameter], settings: TrainingSettings) -> torch.optim.Optimizer:
    if settings.optimizer == "adagrad":
        return torch.optim.Adagrad(
            parameters, lr=settings.learning_rate, initial_accumulator_value=settings.adagrad_initial_accumulator
        )
    return torch.optim.Adam(parameters, lr=settings.learning_rate, betas=(settings.adam_beta1, settings.adam_beta2))


def learning_rate_at(step: int, settings: TrainingSettings) -> float:
    """Linear warm-up over ``warmup_steps`` (step counts from 0), then constant."""
    if settings.warmup_steps <= 0:
        return settings.learning_rate
    return settings.learning_rate * min(1.0, (step + 1) / settings.warmup_steps)


def set_learning_rate(optimizer: torch.optim.Optimizer, value: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = value
