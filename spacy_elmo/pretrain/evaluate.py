"""Dev perplexity of each direction, with the exact full softmax, and the dev batches it reads."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Callable, ContextManager, Optional, Sequence

import torch

from ..embedding.batching import length_sorted_batches
from ..nn.bilm import BiLM
from .data.sentences import Tokens
from .data.step_inputs import StepInputBuilder, StepInputs
from .distributed import Distributed
from .language_model_objective import exact_direction_nll
from .settings import TrainingSettings


@dataclass(frozen=True)
class DevScores:
    perplexity_forward: float
    perplexity_backward: float
    n_tokens: int

    @property
    def perplexity(self) -> float:
        """The mean of the two directions' perplexities: what ``model-best`` is chosen by."""
        return 0.5 * (self.perplexity_forward + self.perplexity_backward)


def dev_batches(
    sentences: Sequence[Tokens],
    encoder: StepInputBuilder,
    training: TrainingSettings,
    rank: int = 0,
    world_size: int = 1,
) -> list[StepInputs]:
    """This process's share of the dev sentences (every ``world_size``-th from ``rank``), grouped
    by length into batches of twice the training token budget (no gradients to hold)."""
    mine = sentences[rank::world_size]
    lengths = [len(s) + 2 for s in mine]
    groups = length_sorted_batches(lengths, training.max_batch_sentences, 2 * training.batch_tokens)
    return [encoder.encode([mine[i] for i in group]) for group in groups]


def dev_perplexity(
    bilm: BiLM,
    batches: Sequence[StepInputs],
    context: Distributed,
    autocast: Callable[[], ContextManager] = contextlib.nullcontext,
) -> Optional[DevScores]:
    """Each process scores its own part of the dev set; the sums are added up over processes.

    Returns ``None`` when no process has dev text.
    """
    was_training = bilm.training
    bilm.eval()
    totals = torch.zeros(3, dtype=torch.float64)
    with torch.no_grad():
        for batch in batches:
            batch = batch.to(context.device)
            with autocast():
                sums = exact_direction_nll(bilm, batch.char_ids, batch.lengths, batch.targets)
            totals += torch.tensor([float(sums[0]), float(sums[1]), batch.n_tokens], dtype=torch.float64)
    bilm.train(was_training)
    context.all_reduce_sum(totals)
    nll_forward, nll_backward, n = totals.tolist()
    if n == 0:
        return None
    return DevScores(_safe_exp(nll_forward / n), _safe_exp(nll_backward / n), int(n))


def _safe_exp(value: float) -> float:
    return math.exp(value) if value < 700 else float("inf")
