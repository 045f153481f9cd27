"""``spacy-elmo pretrain`` end to end, this tree against other checkouts, side by side.

Each run is the user's command (``configs/bilm_small.cfg`` of its own tree, on the real text,
one torch thread, no dev text, no checkpoint inside the window) started in a fresh process by
:mod:`benchmarks.pretrain_clock`, which notes the process CPU time after every optimizer
step. The trees take turns (A B A B ...), so a drift in the machine's load hits both alike.
Reported per run: tokens (predictions per direction) per CPU-second and per wall-second
between the end of step ``--skip`` and the end of step ``--steps`` (everything the loop does in
between: reading and batching the corpus, char ids, forward, backward, optimizer), the share of
that CPU time spent in ``StepInputBuilder.encode``, the whole process's CPU seconds, and the load
average. Then the median of each tree and the median of the per-pair ratios.

    python -m benchmarks.bench_pretrain_command --tree base=/tmp/base0554 [--tree other=PATH] [--pairs 3]

A baseline tree is a plain export of a commit (``git archive COMMIT | tar -x -C DIR``); no
virtual environment of its own is needed: the clock imports ``spacy_elmo`` from the tree only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from .thread_pools import pool_environment

REPO = Path(__file__).resolve().parents[1]
TRAIN = REPO / "corpus" / "text" / "train.txt"  # written by the project's preprocess step
CLOCK = Path(__file__).resolve().parent / "pretrain_clock.py"


def gemm_rate() -> float:
    """Float32 GFLOP/s of a 2048^3 matmul by CPU time, one thread, in a fresh process."""
    code = (
        "import time, torch; torch.set_num_threads(1); a = torch.randn(2048, 2048); a @ a; best = 1e9\n"
        "for _ in range(5):\n    s = time.process_time(); a @ a; best = min(best, time.process_time() - s)\n"
        "print(2 * 2048 ** 3 / best / 1e9)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=pool_environment(1))
    return float(out.stdout.strip())


def run_once(tree: Path, train: Path, steps: int, extra: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        record_path = Path(tmp) / "clock.json"
        args = [
            "pretrain",
            str(tree / "configs" / "bilm_small.cfg"),
            str(Path(tmp) / "run"),
            "--paths.train",
            str(train),
            "--corpus.pretokenized",
            "true",
            "--training.max_steps",
            str(steps),
            "--training.eval_every",
            "100000",
            "--training.checkpoint_every",
            "100000",
            "--system.threads",
            "1",
            *extra,
        ]
        env = {**pool_environment(1), "PYTHONPATH": ""}
        subprocess.run(
            [sys.executable, str(CLOCK), str(tree), str(record_path), "--", *args],
            cwd=tree,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return json.loads(record_path.read_text())


def summarize(record: dict, skip: int, steps: int) -> dict:
    marks = record["steps"]
    start, end = marks[skip - 1], marks[steps - 1]
    tokens = sum(mark[3] for mark in marks[skip:steps])
    cpu = end[0] - start[0]
    return {
        "tok_per_cpu_s": tokens / cpu,
        "tok_per_wall_s": tokens / (end[1] - start[1]),
        "encode_share": (end[2] - start[2]) / cpu,
        "process_cpu_s": record["end"][0],
        "load": record["end"][2],
        "module": record["module"],
        "threads": record["threads"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH of another checkout (repeatable)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--skip", type=int, default=4)
    parser.add_argument("--train", type=Path, default=TRAIN)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        help="extra config overrides for every tree, e.g. training.batch_tokens=4096",
    )
    args = parser.parse_args()
    trees = {"this": REPO}
    for item in args.tree:
        name, path = item.split("=", 1)
        trees[name] = Path(path).resolve()
    extra = [f"--{item.split('=', 1)[0]}={item.split('=', 1)[1]}" for item in args.set]
    print(f"load average {os.getloadavg()[0]:.2f}; GEMM rate {gemm_rate():.1f} GFLOP/s by CPU time (one thread)")
    results: dict[str, list[dict]] = {name: [] for name in trees}
    for pair in range(args.pairs):
        for name, tree in trees.items():
            row = summarize(run_once(tree, args.train, args.steps, extra), args.skip, args.steps)
            results[name].append(row)
            print(
                f"pair {pair + 1} {name:>8}: {row['tok_per_cpu_s']:8,.0f} tok/CPU-s {row['tok_per_wall_s']:8,.0f} tok/wall-s "
                f"encode {100 * row['encode_share']:.1f}%  process CPU {row['process_cpu_s']:.1f}s  load {row['load']:.2f}  "
                f"threads {row['threads']}  ({row['module']})",
                flush=True,
            )
    print(f"GEMM rate after: {gemm_rate():.1f} GFLOP/s")
    for name, rows in results.items():
        print(
            f"{name:>8}: median {statistics.median(r['tok_per_cpu_s'] for r in rows):,.0f} tok/CPU-s, "
            f"{statistics.median(r['tok_per_wall_s'] for r in rows):,.0f} tok/wall-s"
        )
    for name in trees:
        if name != "this":
            ratios = [a["tok_per_cpu_s"] / b["tok_per_cpu_s"] for a, b in zip(results["this"], results[name])]
            print(
                f"this / {name}: per-pair CPU-time ratios {', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f}x"
            )


if __name__ == "__main__":
    main()
