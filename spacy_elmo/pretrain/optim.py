"""The optimizer and its learning-rate schedule: warm-up, then an optional decay.

Adagrad with an initial accumulator of 1.0 is bilm-tf's recipe (lr 0.2); Adam is there for
small models and short runs. The learning rate is a pure function of the step and of how much
of the budget is done, so resuming needs no scheduler state beyond the run's counters.
"""

from __future__ import annotations

import math
from typing import Iterable, Optional

import torch
from torch.autograd.graph import increment_version

from .settings import TrainingSettings

# torch's fused implementations: one kernel over every parameter (13 ms a step instead of 67
# for Adam on a CPU at the small size, ~5% of a step). They update the parameters without
# advancing their version counters, which the tensors derived from the weights for evaluation
# (nn/derived_cache.py) watch: without the hook below, dev perplexity was computed with stale
# weights (339 instead of ~249 after 600 steps of configs/bilm_small.cfg). So every step of a
# fused optimizer ends by advancing the counters itself.
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
    """The rate of step ``step`` (counted from 0): a linear warm-up over ``warmup_steps``,
    then ``lr_decay`` from ``learning_rate`` to ``min_learning_rate`` as ``progress`` (the
    share of the decay span done before this step, :func:`decay_progress`) goes from 0 to 1."""
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
    """How much of the decay span is done before step ``step``, in [0, 1].

    The span runs from the end of the warm-up to the end of the budget: in tokens when
    ``max_tokens`` is set (from ``decay_start_tokens``, the tokens done when the warm-up
    ended), else in steps. Counted in tokens, it is the same on every machine and every number
    of processes, like the budget itself.
    """
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
