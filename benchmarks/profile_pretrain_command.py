"""Where ``spacy-elmo pretrain``'s time goes, end to end, by CPU time per training step.

Runs the real command in this process (today's tree) on the real text, with CPU-time clocks
around each part a step goes through: reading and batching the corpus (the stream), char ids
and targets (``StepInputBuilder.encode``), the char-CNN, the LSTMs and the softmax forward and
backward, gradient clipping, the optimizer, and what is left (the loop's own bookkeeping and
autograd's engine). Steps ``--skip + 1`` to ``--steps`` are reported (the first ones pay for
allocations and the first chunk of the corpus). One torch thread::

    python -m benchmarks.profile_pretrain_command [--steps 24] [--skip 4] [--train PATH] [--config PATH]
        [--set training.batch_tokens=4096 ...]

The clocks nest (the LSTM's forward is inside the objective's forward); the table gives each
part's own time, without the parts inside it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO / "corpus" / "text" / "train.txt"  # written by the project's preprocess step


class NestedClock:
    """CPU seconds per named part, each part's own time (inner parts subtracted)."""

    def __init__(self) -> None:
        self.own: dict[str, float] = defaultdict(float)
        self.stack: list[list[Any]] = []
        self.recording = False

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        start = time.process_time()
        self.stack.append([name, 0.0])
        try:
            yield
        finally:
            _, inner = self.stack.pop()
            spent = time.process_time() - start
            if self.recording:
                self.own[name] += spent - inner
            if self.stack:
                self.stack[-1][1] += spent

    def wrap(self, name: str, fn: Callable) -> Callable:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.part(name):
                return fn(*args, **kwargs)

        return timed


def install(clock: NestedClock, steps: int, skip: int, marks: list[float]) -> None:
    """Wrap every part the loop goes through (class attributes, so the real code calls them)."""
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    from spacy_elmo.nn.lstm import training as lstm_training
    from spacy_elmo.nn.words import char_cnn, char_tables
    from spacy_elmo.pretrain import language_model_objective, softmax
    from spacy_elmo.pretrain.data import batches, step_inputs

    def patch_static(cls: type, name: str, label: str) -> None:
        setattr(cls, name, staticmethod(clock.wrap(label, getattr(cls, name))))

    patch_static(lstm_training._LayerFunction, "forward", "LSTM forward")
    patch_static(lstm_training._LayerFunction, "backward", "LSTM backward")
    softmax.sampled_softmax_nll = clock.wrap("softmax forward", softmax.sampled_softmax_nll)
    softmax.exact_nll_sum = clock.wrap("softmax forward", softmax.exact_nll_sum)
    patch_static(char_tables._PooledLookup, "backward", "char-CNN backward (lookups)")
    char_cnn.CharEncoder.forward = clock.wrap("char-CNN forward", char_cnn.CharEncoder.forward)
    language_model_objective.LanguageModelObjective.forward = clock.wrap(
        "forward: the rest (sorting, gathers, dropout)", language_model_objective.LanguageModelObjective.forward
    )
    step_inputs.StepInputBuilder.encode = clock.wrap(
        "char ids and targets (encode)", step_inputs.StepInputBuilder.encode
    )
    torch.Tensor.backward = clock.wrap("backward: the rest (autograd, char-CNN, highway)", torch.Tensor.backward)
    torch.nn.utils.clip_grad_norm_ = clock.wrap("gradient clipping", torch.nn.utils.clip_grad_norm_)

    original_iter = batches.RankStream.__iter__

    def timed_iter(self: Any) -> Iterator[Any]:
        inner = original_iter(self)
        while True:
            with clock.part("data (read, split, batch)"):
                item = next(inner)
            yield item

    batches.RankStream.__iter__ = timed_iter
    held: dict[str, Any] = {}

    def before(optimizer: Any, *_: Any) -> None:
        held["part"] = clock.part("optimizer step")
        held["part"].__enter__()

    def after(optimizer: Any, *_: Any) -> None:
        held.pop("part").__exit__(None, None, None)
        marks.append(time.process_time())
        clock.recording = skip <= len(marks) - 1 < steps

    register_optimizer_step_pre_hook(before)
    register_optimizer_step_post_hook(after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "bilm_small.cfg")
    parser.add_argument("--train", type=Path, default=TRAIN)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--skip", type=int, default=4)
    parser.add_argument("--set", action="append", default=[], help="config overrides, e.g. training.batch_tokens=4096")
    args = parser.parse_args()
    clock, marks = NestedClock(), []
    install(clock, args.steps, args.skip, marks)
    from spacy_elmo.cli import main as cli_main

    overrides = [f"--{item.split('=', 1)[0]}={item.split('=', 1)[1]}" for item in args.set]
    with tempfile.TemporaryDirectory() as out:
        sys.argv = [
            "spacy-elmo",
            "pretrain",
            str(args.config),
            str(Path(out) / "run"),
            "--paths.train",
            str(args.train),
            "--corpus.pretokenized",
            "true",
            "--training.max_steps",
            str(args.steps),
            "--training.eval_every",
            "100000",
            "--training.checkpoint_every",
            "100000",
            "--system.threads",
            "1",
            *overrides,
        ]
        load = os.getloadavg()[0]
        try:
            cli_main()
        except SystemExit:
            pass
    n = args.steps - args.skip
    total = marks[args.steps - 1] - marks[args.skip - 1]
    print(
        f"\nsteps {args.skip + 1}-{args.steps}, one torch thread ({torch.get_num_threads()}), load {load:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    print(f"CPU seconds per step: {total / n:.4f}")
    for name, seconds in sorted(clock.own.items(), key=lambda item: -item[1]):
        print(f"  {name:52s} {seconds / n:.4f}  {100 * seconds / total:5.1f}%")
    other = total - sum(clock.own.values())
    print(f"  {'the loop outside these parts':52s} {other / n:.4f}  {100 * other / total:5.1f}%")


if __name__ == "__main__":
    main()
