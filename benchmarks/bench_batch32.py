"""The original size (4096 cells projected to 512) called on 32 sentences at a time, against the
AllenNLP-style plain loop (:mod:`benchmarks.plain_elmo`) on the same batches, side by side.

Sentences of the project's dev text in corpus order, cut into batches of ``--batch`` (32, as a
user calling ``embed_layers`` on each batch, or AllenNLP's embedder with ``batch_size=32``);
random weights at the published size; one torch thread. The two implementations take turns
batch set by batch set (``--repeats`` rounds), each timed by process CPU time and wall time;
the best round of each is reported with the load average, and the outputs are compared.

    python -m benchmarks.bench_batch32 [--size original] [--batches 4] [--repeats 2] [--batch 32]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy
import torch

from spacy_elmo import BiLM
from spacy_elmo.config import BiLMConfig
from spacy_elmo.embedding import Embedder

from .bench_embed import SIZES, load_sentences
from .plain_elmo import plain_embed_layers
from .thread_pools import rerun_with_pools_of

DEV = Path(__file__).resolve().parents[1] / "corpus" / "text" / "dev.txt"  # written by the project's preprocess step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="original", choices=sorted(SIZES))
    parser.add_argument("--text", type=Path, default=DEV)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--skip-plain", action="store_true", help="time only our loop")
    args = parser.parse_args()
    rerun_with_pools_of(1, "benchmarks.bench_batch32")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    sentences = load_sentences(args.text, "whitespace", None)[: args.batch * args.batches]
    batches = [sentences[i : i + args.batch] for i in range(0, len(sentences), args.batch)]
    n_tokens = sum(len(s) for s in sentences)
    model = BiLM(BiLMConfig(**SIZES[args.size])).eval()
    embedder = Embedder(model, word_cache_words=0)
    ours = lambda: [layer for batch in batches for layer in embedder.layers(batch)]  # noqa: E731
    plain = lambda: [layer for batch in batches for layer in plain_embed_layers(model, batch, batch_size=args.batch)]  # noqa: E731
    runs = {"ours": ours} if args.skip_plain else {"ours": ours, "plain": plain}
    best = {name: (float("inf"), float("inf")) for name in runs}
    outputs = {}
    load_before = os.getloadavg()[0]
    for _ in range(args.repeats):
        for name, run in runs.items():
            cpu, wall = time.process_time(), time.perf_counter()
            outputs[name] = run()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
            print(
                f"  {name}: {n_tokens / cpu:7.1f} tok/CPU-s {n_tokens / wall:7.1f} tok/wall-s  load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    print(
        f"{args.size}, {len(batches)} batches of {args.batch} sentences ({n_tokens:,} tokens), one thread "
        f"({torch.get_num_threads()}), load {load_before:.2f} -> {os.getloadavg()[0]:.2f}"
    )
    for name, (cpu, wall) in best.items():
        print(
            f"  {name:5s}: {n_tokens / cpu:7.1f} tok/s by CPU time, {n_tokens / wall:7.1f} by wall time (best of {args.repeats})"
        )
    if "plain" in best:
        print(
            f"  ours / plain: {best['plain'][0] / best['ours'][0]:.2f}x by CPU time, {best['plain'][1] / best['ours'][1]:.2f}x by wall time"
        )
        diff = max(float(numpy.abs(a - b).max()) for a, b in zip(outputs["ours"], outputs["plain"]))
        print(f"  largest difference between the two: {diff:.2e}")


if __name__ == "__main__":
    main()
