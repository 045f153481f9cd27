"""Run ``spacy-elmo pretrain`` so that a rerun continues an interrupted run of the same inputs.

Usage: ``pretrain_resumable.py CONFIG OUTPUT_DIR [pretrain overrides...]``.

Before it starts, a run records what it was started with (the command line and the SHA-256 of
the config and of every file or folder named on it) in ``OUTPUT_DIR/inputs.json``. On the
next call:

* same inputs and a checkpoint in OUTPUT_DIR: ``pretrain --resume`` (the interrupted run goes
  on from its last checkpoint instead of starting over);
* otherwise: the old run's files are removed and a fresh run starts.

A folder that does not look like a pretraining run (no ``inputs.json``, ``checkpoint.pt``,
``metrics.jsonl`` or ``config.cfg``) is never deleted: the script stops instead. The exit
code is the pretraining command's.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from train_runs import sha256_of_path

STAMP_FILE = "inputs.json"
CHECKPOINT_FILE = "checkpoint.pt"
RUN_MARKERS = (STAMP_FILE, CHECKPOINT_FILE, "metrics.jsonl", "config.cfg")


def describe_inputs(config: Path, overrides: Sequence[str]) -> dict:
    """What identifies a run: its arguments and the content of every path among them."""
    contents = {str(config): sha256_of_path(config)}
    for arg in overrides:
        path = Path(arg)
        if not arg.startswith("-") and path.exists():
            contents[arg] = sha256_of_path(path)
    return {"config": str(config), "overrides": list(overrides), "sha256": contents}


def read_stamp(output_dir: Path) -> Optional[dict]:
    try:
        return json.loads((output_dir / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def clear_previous_run(output_dir: Path) -> None:
    """Remove an old run's folder; refuse a non-empty folder that is not a pretraining run."""
    if not output_dir.exists():
        return
    if any(output_dir.iterdir()) and not any((output_dir / m).exists() for m in RUN_MARKERS):
        raise SystemExit(f"{output_dir} is not empty and holds no pretraining run; "
                         f"not deleting it: choose another output folder")
    shutil.rmtree(output_dir)


def pretrain_command(config: Path, output_dir: Path, overrides: Sequence[str], resume: bool) -> List[str]:
    cmd = [sys.executable, "-m", "spacy_elmo", "pretrain", str(config), str(output_dir)]
    return cmd + (["--resume"] if resume else []) + list(overrides)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("config", type=Path)
    parser.add_argument("output_dir", type=Path)
    args, overrides = parser.parse_known_args(argv)
    inputs = describe_inputs(args.config, overrides)
    resume = read_stamp(args.output_dir) == inputs and (args.output_dir / CHECKPOINT_FILE).is_file()
    if resume:
        print(f"pretrain: same inputs as the run in {args.output_dir}: resuming it", flush=True)
    else:
        clear_previous_run(args.output_dir)
        args.output_dir.mkdir(parents=True)
        (args.output_dir / STAMP_FILE).write_text(json.dumps(inputs, indent=2) + "\n", encoding="utf-8")
    cmd = pretrain_command(args.config, args.output_dir, overrides, resume)
    print("Running: " + " ".join(cmd), flush=True)
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
