"""Where a pretraining step's time goes: char-CNN, LSTMs, softmax, optimizer (CPU time).

Runs each part of a training step on its own, forward and backward, on the same batches and
model as ``bench_pretrain.py`` (random weights, generated sentences), and a full step for
comparison. The char-CNN part runs through the objective's hooks (distinct-word reduction,
dropout), as in training. Use one thread; process CPU time is what is reported.

    OMP_NUM_THREADS=1 python -m benchmarks.profile_pretrain [--config PATH] [--steps 5] [--full-softmax]
"""

from __future__ import annotations

import argparse
import functools
import random
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable

import torch

from spacy_elmo.nn.bilm import reverse_padded
from spacy_elmo.nn.lstm import run_stacks
from spacy_elmo.pretrain.data.step_inputs import StepInputBuilder
from spacy_elmo.pretrain.initialization import fresh_model
from spacy_elmo.pretrain.language_model_objective import LanguageModelObjective
from spacy_elmo.pretrain.optim import make_optimizer
from spacy_elmo.pretrain.settings import load_config, settings_from_config
from spacy_elmo.pretrain.softmax import SoftmaxLoss
from spacy_elmo.pretrain.vocab import SPECIALS, Vocabulary

from .bench_pretrain import make_sentences, training_step

REPO = Path(__file__).resolve().parents[1]


class Clock:
    """Accumulates CPU seconds per named part."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def run(self, name: str, fn: Callable[[], object]) -> object:
        start = time.process_time()
        result = fn()
        self.seconds[name] += time.process_time() - start
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "bilm_small.cfg")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--full-softmax", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)

    settings = settings_from_config(load_config(args.config, {"softmax.n_negatives": 0} if args.full_softmax else {}))
    rng = random.Random(0)
    words = [f"w{i:06d}" if i % 3 else f"word{i}" for i in range(settings.vocab.size - len(SPECIALS))]
    vocab = Vocabulary(list(SPECIALS) + words)
    model = fresh_model(settings.model, vocab, seed=0)
    loss_fn = SoftmaxLoss(len(vocab), settings.softmax.n_negatives)
    objective = LanguageModelObjective(model, loss_fn, settings.training.dropout)
    optimizer = make_optimizer(objective.parameters(), settings.training)
    encoder = StepInputBuilder(vocab)
    n_sentences = max(1, min(settings.training.max_batch_sentences, settings.training.batch_tokens // 31))
    batches = [encoder.encode(make_sentences(rng, words, n_sentences, 25)) for _ in range(args.steps + 1)]
    clock = Clock()

    def full_step(batch) -> None:
        training_step(objective, optimizer, batch, settings.training.grad_clip)

    def parts(batch, record: bool) -> None:
        """Each part on its own; the gradients flowing in are random (same shapes)."""
        timer = clock if record else Clock()
        lengths = batch.lengths.to(torch.long)
        order = torch.argsort(lengths, descending=True, stable=True)
        ids, sorted_lengths = batch.char_ids[order], lengths[order]
        flat = ids.reshape(-1, ids.shape[-1])
        unique, inverse = torch.unique(flat, dim=0, return_inverse=True)
        vectors = timer.run("char-CNN fwd", lambda: model.char_encoder(unique))
        grad = torch.randn_like(vectors)
        timer.run("char-CNN bwd", lambda: vectors.backward(grad))
        tokens = vectors.detach()[inverse].reshape(*ids.shape[:2], -1)
        both = torch.stack([tokens, reverse_padded(tokens, sorted_lengths)]).requires_grad_(True)
        stacks = [model.forward_lstm, model.backward_lstm]
        # As in training (objective.py: final_boundary=False): each direction stops one step
        # early, since the boundary read last predicts nothing.
        steps = (sorted_lengths - 1).clamp(min=0)
        layers = timer.run("LSTM fwd", lambda: run_stacks(stacks, both, steps))
        grads = [torch.randn_like(layer) for layer in layers]
        timer.run("LSTM bwd", lambda: torch.autograd.backward(layers, grads))
        hidden = torch.randn(int(batch.n_tokens), model.config.projection_dim, requires_grad=True)
        targets = batch.targets[:, 1:][batch.targets[:, 1:] >= 0][: hidden.shape[0]]
        hidden = hidden[: targets.shape[0]]
        nll = timer.run(
            "softmax fwd (x2 dirs)",
            lambda: sum(loss_fn.training_nll_sum(hidden, model.softmax, targets) for _ in range(2)),
        )
        timer.run("softmax bwd (x2 dirs)", lambda: nll.backward())
        for p in objective.parameters():
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        clip = settings.training.grad_clip
        timer.run(
            "clip + optimizer", lambda: (torch.nn.utils.clip_grad_norm_(objective.parameters(), clip), optimizer.step())
        )
        optimizer.zero_grad(set_to_none=True)

    full_step(batches[0])
    parts(batches[0], record=False)
    for batch in batches[1:]:
        clock.run("full step", functools.partial(full_step, batch))
    for batch in batches[1:]:
        parts(batch, record=True)
    n = args.steps
    total = clock.seconds.pop("full step")
    softmax = (
        f"sampled softmax ({settings.softmax.n_negatives} negatives)"
        if settings.softmax.n_negatives
        else "full softmax"
    )
    print(f"{softmax}, {n} steps, one thread, CPU seconds per step:")
    print(f"  full step: {total / n:.3f}")
    for name, seconds in clock.seconds.items():
        print(f"  {name:24s} {seconds / n:.3f}  ({100 * seconds / total:.0f}% of a full step)")
    print(f"  sum of parts: {sum(clock.seconds.values()) / n:.3f}")


if __name__ == "__main__":
    main()
