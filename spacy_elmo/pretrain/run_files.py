"""The names of what a pretraining run writes into its ``OUTPUT_DIR``, defined once.

The run, ``--resume``, ``--auto-resume``, ``spacy-elmo perplexity`` and ``plot-training`` all
find these files by these names; nothing else spells them.
"""
from __future__ import annotations

from pathlib import Path

CONFIG_FILE = "config.cfg"  # the config of the run's first session, as run
VOCAB_FILE = "vocab.json"  # the output vocabulary
STATS_FILE = "corpus_stats.json"  # what the vocabulary pass read, skipped and cut
CHECKPOINT_FILE = "checkpoint.pt"  # everything a resume needs
METRICS_FILE = "metrics.jsonl"  # one line per evaluation
RUN_FILE = "run.json"  # how the last session ended
INPUTS_FILE = "inputs.json"  # what --auto-resume compares: config, overrides, input files
MODEL_LAST = "model-last"
MODEL_BEST = "model-best"

# Files that only a pretraining run writes: a folder holding one of them is a run's folder.
RUN_MARKERS = (INPUTS_FILE, CHECKPOINT_FILE, METRICS_FILE, RUN_FILE, STATS_FILE)


def is_run_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a pretraining run (finished, interrupted or just started)."""
    return folder.is_dir() and any((folder / name).exists() for name in RUN_MARKERS)
