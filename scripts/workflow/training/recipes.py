"""Choose the ELMo listener's recipe options on the dev split (not part of any workflow).

Usage: ``tune_recipe.py CONFIG OUTPUT_DIR --component ner --seeds 0,1 --variant NAME KEY=VALUE
[KEY=VALUE ...] [--variant ...] [spacy train overrides...]``, e.g.
``--variant dropout components.ner.model.tok2vec.elmo.mix_dropout=0.5``. Every variant is
trained once per seed (``OUTPUT_DIR/NAME/seed{N}``, skipped when finished earlier with the
same inputs) and the table of the best dev scores (mean and spread over seeds) is printed and
written to ``OUTPUT_DIR/dev_scores.json``. Only dev scores are read: no choice sees the test
split. The configs' comments record what this chose.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from train_runs import parse_int_list, parse_overrides, train_unless_done

DEV_SCORE = {"ner": "ents_f", "tagger": "tag_acc"}


def parse_variants(items: Sequence[Sequence[str]]) -> List[Tuple[str, Dict[str, object]]]:
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
    meta = json.loads((model_dir / "model-best" / "meta.json").read_text(encoding="utf-8"))
    return float(meta["performance"][DEV_SCORE[component]])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("config", type=Path)
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--component", choices=sorted(DEV_SCORE), required=True)
    parser.add_argument("--seeds", type=parse_int_list, default=[0, 1])
    parser.add_argument("--variant", nargs="+", action="append", required=True, metavar="NAME KEY=VALUE")
    args, extra = parser.parse_known_args(argv)
    common = parse_overrides(extra)
    table = {}
    for name, overrides in parse_variants(args.variant):
        scores = []
        for seed in args.seeds:
            run_dir = args.output_dir / name / f"seed{seed}"
            train_unless_done(args.config, run_dir, {**common, **overrides, "system.seed": seed})
            scores.append(dev_score(run_dir, args.component))
        table[name] = {"overrides": overrides, "dev": scores, "mean": statistics.fmean(scores),
                       "std": statistics.stdev(scores) if len(scores) > 1 else 0.0}
    (args.output_dir / "dev_scores.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    for name, row in table.items():
        print(f"{name:24s} dev {100 * row['mean']:6.2f} ± {100 * row['std']:.2f}  ({', '.join(f'{100 * x:.2f}' for x in row['dev'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
