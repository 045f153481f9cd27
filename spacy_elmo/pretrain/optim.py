"""The optimizer (bilm-tf's Adagrad, or Adam) and its learning rate, a pure function of the step and
of how much of the budget is done (so a resume needs no scheduler state)."""

from __future__ import annotations

import math
from typing import Iterable, Optional

import torch

from .settings import TrainingSettings


def make_optimizer(parameters: Iterable[torch.nn.Parameter], settings: TrainingSettings) -> torch.optim.Optimizer:
    if settings.optimizer == "adagrad":
        return torch.optim.Adagrad(
            parameters, lr=settings.learning_rate, initial_accumulator_value=settings.adagrad_initial_accumulator
        )
    return torch.optim.Adam(parameters, lr=settings.learning_rate, betas=(settings.adam_beta1, settings.adam_beta2))


def learning_rate_at(step: int, settings: TrainingSettings, progress: float = 0.0) -> float:
    """A linear warm-up, then ``lr_decay`` to ``min_learning_rate`` as ``progress`` goes from 0 to 1."""
    if settings.warmup_steps > 0 and step < settings.warmup_steps:
        return settings.learning_rate * (step + 1) / settings.warmup_steps
    if settings.lr_decay == "none":
        return settings.learning_rate
    done = min(1.0, max(0.0, progress))
    if settings.lr_decay == "linear":
        remaining = 1.0 - done
    else:  # cosine
        remaining = 0.5 * (1.0 + math.cos(math.pi * done))
    return settings.min_learning_rate + (settings.learning_rate - settings.min_learning_rate) * remaining


def decay_progress(step: int, tokens: int, settings: TrainingSettings, decay_start_tokens: Optional[int]) -> float:
    """The share of the budget after the warm-up done before ``step``: in tokens if ``max_tokens`` is set."""
    if step < settings.warmup_steps:
        return 0.0
    if settings.max_tokens > 0:
        start = decay_start_tokens or 0
        done, span = tokens - start, settings.max_tokens - start
    else:
        done, span = step - settings.warmup_steps, settings.max_steps - settings.warmup_steps
    if span <= 0:
        return 1.0
    return min(1.0, max(0.0, done / span))
