"""Train one spaCy config once per random seed: ``OUTPUT_DIR/seed{N}/model-best`` for each N.

Usage: ``train_seeds.py CONFIG OUTPUT_DIR --seeds 0,1,2 [spacy train overrides...]``, e.g.
``--paths.train corpus/ner/train_1000.spacy --training.max_steps 1000``. Each run is
``spacy train CONFIG --output OUTPUT_DIR/seed{N} --system.seed N [overrides]``, on the
GPU that ``--gpu`` names (``auto``: one if torch sees it and CuPy is installed). A seed that
finished earlier with the same inputs is skipped, so a rerun after a failure continues with
the seed that failed. The spread over seeds is what the report shows for the small settings.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from train_runs import gpu_id, parse_int_list, parse_overrides, train_unless_done


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("config", type=Path)
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--seeds", type=parse_int_list, default=[0, 1, 2],
                        help="comma-separated seeds (default 0,1,2)")
    parser.add_argument("--gpu", type=gpu_id, default=-1,
                        help="GPU id for spacy train, -1 for the CPU (default), or auto")
    args, extra = parser.parse_known_args(argv)
    overrides = parse_overrides(extra)
    if "system.seed" in overrides:
        parser.error("give the seeds with --seeds, not --system.seed")
    for seed in args.seeds:
        run_overrides = {**overrides, "system.seed": seed}
        train_unless_done(args.config, args.output_dir / f"seed{seed}", run_overrides, use_gpu=args.gpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
