"""What the two ``.spacy`` converters write: splits, training subsets, stats.

Both corpora (Brown for POS, WNUT-16 for NER) end the same way: every split as a DocBin,
``train_N.spacy`` with the first N training Docs for the low-resource settings, and a
``stats.json`` that the report and the tests read.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Callable, Sequence


def write_docbin(docs: Sequence, path: Path, attrs: Sequence[str]) -> None:
    """The Docs as a DocBin holding only ``attrs`` (no user data: nothing pickled)."""
    from spacy.tokens import DocBin

    db = DocBin(attrs=list(attrs), store_user_data=False)
    for doc in docs:
        db.add(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    db.to_disk(path)


def write_train_subsets(
    train_docs: Sequence,
    output_dir: Path,
    limits: Sequence[int],
    attrs: Sequence[str],
    stats: dict,
    describe: Callable[[Sequence], dict],
    unit: str,
) -> None:
    """``train_N.spacy`` with the first N training Docs for each N, recorded in ``stats``."""
    from wasabi import msg

    for n in limits:
        subset = list(train_docs[:n])
        name = f"train_{n}.spacy"
        write_docbin(subset, output_dir / name, attrs)
        stats["splits"][f"train_{n}"] = describe(subset)
        if len(subset) < n:
            msg.warn(f"Only {len(subset)} training {unit} for {name}")
        msg.good(f"train_{n}: first {len(subset)} training {unit} -> {output_dir / name}")


def finish_stats(stats: dict, problems: Counter, output_dir: Path, problem_label: str) -> dict:
    """Report what input was skipped or repaired, then write ``stats.json``; returns ``stats``."""
    from wasabi import msg

    if problems:
        msg.warn(f"{problem_label}: {dict(problems)}")
    stats["problems"] = dict(problems)
    (output_dir / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return stats
