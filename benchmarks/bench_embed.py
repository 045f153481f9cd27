"""How fast does spacy-elmo embed real English text, and how close is that to the machine's limit?

For each model size (random weights) and thread count, a fresh subprocess measures:

- tokens/s of ``spacy_elmo.embed_layers`` with the word cache off (an ``Embedder``'s cache on), with it on from cold (streaming
  running text), and with it on after one warm pass over the same sentences;
- peak RSS after those passes;
- dense FLOPs per token (char-CNN convolutions, highway, projection, LSTM matmuls over the
  tokens and one boundary step per sentence: see ``flops_per_token``) and the resulting FLOP/s;
- the GEMM rate of a 2048^3 float32 matmul measured in the same process (best of the
  measurements taken before and after), and the fraction of it reached ("roofline"); the
  ``gemm-only`` fraction leaves out the convolutions' FLOPs, which our char-CNN computes as
  table lookups with far fewer arithmetic operations than the dense count;
- the speedup over the plain AllenNLP-style loop in ``plain_elmo.py`` on the same sentences.

The machine may be shared: each row reports the load average before and after, and
``--wait-idle`` waits for a quiet machine first. Every time is taken twice, as wall-clock
time and as the process's CPU time (the best of the repeats for each): with one thread, CPU
time is what the work cost even while other processes compete for the cores (``*_cpu``
fields); wall-clock time is what a user waits (the other fields). Compare ratios taken
within one row and one clock.

``--embed-memory`` instead runs ``spacy-elmo embed`` on 1,000 and 100,000 sentences and
reports each run's peak RSS (the output must stream: the two should be close).

Examples (from the repository root)::

    python -m benchmarks.bench_embed
    python -m benchmarks.bench_embed --sizes original --threads 1 --max-tokens 3000
    python -m benchmarks.bench_embed --embed-memory --embed-size tiny
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

from .thread_pools import pool_environment

REPO = Path(__file__).resolve().parents[1]
BUNDLED_TEXT = REPO / "benchmarks" / "data" / "english_sample.txt"
CORPUS_TEXT = [REPO / "corpus" / "text" / "dev.txt"]
CORPUS_TRAIN = REPO / "corpus" / "text" / "train.txt"

FILTERS = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))
SIZES = {
    "tiny": dict(filters=((1, 4), (2, 8), (3, 16)), char_embed_dim=4, n_highway=1, lstm_dim=32, projection_dim=8),
    "small": dict(filters=FILTERS, n_highway=1, lstm_dim=1024, projection_dim=128),
    "original": dict(filters=FILTERS, n_highway=2, lstm_dim=4096, projection_dim=512),
}
# Rough regex tokenizer for untokenized text (the bundled sample): words, clitics, punctuation.
TOKEN = re.compile(r"n't\b|'(?:s|re|ve|ll|d|m)\b|\w+(?:[-.]\w+)*(?=n't\b)|\w+(?:[-.]\w+)*|[^\w\s]")


# --------------------------------------------------------------------------- text
def default_text() -> tuple[Path, str]:
    """The project's dev text (pre-tokenized) if present, else the bundled sample."""
    for path in CORPUS_TEXT:
        if path.is_file():
            return path, "whitespace"
    return BUNDLED_TEXT, "regex"


def load_sentences(path: Path, tokenizer: str, max_tokens: Optional[int]) -> list[list[str]]:
    """Sentences (one per non-empty line) from the start of ``path``, up to ``max_tokens``."""
    sentences, total = [], 0
    with open(path, encoding="utf8") as handle:
        for line in handle:
            tokens = line.split() if tokenizer == "whitespace" else TOKEN.findall(line)
            if not tokens:
                continue
            if max_tokens is not None and total + len(tokens) > max_tokens and sentences:
                break
            sentences.append(tokens)
            total += len(tokens)
    return sentences


# --------------------------------------------------------------------------- measures
def flops_per_position(config) -> dict[str, float]:
    """Dense multiply-add FLOPs (x2) per position, by part; elementwise work not counted."""
    d, nf, p, c = config.char_embed_dim, config.n_filters, config.projection_dim, config.lstm_dim
    conv = sum(2.0 * (50 - w + 1) * w * d * n for w, n in config.filters)
    highway = config.n_highway * 2.0 * nf * 2 * nf
    projection = 2.0 * nf * p
    lstm = 2 * config.n_layers * (2.0 * p * 4 * c + 2.0 * p * 4 * c + 2.0 * c * p)
    return {"conv": conv, "highway": highway, "projection": projection, "lstm": lstm}


