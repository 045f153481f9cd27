"""The ``precision`` setting on a CPU: float32, bfloat16 and int8 side by side in one process.

Original size (4096 cells projected to 512, two layers, the original char-CNN), random
weights (biases too, so no path is trivially skipped), one torch thread. Sentences of the
project's dev text (else the bundled sample) in corpus order, cut into batches of ``--batch``
sentences; an :class:`~spacy_elmo.embedding.Embedder` per precision (word cache off: every
batch runs the char-CNN, as in ``bench_batch32``). The precisions take turns, batch set by batch
set, for ``--repeats`` rounds, each timed by process CPU time and wall time; the best round of
each is reported with its ratio to float32, and each layer's error against float32 (largest
and mean absolute difference, divided by the mean magnitude of float32's layer).

``--ner`` instead times ``nlp.pipe`` of ``configs/ner_elmo.cfg`` with an original-size random
biLM (words/s, the second of two passes over the same texts, per precision); ``--baseline``
adds spaCy's own NER pipeline (``configs/ner_baseline.cfg``) to the same turns, and ``--size
workflow`` gives the biLM the workflow's size (``configs/bilm_small.cfg``).

The header prints the CPU's name, its flags that matter here, the thread count and the load
average before and after: on a loaded machine wall time measures the other jobs too, and only
ratios taken in the same run mean anything. It runs itself again with numpy's and OpenMP's
pools sized to ``--threads`` (``thread_pools``), so that CPU time is that of those threads.

    python -m benchmarks.bench_precision [--batches 2] [--repeats 2] [--batch 32]
    python -m benchmarks.bench_precision --ner [--texts 64]
    python -m benchmarks.bench_precision --ner --baseline --size workflow --texts 256
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Callable

import numpy
import torch

from spacy_elmo import BiLM
from spacy_elmo.config import BiLMConfig
from spacy_elmo.embedding import Embedder
from spacy_elmo.nn.precision import CPU_FLAGS_NEEDED, cpu_flags, running_precision

from .bench_embed import SIZES, default_text, load_sentences
from .thread_pools import rerun_with_pools_of

CPU_PRECISIONS = ("float32", "bfloat16", "int8")
REPO = Path(__file__).resolve().parents[1]
NER_CONFIG = REPO / "configs" / "ner_elmo.cfg"
BASELINE_CONFIG = REPO / "configs" / "ner_baseline.cfg"
WORKFLOW_BILM = REPO / "configs" / "bilm_small.cfg"
SIZE_KEYS = ("char_embed_dim", "filters", "n_highway", "lstm_dim", "projection_dim")


def workflow_size() -> dict:
    """The workflow's biLM size, read from its pretraining config (the published sizes are
    ``bench_embed``'s)."""
    from thinc.api import Config

    model = Config().from_disk(WORKFLOW_BILM)["model"]
    return {key: model[key] for key in SIZE_KEYS if key in model}


def size_settings(size: str) -> dict:
    return workflow_size() if size == "workflow" else SIZES[size]


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return "unknown CPU"


def header(threads: int) -> str:
    wanted = ["avx512f"] + sorted({flag for flags in CPU_FLAGS_NEEDED.values() for flag in flags})
    present = cpu_flags()
    flags = " ".join(f"{flag}{'+' if flag in present else '-'}" for flag in wanted)
    load = os.getloadavg()[0]
    idle = "idle" if load < 0.5 else f"LOADED (load {load:.2f} on {os.cpu_count()} cores)"
    return (
        f"{cpu_name()}; flags {flags}; torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}); "
        f"{threads} thread(s); machine {idle}"
    )


def random_model(size: str) -> BiLM:
    torch.manual_seed(0)
    model = BiLM(BiLMConfig(**size_settings(size))).eval()
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.uniform_(-0.1, 0.1)
    return model


def take_turns(runs: dict[str, Callable[[], object]], repeats: int) -> tuple[dict, dict]:
    """Best (CPU, wall) seconds per run over ``repeats`` rounds, and each run's last output."""
    best = {name: (float("inf"), float("inf")) for name in runs}
    outputs = {}
    for _ in range(repeats):
        for name, run in runs.items():
            cpu, wall = time.process_time(), time.perf_counter()
            outputs[name] = run()
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
            print(f"  {name}: {cpu:.2f} CPU-s {wall:.2f} wall-s, load {os.getloadavg()[0]:.2f}", flush=True)
    return best, outputs


def report(best: dict, count: int, unit: str) -> None:
    base = best["float32"]
    for name, (cpu, wall) in best.items():
        print(
            f"  {name:8s}: {count / cpu:8.1f} {unit}/CPU-s {count / wall:8.1f} {unit}/wall-s   "
            f"x{base[0] / cpu:.2f} by CPU time, x{base[1] / wall:.2f} by wall time"
        )


