"""The optimizer (bilm-tf's Adagrad, or Adam for small models) and its learning rate: a warm-up,
then an optional decay, a pure function of the step and of how much of the budget is done (so a
resume needs no scheduler state)."""

from __future__ import annotations

import math
from typing import Iterable, Optional

import torch
from torch.autograd.graph import increment_version

from .settings import TrainingSettings

# torch's fused optimizers (one kernel over every parameter) do not advance the parameters'
# version counters, which the tensors derived from the weights for evaluation watch
# (nn/derived_cache.py): every step of a fused optimizer advances them itself.
USE_FUSED = True


def make_optimizer(parameters: Iterable[torch.nn.Parameter], settings: TrainingSettings) -> torch.optim.Optimizer:
    parameters = list(parameters)
    fused = USE_FUSED and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in parameters)
    options = {"fused": True} if fused else {}
    optimizer: torch.optim.Optimizer
    if settings.optimizer == "adagrad":
        optimizer = torch.optim.Adagrad(
            parameters,
            lr=settings.learning_rate,
            initial_accumulator_value=settings.adagrad_initial_accumulator,
            **options,
        )
    else:
        optimizer = torch.optim.Adam(
            parameters, lr=settings.learning_rate, betas=(settings.adam_beta1, settings.adam_beta2), **options
        )
    if fused:
        optimizer.register_step_post_hook(lambda *_: increment_version(parameters))
    return optimizer


def learning_rate_at(step: int, settings: TrainingSettings, progress: float = 0.0) -> float:
    """The rate of step ``step`` (from 0): a linear warm-up over ``warmup_steps``, then ``lr_decay``
    to ``min_learning_rate`` as ``progress`` (:func:`decay_progress`) goes from 0 to 1."""
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
    """How much of the span from the end of the warm-up to the end of the budget is done before
    step ``step``, in [0, 1]: in tokens when ``max_tokens`` is set (the same on any number of
    processes, like the budget), else in steps."""
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


def set_learning_rate(optimizer: torch.optim.Optimizer, value: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = value
