"""What ELMo distillation (``spacy_elmo.PretrainElmo.v1``) costs per word in ``spacy pretrain``.

Runs spaCy's own pretraining loop (``create_pretraining_model`` and ``make_update`` from
``spacy.training.pretrain``, as ``spacy pretrain`` calls them) over the same text for a few
epochs, each setting in a fresh subprocess:

- ``characters``: ``configs/ner_baseline.cfg`` as shipped (spaCy's characters objective), the
  budget the workflow matches;
- ``distill``: ``configs/ner_distill.cfg`` (target "average", cosine) with a random biLM of the
  workflow's size (``configs/bilm_small.cfg``'s [model]); epoch 1 computes every text's
  targets, later ones read them from the cache;
- ``distill-layers``: the same with ``target = "layers"`` (three heads, three times the cache).

Reports per epoch: CPU seconds, words per CPU-second, the share of CPU time spent computing
targets (the biLM and the cache), the cache's bytes per token (its arrays, and with Python's
per-entry objects), and the load average, so a busy machine shows. Use one thread
(``--threads 1``, the default): the process's CPU time is then the cost of the work even when
other jobs share the cores.

Text: ``--text FILE`` (one sentence per line, as the workflow's), else the bundled English
sample (``benchmarks/data/english_sample.txt``, 383 sentences) with ``--variants`` copies of each
sentence in which one word is swapped for a random word of the sample: distinct texts (each
its own cache entry), the sample's vocabulary and sentence lengths.

    python -m benchmarks.bench_distill
    python -m benchmarks.bench_distill --epochs 2 --variants 4 --settings characters distill
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from benchmarks.bench_feature_cache import random_small_bilm

from .thread_pools import pool_environment

REPO = Path(__file__).resolve().parents[1]
BUNDLED_TEXT = REPO / "benchmarks" / "data" / "english_sample.txt"
SETTINGS = ("characters", "distill", "distill-layers")
BUDGET_S = 600.0  # the CPU seconds the workflow gives spacy pretrain's characters objective


def sentences(text: Optional[Path], variants: int, seed: int = 0) -> list[str]:
    """The lines of ``text``, or the bundled sample and ``variants`` one-word variants of each line."""
    lines = [line.strip() for line in (text or BUNDLED_TEXT).read_text(encoding="utf8").splitlines()]
    lines = [line for line in lines if line]
    if text is not None:
        return lines
    rng = random.Random(seed)
    vocabulary = sorted({word for line in lines for word in line.split()})
    out = list(lines)
    for _ in range(variants):
        for line in lines:
            words = line.split()
            words[rng.randrange(len(words))] = rng.choice(vocabulary)
            out.append(" ".join(words))
    return out


def cache_bytes(targets: Any) -> tuple[int, int]:
    """The cache's array bytes, and its bytes with Python's objects (keys, array headers, dict)."""
    memory = targets.cache._memory
    arrays = sum(value.nbytes for value in memory.values())
    total = sys.getsizeof(memory) + sum(sys.getsizeof(key) + sys.getsizeof(value) for key, value in memory.items())
    return arrays, total


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    import torch
    from spacy.schemas import ConfigSchemaPretrain
    from spacy.training.pretrain import create_pretraining_model, ensure_docs, make_update
    from spacy.util import dot_to_object, load_config, load_model_from_config, registry
    from thinc.api import fix_random_seed

    import spacy_elmo.models.tok2vec_objectives as objectives

    torch.set_num_threads(spec["threads"])
    setting = spec["setting"]
    name = "ner_baseline.cfg" if setting == "characters" else "ner_distill.cfg"
    overrides = {"paths.raw_text": spec["jsonl"], "paths.elmo": spec["weights"]}
    if setting == "distill-layers":
        overrides["pretraining.objective.target"] = "layers"
    config = load_config(REPO / "configs" / name, overrides=overrides, interpolate=False).interpolate()
    fix_random_seed(0)
    made: list = []  # the objective's target maker, to time it and read its cache
    real_targets = objectives.ElmoTargets

    class TimedTargets(real_targets):
        cpu_s = 0.0

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

        def __call__(self, docs):  # type: ignore[override]
            start = time.process_time()
            try:
                return super().__call__(docs)
            finally:
                TimedTargets.cpu_s += time.process_time() - start

    objectives.ElmoTargets = TimedTargets
    config["initialize"]["init_tok2vec"] = None
    nlp = load_model_from_config(config)
    resolved = nlp.config.interpolate()
    P = registry.resolve(resolved["pretraining"], schema=ConfigSchemaPretrain)
    corpus = registry.resolve({"corpus": dot_to_object(resolved, P["corpus"])})["corpus"]
    setup = time.process_time()
    model = create_pretraining_model(nlp, P)
    setup = time.process_time() - setup
    objective, optimizer, batcher = model.attrs["loss"], P["optimizer"], P["batcher"]
    epochs = []
    for epoch in range(spec["epochs"]):
        load = os.getloadavg()[0]
        targets_before = TimedTargets.cpu_s
        wall, cpu, words = time.perf_counter(), time.process_time(), 0
        for batch in batcher(corpus(nlp)):
            docs = ensure_docs(batch)
            make_update(model, docs, optimizer, objective)
            words += sum(len(doc) for doc in docs)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        row = {
            "epoch": epoch + 1,
            "words": words,
            "cpu_s": cpu,
            "wall_s": wall,
            "words_per_cpu_s": words / cpu,
            "targets_share": (TimedTargets.cpu_s - targets_before) / cpu,
            "load_avg": load,
        }
        if made:
            row["hit_rate"] = made[0].cache_stats.hit_rate
        epochs.append(row)
    result = {"setting": setting, "setup_cpu_s": setup, "epochs": epochs}
    if made:
        arrays, total = cache_bytes(made[0])
        stored = sum(value.shape[0] for value in made[0].cache._memory.values())
        result.update(cache_tokens=stored, cache_bytes_per_token=arrays / stored, cache_total_per_token=total / stored)
        result["target_width"] = made[0].width
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return result


def print_table(results: list[dict[str, Any]]) -> None:
    print(f"{'setting':<15} {'epoch':>5} {'words':>7} {'cpu s':>7} {'words/cpu-s':>11} {'targets':>7} {'load':>5}")
    for result in results:
        for row in result["epochs"]:
            share = f"{row['targets_share']:.0%}" if result["setting"] != "characters" else "-"
            print(
                f"{result['setting']:<15} {row['epoch']:>5} {row['words']:>7} {row['cpu_s']:>7.1f} "
                f"{row['words_per_cpu_s']:>11.0f} {share:>7} {row['load_avg']:>5.2f}"
            )
        if "cache_bytes_per_token" in result:
            print(
                f"  cache: {result['cache_tokens']} tokens, {result['cache_bytes_per_token']:.0f} B/token in arrays "
                f"(width {result['target_width']}, float16), {result['cache_total_per_token']:.0f} B/token with "
                f"Python's objects; setup {result['setup_cpu_s']:.1f} CPU s; peak RSS {result['peak_rss_mb']:.0f} MB"
            )
    print(f"words in {BUDGET_S:.0f} CPU seconds (setup aside): ", end="")
    print(", ".join(f"{r['setting']} epoch 1 {r['epochs'][0]['words_per_cpu_s'] * BUDGET_S:,.0f}" for r in results))


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--text", type=Path, default=None)
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        weights = random_small_bilm(Path(tmp) / "bilm")
        jsonl = Path(tmp) / "text.jsonl"
        lines = sentences(args.text, args.variants)
        jsonl.write_text("".join(json.dumps({"text": line}) + "\n" for line in lines), encoding="utf8")
        print(f"{len(lines)} texts; load average before {os.getloadavg()}", flush=True)
        for setting in args.settings:
            spec = {"setting": setting, "epochs": args.epochs, "threads": args.threads}
            spec.update(jsonl=str(jsonl), weights=str(weights))
            env = pool_environment(args.threads)
            command = [sys.executable, "-m", "benchmarks.bench_distill", "--worker", json.dumps(spec)]
            done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=True)
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    print(f"load average after {os.getloadavg()}")
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf8")


if __name__ == "__main__":
    main()
