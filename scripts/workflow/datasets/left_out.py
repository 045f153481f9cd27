"""Datasets a user leaves out (project.yml's ``leave_out`` variable), and everything built on them.

Why: CoNLL-2003 is Reuters text under research terms; a user who may not use it sets
``--vars.leave_out=conll2003`` and still runs every workflow. Weasel runs a workflow's steps as
listed and refuses a step whose ``deps`` are missing, so the steps built on a left-out dataset
still run, but do nothing and say so:

* ``fetch --leave-out NAME`` fetches nothing for the asset NAME (its ``extract_to`` folder is
  created empty, for the steps that declare it);
* its preprocessing step writes its output folder with empty corpora and a marker file,
  ``left_out.json``, naming the dataset;
* a training step whose training corpus lies in such a folder writes only the marker into its own
  output folder (``train-seeds``), and so does a pretraining step that serves only that corpus
  (``spacy-pretrain --for-corpus``);
* the evaluation, price and report steps leave out a setting whose training folder holds the
  marker.

The marker is the only signal: no empty corpus or folder is ever taken for a left-out one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import FrozenSet, Optional

MARKER = "left_out.json"


def parse_names(text: Optional[str]) -> FrozenSet[str]:
    """``"conll2003, x"`` -> ``{"conll2003", "x"}``; empty or None: none."""
    return frozenset(part.strip() for part in (text or "").replace(" ", ",").split(",") if part.strip())


def mark(folder: Path, dataset: str) -> None:
    """Record in ``folder`` (created) that it holds nothing because ``dataset`` was left out."""
    folder.mkdir(parents=True, exist_ok=True)
    text = {"left_out": dataset, "why": "project.yml's leave_out variable names it"}
    (folder / MARKER).write_text(json.dumps(text, indent=2) + "\n", encoding="utf-8")


def left_out(path: Path) -> Optional[str]:
    """The dataset left out if ``path`` (a folder, or a file in one) carries the marker, else None."""
    path = Path(path)
    folder = path if path.is_dir() else path.parent
    try:
        return str(json.loads((folder / MARKER).read_text(encoding="utf-8"))["left_out"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
