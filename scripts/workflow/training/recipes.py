"""Choose the ELMo listener's recipe options on the dev split (not part of any workflow).

A variant is a name and ``KEY=VALUE`` config overrides (``python -m scripts tune-recipe``, e.g.
``--variant "dropout components.ner.model.tok2vec.elmo.mix_dropout=0.5"``). Every variant is
trained once per seed (``OUTPUT_DIR/NAME/seed{N}``, skipped when finished earlier with the
same inputs) and the table of the best dev scores (mean and spread over seeds) is printed and
written to ``OUTPUT_DIR/dev_scores.json``. Only dev scores are read: no choice sees the test
split. The configs' comments record what this chose.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

from .runs import parse_overrides, train_unless_done

DEV_SCORE = {"ner": "ents_f", "tagger": "tag_acc"}


def parse_variants(items: Sequence[Sequence[str]]) -> List[Tuple[str, Dict[str, object]]]:
    """``[(name, overrides)]`` from ``[name, "KEY=VALUE", ...]`` items; ValueError on a bad pair."""
    variants = []
    for name, *pairs in items:
        overrides = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                raise ValueError(f"variant {name}: expected KEY=VALUE, not {pair!r}")
            overrides.update(parse_overrides([f"--{key}", value]))
        variants.append((name, overrides))
    return variants


def dev_score(model_dir: Path, component: str) -> float:
    """The best dev score spaCy recorded for a run (``model-best/meta.json``)."""
    meta = json.loads((model_dir / "model-best" / "meta.json").read_text(encoding="utf-8"))
    return float(meta["performance"][DEV_SCORE[component]])


def tune(config: Path, output_dir: Path, component: str, seeds: Sequence[int],
         variants: Sequence[Tuple[str, Dict[str, object]]], common: Dict[str, Any]) -> Dict[str, dict]:
    """Train every variant once per seed; ``{name: overrides, dev scores, mean, std}``, also
    written to ``OUTPUT_DIR/dev_scores.json``."""
    table = {}
    for name, overrides in variants:
        scores = []
        for seed in seeds:
            run_dir = output_dir / name / f"seed{seed}"
            train_unless_done(config, run_dir, {**common, **overrides, "system.seed": seed})
            scores.append(dev_score(run_dir, component))
        table[name] = {"overrides": overrides, "dev": scores, "mean": statistics.fmean(scores),
                       "std": statistics.stdev(scores) if len(scores) > 1 else 0.0}
    (output_dir / "dev_scores.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    return table


def table_lines(table: Dict[str, dict]) -> List[str]:
    """One line per variant: mean ± std of the dev scores, then each seed's."""
    return [f"{name:24s} dev {100 * row['mean']:6.2f} ± {100 * row['std']:.2f}  "
            f"({', '.join(f'{100 * x:.2f}' for x in row['dev'])})" for name, row in table.items()]