def layer_errors(reference: list[numpy.ndarray], other: list[numpy.ndarray]) -> list[tuple[float, float]]:
    """Per layer: (largest, mean) absolute difference over the mean magnitude of ``reference``."""
    ref = numpy.concatenate(reference, axis=1)
    got = numpy.concatenate(other, axis=1)
    errors = []
    for j in range(ref.shape[0]):
        scale = float(numpy.abs(ref[j]).mean())
        diff = numpy.abs(got[j] - ref[j])
        errors.append((float(diff.max()) / scale, float(diff.mean()) / scale))
    return errors


def bench_batches(args: argparse.Namespace) -> None:
    text, tokenizer = default_text() if args.text is None else (args.text, "whitespace")
    sentences = load_sentences(text, tokenizer, None)[: args.batch * args.batches]
    batches = [sentences[i : i + args.batch] for i in range(0, len(sentences), args.batch)]
    n_tokens = sum(len(s) for s in sentences)
    model = random_model(args.size)
    runs = {}
    for precision in args.precisions:
        embedder = Embedder(model, word_cache_words=0, precision=precision)
        if embedder.running_precision() != precision:
            print(f"  {precision}: not supported here, skipped")
            continue
        runs[precision] = lambda e=embedder: [layer for batch in batches for layer in e.layers(batch)]
    load_before = os.getloadavg()[0]
    best, outputs = take_turns(runs, args.repeats)
    print(
        f"{args.size}, {len(batches)} batches of {args.batch} sentences ({n_tokens:,} tokens, {text.name}), "
        f"load {load_before:.2f} -> {os.getloadavg()[0]:.2f}, best of {args.repeats}"
    )
    report(best, n_tokens, "tok")
    for name in runs:
        if name != "float32":
            errors = layer_errors(outputs["float32"], outputs[name])  # type: ignore[arg-type]
            print(
                f"  {name} vs float32, per layer (max, mean) / mean|x|: "
                + ", ".join(f"({a:.2e}, {m:.2e})" for a, m in errors)
            )


def bench_ner(args: argparse.Namespace) -> None:
    import spacy
    from thinc.api import Config

    text, tokenizer = default_text() if args.text is None else (args.text, "whitespace")
    texts = [" ".join(s) for s in load_sentences(text, tokenizer, None)[: args.texts]]
    config = Config().from_disk(NER_CONFIG)
    for key, value in size_settings(args.size).items():
        config["components"]["elmo"]["model"][key] = [list(f) for f in value] if key == "filters" else value
    config["components"]["elmo"]["weights"] = "random"
    runs = {}
    n_words = 0
    for precision in args.precisions:
        if running_precision(precision, torch.device("cpu")) != precision:
            print(f"  {precision}: not supported here, skipped")
            continue
        config["components"]["elmo"]["precision"] = precision
        nlp = spacy.util.load_model_from_config(config, auto_fill=True)
        nlp.initialize()
        n_words = sum(len(doc) for doc in nlp.pipe(texts))  # first pass: caches warm
        runs[precision] = lambda nlp=nlp: list(nlp.pipe(texts))
    if args.baseline:
        baseline = spacy.util.load_model_from_config(Config().from_disk(BASELINE_CONFIG), auto_fill=True)
        baseline.initialize()
        list(baseline.pipe(texts))
        runs["baseline"] = lambda: list(baseline.pipe(texts))
    load_before = os.getloadavg()[0]
    best, _ = take_turns(runs, args.repeats)
    print(
        f"NER pipeline ({NER_CONFIG.name}, {args.size} random biLM), {len(texts)} texts ({n_words:,} words), "
        f"load {load_before:.2f} -> {os.getloadavg()[0]:.2f}, best of {args.repeats} passes after a first one"
    )
    report(best, n_words, "words")
    if "baseline" in best:
        base_cpu = best["baseline"][0]
        print(f"  against spaCy's own NER pipeline ({BASELINE_CONFIG.name}, the same texts, the same turns):")
        for name, (cpu, _) in best.items():
            if name != "baseline":
                print(f"  {name:8s}: {base_cpu / cpu:.2f} of the baseline's words/CPU-s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--size", default="original", choices=[*sorted(SIZES), "workflow"], help="workflow: configs/bilm_small.cfg"
    )
    parser.add_argument("--text", type=Path, default=None, help="pre-tokenized text, one sentence a line")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--precisions", nargs="+", default=list(CPU_PRECISIONS), choices=CPU_PRECISIONS)
    parser.add_argument("--ner", action="store_true", help="time nlp.pipe of configs/ner_elmo.cfg instead")
    parser.add_argument("--texts", type=int, default=64, help="with --ner: sentences piped")
    parser.add_argument(
        "--baseline", action="store_true", help="with --ner: time configs/ner_baseline.cfg in the same turns"
    )
    args = parser.parse_args()
    rerun_with_pools_of(args.threads, "benchmarks.bench_precision")
    if "float32" not in args.precisions:
        args.precisions.insert(0, "float32")
    torch.set_num_threads(args.threads)
    print(header(torch.get_num_threads()), flush=True)
    if args.ner:
        bench_ner(args)
    else:
        bench_batches(args)


if __name__ == "__main__":
    main()