def flops_per_token(config, n_tokens: int, n_sentences: int) -> dict[str, float]:
    """Dense FLOPs per token of the work needed: layer 0 once per token (BOS and EOS once per
    batch, negligible), the LSTMs over each sentence's tokens plus one boundary step (BOS read
    forward, EOS read backward; the other boundary's step feeds no token and is not run)."""
    parts = flops_per_position(config)
    lstm_positions = (n_tokens + n_sentences) / n_tokens
    return {k: v * (lstm_positions if k == "lstm" else 1.0) for k, v in parts.items()}


def gemm_rate(size: int = 2048, repeats: int = 5) -> tuple[float, float]:
    """Best float32 matmul rate (FLOP/s; wall clock, CPU time) with the current thread setting."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    wall, cpu = best_time(lambda: torch.mm(a, b), repeats)
    return 2.0 * size**3 / wall, 2.0 * size**3 / cpu


def best_time(run: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Shortest wall-clock time and shortest CPU time of ``repeats`` runs."""
    return timed(run, repeats)[:2]


def timed(run: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """Like :func:`best_time`, plus the last run's result."""
    wall = cpu = float("inf")
    result = None
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu, result


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# --------------------------------------------------------------------------- one configuration
def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Measure one (size, threads) configuration in this process."""
    import numpy
    import torch

    from spacy_elmo import Embedder, embed_layers
    from spacy_elmo.nn import BiLM, BiLMConfig

    from .plain_elmo import plain_embed_layers

    torch.set_num_threads(spec["threads"])
    torch.manual_seed(0)
    load_before = os.getloadavg()[0]
    config = BiLMConfig(**SIZES[spec["size"]])
    model = BiLM(config).eval()
    with torch.no_grad():  # non-zero biases, so no path is trivially skipped
        for name, param in model.named_parameters():
            if name.endswith("bias"):
                param.uniform_(-0.1, 0.1)
    sentences = load_sentences(Path(spec["text"]), spec["tokenizer"], spec["max_tokens"])
    n_tokens = sum(len(s) for s in sentences)
    per_token = flops_per_token(config, n_tokens, len(sentences))
    flops_token = sum(per_token.values())
    gemm_flops_token = flops_token - per_token["conv"]

    gemm_before = gemm_rate()
    embed = lambda: embed_layers(model, sentences, batch_tokens=spec["batch_tokens"])  # noqa: E731
    embed_layers(model, sentences[:16])  # warm-up
    off = best_time(embed, spec["repeats"])
    embedder = Embedder(model, batch_tokens=spec["batch_tokens"], word_cache_words=spec["cache_words"])
    cache = embedder.word_cache
    cold = best_time(lambda: embedder.layers(sentences), 1)
    cold_hit = cache.stats.hit_rate
    cache.reset_stats()
    warm = best_time(lambda: embedder.layers(sentences), spec["repeats"])
    warm_hit = cache.stats.hit_rate
    rss = peak_rss_mb()

    subset, total = [], 0
    for sentence in sentences:
        if total + len(sentence) > spec["reference_tokens"] and subset:
            break
        subset.append(sentence)
        total += len(sentence)
    subset_tokens = sum(len(s) for s in subset)
    *ours_subset, ours_out = timed(
        lambda: embed_layers(model, subset, batch_tokens=spec["batch_tokens"]), spec["repeats"]
    )
    *plain_subset, plain_out = timed(lambda: plain_embed_layers(model, subset), 1)
    agreement = max(float(numpy.abs(a - b).max()) for a, b in zip(ours_out, plain_out))
    gemm_after = gemm_rate()
    gemm = (max(gemm_before[0], gemm_after[0]), max(gemm_before[1], gemm_after[1]))
    result = {
        **{k: spec[k] for k in ("size", "threads")},
        "text": spec["text"],
        "sentences": len(sentences),
        "tokens": n_tokens,
        "batch_tokens": spec["batch_tokens"],
        "cache_cold_hit_rate": cold_hit,
        "cache_warm_hit_rate": warm_hit,
        "peak_rss_mb": rss,
        "flops_per_token": flops_token,
        "flops_per_token_by_part": per_token,
        "reference_tokens": subset_tokens,
        "max_abs_diff_vs_plain": agreement,
        "load_avg_before_after": [load_before, os.getloadavg()[0]],
    }
    for clock, index in (("", 0), ("_cpu", 1)):
        rate = n_tokens / off[index]
        result.update(
            {
                f"tokens_per_s_cache_off{clock}": rate,
                f"tokens_per_s_cache_cold{clock}": n_tokens / cold[index],
                f"tokens_per_s_cache_warm{clock}": n_tokens / warm[index],
                f"cache_cold_speedup{clock}": off[index] / cold[index],
                f"cache_warm_speedup{clock}": off[index] / warm[index],
                f"gflops_per_s{clock}": rate * flops_token / 1e9,
                f"gemm_gflops_per_s{clock}": gemm[index] / 1e9,
                f"roofline_fraction{clock}": rate * flops_token / gemm[index],
                f"roofline_fraction_gemm_only{clock}": rate * gemm_flops_token / gemm[index],
                f"tokens_per_s_ours_on_subset{clock}": subset_tokens / ours_subset[index],
                f"tokens_per_s_plain_on_subset{clock}": subset_tokens / plain_subset[index],
                f"speedup_vs_plain{clock}": plain_subset[index] / ours_subset[index],
            }
        )
    return result


# --------------------------------------------------------------------------- embed memory mode
def run_embed_memory(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Peak RSS of ``spacy-elmo embed`` on small and large inputs (each in its own process)."""
    import torch

    from spacy_elmo.nn import BiLM, BiLMConfig

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        torch.manual_seed(0)
        BiLM(BiLMConfig(**SIZES[args.embed_size])).to_disk(tmp_path / "model")
        source = CORPUS_TRAIN if CORPUS_TRAIN.is_file() else BUNDLED_TEXT
        for count in args.embed_counts:
            text = tmp_path / f"input_{count}.txt"
            _write_sentences(source, text, count)
            output = tmp_path / f"out_{count}.hdf5"
            command = [
                sys.executable,
                "-m",
                "spacy_elmo",
                "embed",
                str(text),
                str(output),
                "--weights",
                str(tmp_path / "model"),
                "--layers",
                args.embed_layers,
                "--no-progress",
            ]
            start = time.perf_counter()
            process = subprocess.Popen(command, env=pool_environment(1))
            _, status, usage = os.wait4(process.pid, 0)
            seconds = time.perf_counter() - start
            if status != 0:
                raise SystemExit(f"spacy-elmo embed failed with status {status}")
            size_mb = output.stat().st_size / 2**20
            output.unlink()
            results.append(
                {
                    "sentences": count,
                    "source": str(source),
                    "model": args.embed_size,
                    "peak_rss_mb": usage.ru_maxrss / 1024.0,
                    "seconds": seconds,
                    "output_mb": size_mb,
                    "load_avg_after": os.getloadavg()[0],
                }
            )
            print(json.dumps(results[-1]), flush=True)
    return results


def _write_sentences(source: Path, target: Path, count: int) -> None:
    """``count`` non-empty lines from ``source``, cycling through it if it is shorter."""
    lines = [line.rstrip("\n") for line in open(source, encoding="utf8") if line.strip()]
    with open(target, "w", encoding="utf8") as handle:
        for index in range(count):
            line = lines[index % len(lines)]
            if index >= len(lines):  # vary repeats so the input is not one text over and over
                line = f"{line} ({index // len(lines)})"
            handle.write(line + "\n")


# --------------------------------------------------------------------------- driver
def wait_for_idle(limit_s: float, threshold: float) -> float:
    """Wait (up to ``limit_s``) until the 1-minute load average drops below ``threshold``."""
    deadline = time.time() + limit_s
    while os.getloadavg()[0] >= threshold and time.time() < deadline:
        time.sleep(5)
    return os.getloadavg()[0]


def print_table(rows: list[dict[str, Any]]) -> None:
    header = (
        f"{'size':8} {'thr':>3} {'clock':5} {'tokens':>6} {'tok/s off':>9} {'cold':>7} {'warm':>7} {'cold x':>6} "
        f"{'warm x':>6} {'hit%':>5} {'GF/tok':>6} {'GF/s':>6} {'GEMM':>6} {'roof':>5} {'gemm':>5} {'vs plain':>8} "
        f"{'RSS MB':>7} {'load':>9}"
    )
    print(header)
    for r in rows:
        for clock, name in (("", "wall"), ("_cpu", "cpu")):
            print(
                f"{r['size']:8} {r['threads']:>3} {name:5} {r['tokens']:>6} {r['tokens_per_s_cache_off' + clock]:>9.1f} "
                f"{r['tokens_per_s_cache_cold' + clock]:>7.1f} {r['tokens_per_s_cache_warm' + clock]:>7.1f} "
                f"{r['cache_cold_speedup' + clock]:>6.2f} {r['cache_warm_speedup' + clock]:>6.2f} "
                f"{100 * r['cache_cold_hit_rate']:>5.1f} {r['flops_per_token'] / 1e9:>6.3f} {r['gflops_per_s' + clock]:>6.1f} "
                f"{r['gemm_gflops_per_s' + clock]:>6.1f} {r['roofline_fraction' + clock]:>5.2f} "
                f"{r['roofline_fraction_gemm_only' + clock]:>5.2f} {r['speedup_vs_plain' + clock]:>8.2f} "
                f"{r['peak_rss_mb']:>7.0f} {r['load_avg_before_after'][0]:>4.2f}/{r['load_avg_before_after'][1]:<4.2f}"
            )


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--text", type=Path, help="text file, one sentence per line (default: corpus dev text or the bundled sample)"
    )
    parser.add_argument("--tokenizer", choices=["whitespace", "regex"], help="how to split lines (default: by source)")
    parser.add_argument("--sizes", default="small,original")
    parser.add_argument("--threads", default="1,all", help="comma list of thread counts; 'all' = every core")
    parser.add_argument("--max-tokens", type=int, default=20000, help="tokens of text to embed per pass")
    parser.add_argument(
        "--reference-tokens",
        type=int,
        default=None,
        help="tokens for the plain-loop comparison (default: all of --max-tokens; the plain loop is slow)",
    )
    parser.add_argument("--repeats", type=int, default=2, help="timed passes per measure (best is kept)")
    parser.add_argument(
        "--batch-tokens", type=int, default=None, help="max padded tokens per batch (default: the library's)"
    )
    parser.add_argument("--cache-words", type=int, default=50_000)
    parser.add_argument(
        "--wait-idle", type=float, default=0.0, help="seconds to wait for load < --idle-load before each row"
    )
    parser.add_argument("--idle-load", type=float, default=0.5)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--embed-memory", action="store_true", help="peak RSS of `spacy-elmo embed` instead")
    parser.add_argument("--embed-size", default="tiny", choices=sorted(SIZES))
    parser.add_argument("--embed-layers", default="all")
    parser.add_argument("--embed-counts", default="1000,100000")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return
    if args.embed_memory:
        args.embed_counts = [int(n) for n in args.embed_counts.split(",")]
        rows = run_embed_memory(args)
        if len(rows) >= 2:
            print(
                f"peak RSS difference, {rows[-1]['sentences']} vs {rows[0]['sentences']} sentences: "
                f"{rows[-1]['peak_rss_mb'] - rows[0]['peak_rss_mb']:.1f} MB"
            )
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2))
        return

    text, tokenizer = (args.text, args.tokenizer or "whitespace") if args.text else default_text()
    tokenizer = args.tokenizer or tokenizer
    print(f"text: {text} ({tokenizer} tokens); cores: {os.cpu_count()}; load average: {os.getloadavg()}", flush=True)
    rows = []
    for size in args.sizes.split(","):
        for threads in args.threads.split(","):
            n_threads = os.cpu_count() if threads == "all" else int(threads)
            if args.wait_idle:
                wait_for_idle(args.wait_idle, args.idle_load)
            spec = {
                "size": size,
                "threads": n_threads,
                "text": str(text),
                "tokenizer": tokenizer,
                "max_tokens": args.max_tokens,
                "reference_tokens": args.reference_tokens or args.max_tokens,
                "repeats": args.repeats,
                "batch_tokens": args.batch_tokens,
                "cache_words": args.cache_words,
            }
            if spec["batch_tokens"] is None:
                from spacy_elmo.embedding.embedder import DEFAULT_BATCH_TOKENS

                spec["batch_tokens"] = DEFAULT_BATCH_TOKENS
            env = pool_environment(n_threads)
            done = subprocess.run(
                [sys.executable, "-m", "benchmarks.bench_embed", "--worker", json.dumps(spec)],
                env=env,
                capture_output=True,
                text=True,
                check=False,
                cwd=REPO,
            )
            if done.returncode != 0:
                raise SystemExit(f"worker {size}/{threads} failed:\n{done.stderr}")
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    print_table(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
