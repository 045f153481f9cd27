"""Does the frozen-feature cache bring training with ELMo features close to baseline speed?

Trains the project's NER configs with ``nlp.update`` (what ``spacy train`` calls) for a few
epochs over the same training Docs, and times each epoch, in three settings, each in a fresh
subprocess:

- ``baseline``: ``configs/ner_baseline.cfg`` (hash embeddings + CNN, no ELMo);
- ``elmo-no-cache``: ``configs/ner_elmo.cfg`` with ``feature_cache_mb = 0`` (the biLM runs
  on every batch of every epoch);
- ``elmo-cache``: ``configs/ner_elmo.cfg`` as shipped (layers computed in epoch 1, reused).

Reports per epoch: wall and CPU seconds, tokens/s, the ratio to the baseline's epoch, the
cache's hit rate, and each setting's peak RSS; with the load average, so a busy machine shows.
Data: the project's WNUT-16 training split and pretrained biLM when present, else the bundled
English sample (unannotated: the NER learns "no entity", the cost per token is the same) and
a random biLM of the project's small size.

    python -m benchmarks.bench_feature_cache
    python -m benchmarks.bench_feature_cache --epochs 3 --limit 1000 --threads 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

from .thread_pools import pool_environment

REPO = Path(__file__).resolve().parents[1]
PROJECT_TRAIN = REPO / "corpus" / "ner" / "train.spacy"
PROJECT_BILM = REPO / "training" / "bilm" / "model-best"
BUNDLED_TEXT = REPO / "benchmarks" / "data" / "english_sample.txt"
SETTINGS = ("baseline", "elmo-no-cache", "elmo-cache")


def load_examples(nlp, train: Optional[Path], limit: int) -> list:
    from spacy.tokens import DocBin
    from spacy.training import Example

    if train is not None:
        references = list(DocBin().from_disk(train).get_docs(nlp.vocab))
    else:
        lines = [line.strip() for line in BUNDLED_TEXT.read_text(encoding="utf8").splitlines()]
        references = [nlp.make_doc(line) for line in lines if line]
    references = references[:limit] if limit else references
    return [Example(nlp.make_doc(doc.text), doc) for doc in references]


def random_small_bilm(target: Path) -> Path:
    """A random biLM of the project's small size (configs/bilm_small.cfg's [model])."""
    from thinc.api import Config

    from spacy_elmo import BiLM
    from spacy_elmo.config import BiLMConfig

    model = Config().from_disk(REPO / "configs" / "bilm_small.cfg")["model"]
    sizes = {key: (tuple(tuple(f) for f in value) if key == "filters" else value) for key, value in model.items()}
    BiLM(BiLMConfig(**sizes)).to_disk(target)
    return target


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    import spacy
    import torch
    from spacy.training import minibatch_by_words
    from thinc.api import Config, fix_random_seed

    torch.set_num_threads(spec["threads"])
    fix_random_seed(0)
    setting = spec["setting"]
    config_name = "ner_baseline.cfg" if setting == "baseline" else "ner_elmo.cfg"
    config = Config().from_disk(REPO / "configs" / config_name)
    if setting != "baseline":
        config["initialize"]["components"]["elmo"]["weights"] = spec["weights"]
        config["components"]["elmo"]["feature_cache_mb"] = 0 if setting == "elmo-no-cache" else 4096
    config["paths"]["train"] = config["paths"]["dev"] = None
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    train = Path(spec["train"]) if spec["train"] else None
    examples = load_examples(nlp, train, spec["limit"])
    n_tokens = sum(len(eg.reference) for eg in examples)
    optimizer = nlp.initialize(lambda: examples)
    epochs = []
    seen = (0, 0)  # cache hits and lookups before the epoch
    for epoch in range(spec["epochs"]):
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        for batch in minibatch_by_words(examples, size=1000):
            nlp.update(batch, sgd=optimizer, drop=0.1)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        row = {"epoch": epoch + 1, "wall_s": wall, "cpu_s": cpu, "tokens_per_s": n_tokens / wall, "load_avg": load}
        cache = nlp.get_pipe("elmo").feature_cache if "elmo" in nlp.pipe_names else None
        if cache is not None:  # this epoch's share of Docs served from the cache
            hits, lookups = cache.stats.hits, cache.stats.hits + cache.stats.misses
            row["hit_rate"] = (hits - seen[0]) / max(1, lookups - seen[1])
            seen = (hits, lookups)
        epochs.append(row)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"setting": setting, "tokens": n_tokens, "docs": len(examples), "epochs": epochs, "peak_rss_mb": peak_mb}


def print_table(results: list[dict[str, Any]]) -> None:
    baseline = (
        {row["epoch"]: row["wall_s"] for row in results[0]["epochs"]} if results[0]["setting"] == "baseline" else {}
    )
    print(
        f"{'setting':<14} {'epoch':>5} {'wall s':>8} {'cpu s':>8} {'tok/s':>8} {'x baseline':>10} {'hit rate':>8} {'load':>5} {'RSS MB':>7}"
    )
    for result in results:
        for row in result["epochs"]:
            ratio = row["wall_s"] / baseline[row["epoch"]] if row["epoch"] in baseline else float("nan")
            hits = f"{row['hit_rate']:.1%}" if "hit_rate" in row else "-"
            print(
                f"{result['setting']:<14} {row['epoch']:>5} {row['wall_s']:>8.1f} {row['cpu_s']:>8.1f} "
                f"{row['tokens_per_s']:>8.0f} {ratio:>10.2f} {hits:>8} {row['load_avg']:>5.2f} {result['peak_rss_mb']:>7.0f}"
            )


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--train",
        type=Path,
        default=None,
        help=f"a .spacy file (default: {PROJECT_TRAIN.relative_to(REPO)} if present)",
    )
    parser.add_argument(
        "--weights",
        type=Path,
        default=None,
        help="biLM weights (default: the project's pretrained biLM if present, else random)",
    )
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--limit", type=int, default=0, help="training Docs to use (0: all)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run")
    parser.add_argument(
        "--settings", default=",".join(SETTINGS), help="comma-separated subset of " + ", ".join(SETTINGS)
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return
    train = args.train or (PROJECT_TRAIN if PROJECT_TRAIN.exists() else None)
    with tempfile.TemporaryDirectory() as tmp:
        weights = args.weights or (PROJECT_BILM if PROJECT_BILM.exists() else random_small_bilm(Path(tmp) / "bilm"))
        print(
            f"train: {train or BUNDLED_TEXT}; weights: {weights}; torch threads: {args.threads}; "
            f"cores: {os.cpu_count()}; load average: {os.getloadavg()}",
            flush=True,
        )
        results = []
        for setting in args.settings.split(","):
            spec = {
                "setting": setting,
                "train": str(train) if train else None,
                "weights": str(weights),
                "epochs": args.epochs,
                "limit": args.limit,
                "threads": args.threads,
            }
            env = pool_environment(args.threads)
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_feature_cache", "--worker", json.dumps(spec)],
                env=env,
                check=True,
                capture_output=True,
                text=True,
                cwd=REPO,
            ).stdout
            results.append(json.loads(out.strip().splitlines()[-1]))
            print(f"{setting}: done", flush=True)
    print_table(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
