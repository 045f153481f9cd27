"""Pretraining throughput against the machine's matmul roofline.

For each config (default: ``configs/bilm_small.cfg`` and ``configs/bilm_original.cfg``) this
times full training steps (forward, backward, gradient clipping, optimizer step) on generated
sentences, counts the FLOPs those steps must do (matmuls and convolutions of the char-CNN,
both LSTM stacks and the softmax, forward + backward = 3x forward), and divides the achieved
FLOP rate by the GEMM rate measured in the same process. It prints the thread count, the load
average (a busy machine makes every number here meaningless) and the peak RSS.

    python -m benchmarks.bench_pretrain [--threads 1] [--config PATH ...] [--steps 5] [--full-softmax]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from spacy_elmo.config import BiLMConfig
from spacy_elmo.nn.words.char_ids import MAX_WORD_LENGTH
from spacy_elmo.pretrain.data.step_inputs import StepInputBuilder
from spacy_elmo.pretrain.initialization import fresh_model
from spacy_elmo.pretrain.language_model_objective import LanguageModelObjective
from spacy_elmo.pretrain.optim import make_optimizer
from spacy_elmo.pretrain.settings import PretrainSettings, load_config, settings_from_config
from spacy_elmo.pretrain.softmax import SoftmaxLoss
from spacy_elmo.pretrain.vocab import SPECIALS, Vocabulary

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Flops:
    """Forward FLOPs per input position (char-CNN, LSTMs) and per prediction (softmax)."""

    char_cnn: float
    lstm: float
    softmax: float


def forward_flops(config: BiLMConfig, vocab_size: int, n_negatives: int) -> Flops:
    d = config.char_embed_dim
    conv = sum(2 * d * width * n * (MAX_WORD_LENGTH - width + 1) for width, n in config.filters)
    nf = config.n_filters
    highway = config.n_highway * 2 * nf * 2 * nf
    projection = 2 * nf * config.projection_dim
    c, p = config.lstm_dim, config.projection_dim
    lstm = 0
    for _ in range(config.n_layers):
        input_dim = p  # the char-CNN projects to P, so every layer reads P
        lstm += 2 * (2 * input_dim * 4 * c + 2 * p * 4 * c + 2 * c * p)  # two directions
    scored = vocab_size if not 0 < n_negatives < vocab_size else n_negatives + 1
    softmax = 2 * 2 * p * scored  # two directions
    return Flops(conv + highway + projection, lstm, softmax)


@dataclass
class Rate:
    """FLOP/s by wall-clock time and by this process's CPU time (per thread). On a shared
    machine the wall rate includes waiting for a core; the CPU rate does not."""

    wall: float
    cpu: float

    def best(self, other: "Rate") -> "Rate":
        return Rate(max(self.wall, other.wall), max(self.cpu, other.cpu))


def gemm_rate(seconds: float = 2.0) -> Rate:
    """Best FLOP/s of square and LSTM-shaped float32 matmuls on this thread count."""
    best = Rate(0.0, 0.0)
    threads = torch.get_num_threads()
    for m, k, n in ((1024, 1024, 1024), (512, 512, 2048), (2048, 512, 4096), (256, 512, 16384)):
        a, b = torch.randn(m, k), torch.randn(k, n)
        for _ in range(2):
            a @ b
        count, start, start_cpu = 0, time.perf_counter(), time.process_time()
        while time.perf_counter() - start < seconds / 4:
            a @ b
            count += 1
        flops = 2 * m * k * n * count
        wall, cpu = time.perf_counter() - start, (time.process_time() - start_cpu) / threads
        best = best.best(Rate(flops / wall, flops / max(cpu, 1e-9)))
    return best


def make_sentences(rng: random.Random, words: list[str], n_sentences: int, mean_length: int) -> list[list[str]]:
    """Zipf-distributed words, lengths around ``mean_length`` (one length-sorted batch)."""
    weights = [1.0 / (i + 1) for i in range(len(words))]
    lengths = [max(3, int(rng.gauss(mean_length, 2))) for _ in range(n_sentences)]
    return [rng.choices(words, weights, k=n) for n in lengths]


def training_step(objective: torch.nn.Module, optimizer: torch.optim.Optimizer, batch, grad_clip: float) -> None:
    """One pretraining step as the training loop takes it: loss, backward, clipping, update."""
    sums = objective(batch.char_ids, batch.lengths, batch.targets)
    loss = sums.sum() / (2.0 * batch.n_tokens)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(objective.parameters(), grad_clip)
    optimizer.step()


def bench(settings: PretrainSettings, name: str, steps: int, vocab_size: int, batch_tokens: int, peak: Rate) -> None:
    rng = random.Random(0)
    words = [f"w{i:06d}" if i % 3 else f"word{i}" for i in range(vocab_size - len(SPECIALS))]
    vocab = Vocabulary(list(SPECIALS) + words)
    model = fresh_model(settings.model, vocab, seed=0)
    n_negatives = settings.softmax.n_negatives
    objective = LanguageModelObjective(
        model,
        SoftmaxLoss(len(vocab), n_negatives),
        settings.training.dropout,
        settings.training.lstm_dropout,
    )
    optimizer = make_optimizer(objective.parameters(), settings.training)
    encoder = StepInputBuilder(vocab)
    mean_length = 25
    batch_tokens = batch_tokens or settings.training.batch_tokens
    n_sentences = max(1, min(settings.training.max_batch_sentences, batch_tokens // (mean_length + 6)))
    batches = [encoder.encode(make_sentences(rng, words, n_sentences, mean_length)) for _ in range(steps + 1)]

    def step(batch) -> None:
        training_step(objective, optimizer, batch, settings.training.grad_clip)

    step(batches[0])  # warm-up: allocations, first-call costs
    start, start_cpu = time.perf_counter(), time.process_time()
    for batch in batches[1:]:
        step(batch)
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - start_cpu

    predictions = sum(b.n_tokens for b in batches[1:])
    positions = sum(int(b.lengths.sum()) for b in batches[1:])
    # Training encodes each distinct word of a batch once, so that is the char-CNN work needed.
    words = sum(int(torch.unique(b.char_ids.reshape(-1, MAX_WORD_LENGTH), dim=0).shape[0]) for b in batches[1:])
    flops = forward_flops(model.config, len(vocab), n_negatives)
    total = 3 * (flops.char_cnn * words + flops.lstm * positions + flops.softmax * predictions)
    softmax_kind = f"sampled ({n_negatives} negatives)" if 0 < n_negatives < len(vocab) else "full"
    print(
        f"\n== {name}: lstm {model.config.lstm_dim}/{model.config.projection_dim}, {model.config.n_layers} layers, "
        f"{model.config.n_filters} filters, {model.config.n_highway} highway, vocab {len(vocab):,}, {softmax_kind} softmax"
    )
    print(
        f"   batch: {n_sentences} sentences, {positions // steps:,} positions ({words // steps:,} distinct words), "
        f"{predictions // steps:,} predictions/direction per step"
    )
    print(
        f"   forward FLOPs: char-CNN {flops.char_cnn / 1e6:.2f}M per distinct word, LSTMs {flops.lstm / 1e6:.2f}M per position, "
        f"softmax {flops.softmax / 1e6:.2f}M per prediction (both directions); training step = 3x forward"
    )
    per_thread_cpu = cpu_seconds / torch.get_num_threads()
    peak = peak.best(gemm_rate())  # measured again right after: the better of the two
    print(
        f"   {steps} steps in {seconds:.2f}s wall, {cpu_seconds:.2f}s CPU: "
        f"{predictions / seconds:,.0f} tokens/s (predictions per direction) = {total / seconds / 1e9:.1f} GFLOP/s "
        f"= {100 * total / seconds / peak.wall:.0f}% of the GEMM rate by wall time; "
        f"{predictions / per_thread_cpu:,.0f} tokens per CPU-second = {100 * total / per_thread_cpu / peak.cpu:.0f}% by CPU time"
    )


def main() -> None:
    sys.stdout.reconfigure(line_buffering=True)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--config", action="append", type=Path, help="config(s) to time (default: small and original)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument(
        "--max-vocab-size",
        type=int,
        default=100_000,
        help="cap on the output vocabulary (the original's 793k words need ~12 GB with dense Adagrad state; "
        "sampled-softmax FLOPs do not depend on it, only the optimizer's dense update does). 0: no cap",
    )
    parser.add_argument("--batch-tokens", type=int, default=0, help="override training.batch_tokens (0: keep)")
    parser.add_argument(
        "--full-softmax", action="store_true", help="time the full softmax even where the config samples"
    )
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    load1, load5, _ = os.getloadavg()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} CPUs, load average {load1:.2f} (1 min) {load5:.2f} (5 min)"
    )
    if load1 > 0.5:
        print(
            f"WARNING: the machine is not idle (load {load1:.2f}); the numbers below are lower than the hardware allows"
        )
    peak = gemm_rate()
    print(
        f"GEMM rate (float32, best of 4 shapes): {peak.wall / 1e9:.1f} GFLOP/s by wall time, {peak.cpu / 1e9:.1f} by CPU time"
    )
    configs = args.config or [REPO / "configs" / "bilm_small.cfg", REPO / "configs" / "bilm_original.cfg"]
    for path in configs:
        settings = settings_from_config(load_config(path, {"softmax.n_negatives": 0} if args.full_softmax else {}))
        steps = args.steps if settings.model.lstm_dim <= 1024 else max(2, min(args.steps, 3))
        vocab_size = settings.vocab.size if not args.max_vocab_size else min(settings.vocab.size, args.max_vocab_size)
        if vocab_size < settings.vocab.size:
            print(
                f"\n(vocabulary capped at {vocab_size:,} of the config's {settings.vocab.size:,} words: --max-vocab-size)"
            )
        bench(settings, path.stem, steps, vocab_size, args.batch_tokens, peak)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS {rss:,.0f} MB; load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
