"""What each kernel is worth on the commands users run: each one replaced by what would run without it.

A loop or a char-CNN path stays in the package only if removing it makes a documented command at
least 10% slower. This times, side by side in one process (variants taking turns, best round of
each by CPU time, one thread), two such commands with the shipped kernels and with each one
replaced:

- ``embed``: ``Embedder.layers`` at the original size (4096 cells projected to 512) on batches of
  32 dev sentences, word cache off, as ``bench_batch32`` times it. Without the inference loop the
  training loop's forward would run (no gradients); without the table char-CNN, ``nn.Conv1d``.
- ``pretrain``: training steps (loss, backward, clipping, update) of ``configs/bilm_small.cfg``'s
  biLM on generated sentences, as ``bench_pretrain`` takes them. Without the training loop the
  reference loop would run under autograd; without the table char-CNN, ``nn.Conv1d``.

The reduced precisions run only in the inference loop: ``bench_precision`` times what they buy.

    python -m benchmarks.bench_kernels [--rounds 3] [--batches 2] [--steps 4] [--only embed|pretrain]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import time
from pathlib import Path
from typing import Callable, Iterator

import torch

from spacy_elmo import BiLM
from spacy_elmo.config import BiLMConfig
from spacy_elmo.embedding import Embedder
from spacy_elmo.nn import lstm
from spacy_elmo.nn.lstm.reference import run_reference
from spacy_elmo.nn.lstm.training import run_training
from spacy_elmo.nn.words.char_cnn import CharEncoder
from spacy_elmo.pretrain.data.step_inputs import StepInputBuilder
from spacy_elmo.pretrain.initialization import fresh_model
from spacy_elmo.pretrain.language_model_objective import LanguageModelObjective
from spacy_elmo.pretrain.optim import make_optimizer
from spacy_elmo.pretrain.settings import load_config, settings_from_config
from spacy_elmo.pretrain.softmax import SoftmaxLoss
from spacy_elmo.pretrain.vocab import SPECIALS, Vocabulary

from .bench_embed import SIZES, load_sentences
from .bench_pretrain import make_sentences, training_step
from .thread_pools import rerun_with_pools_of

REPO = Path(__file__).resolve().parents[1]
DEV = REPO / "corpus" / "text" / "dev.txt"  # written by the project's preprocess step


@contextlib.contextmanager
def lstm_without_inference_loop() -> Iterator[None]:
    original = lstm.run_inference
    lstm.run_inference = lambda stacks, inputs, active, precision="float32": run_training(stacks, inputs, active)
    try:
        yield
    finally:
        lstm.run_inference = original


@contextlib.contextmanager
def lstm_without_training_loop() -> Iterator[None]:
    original = lstm.run_training
    lstm.run_training = lambda stacks, inputs, active, masks=(), dtype=None: run_reference(
        stacks, inputs, active, masks
    )
    try:
        yield
    finally:
        lstm.run_training = original


@contextlib.contextmanager
def char_cnn_without_tables() -> Iterator[None]:
    original = CharEncoder.forward
    CharEncoder.forward = lambda self, ids, precision="float32", use_tables=None: original(self, ids, precision, False)
    try:
        yield
    finally:
        CharEncoder.forward = original


def race(name: str, work: Callable[[], None], units: int, variants: dict, rounds: int) -> None:
    """Each variant in turn, ``rounds`` times; the best round's units per CPU-second, and its ratio."""
    best = {label: float("inf") for label in variants}
    work()  # warm-up: allocations, derived tables
    for _ in range(rounds):
        for label, replaced in variants.items():
            with replaced():
                start = time.process_time()
                work()
                best[label] = min(best[label], time.process_time() - start)
    shipped = best["shipped"]
    print(f"{name}: {units:,} tokens per round, best of {rounds}, load {os.getloadavg()[0]:.2f}")
    for label, seconds in best.items():
        print(f"  {label:32s} {units / seconds:9.1f} tok/CPU-s   shipped is {seconds / shipped:5.2f}x as fast")


def embed_race(args: argparse.Namespace) -> None:
    torch.manual_seed(0)
    sentences = load_sentences(args.text, "whitespace", None)[: 32 * args.batches]
    batches = [sentences[i : i + 32] for i in range(0, len(sentences), 32)]
    embedder = Embedder(BiLM(BiLMConfig(**SIZES["original"])).eval(), word_cache_words=0)
    variants = {
        "shipped": contextlib.nullcontext,
        "LSTM: training loop's forward": lstm_without_inference_loop,
        "char-CNN: Conv1d": char_cnn_without_tables,
    }
    race(
        "embed (original size, batches of 32)",
        lambda: [embedder.layers(b) for b in batches],
        sum(map(len, sentences)),
        variants,
        args.rounds,
    )


def pretrain_race(args: argparse.Namespace) -> None:
    settings = settings_from_config(load_config(REPO / "configs" / "bilm_small.cfg"))
    rng = random.Random(0)
    words = [f"w{i:05d}" if i % 3 else f"word{i}" for i in range(20_000)]
    vocab = Vocabulary(list(SPECIALS) + words)
    model = fresh_model(settings.model, vocab, seed=0)
    training = settings.training
    objective = LanguageModelObjective(
        model, SoftmaxLoss(len(vocab), settings.softmax.n_negatives), training.dropout, training.lstm_dropout
    )
    optimizer = make_optimizer(objective.parameters(), training)
    n_sentences = max(1, min(training.max_batch_sentences, training.batch_tokens // 31))
    batches = [StepInputBuilder(vocab).encode(make_sentences(rng, words, n_sentences, 25)) for _ in range(args.steps)]
    variants = {
        "shipped": contextlib.nullcontext,
        "LSTM: reference loop (autograd)": lstm_without_training_loop,
        "char-CNN: Conv1d": char_cnn_without_tables,
    }
    race(
        f"pretrain (bilm_small, {args.steps} steps)",
        lambda: [training_step(objective, optimizer, b, training.grad_clip) for b in batches],
        sum(b.n_tokens for b in batches),
        variants,
        args.rounds,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batches", type=int, default=2, help="embed: batches of 32 sentences per round")
    parser.add_argument("--steps", type=int, default=4, help="pretrain: training steps per round")
    parser.add_argument("--text", type=Path, default=DEV)
    parser.add_argument("--only", choices=("embed", "pretrain"))
    args = parser.parse_args()
    rerun_with_pools_of(1, "benchmarks.bench_kernels")
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread, load {os.getloadavg()[0]:.2f}")
    if args.only != "pretrain":
        embed_race(args)
    if args.only != "embed":
        pretrain_race(args)


if __name__ == "__main__":
    main()
