"""The ``preprocess`` step for POS tagging: the Brown files -> ``.spacy`` splits with UPOS tags
(split rule and tag mapping: ``scripts.workflow.corpora.brown`` and ``brown_upos``).

Usage: ``python -m scripts.preprocess_brown [BROWN_DIR] [OUTPUT_DIR] [--limit-train N ...]``.
"""
import time
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from scripts.workflow.corpora.brown import convert

app = typer.Typer(add_completion=False)


@app.command()
def main(
    brown_dir: Path = typer.Argument(Path("assets/brown"), help="The Brown files (ca01 .. cr09)"),
    output_dir: Path = typer.Argument(Path("corpus/pos"), help="Where the .spacy splits and stats.json go"),
    limit_train: Optional[List[int]] = typer.Option(
        None, "--limit-train", min=1, metavar="N",
        help="Also write train_N.spacy with the first N training sentences (repeatable)"),
) -> None:
    """Brown corpus -> spaCy DocBin files for POS tagging: train/dev/test.spacy (one Doc per
    sentence, UPOS in tag_ and pos_), train_N.spacy subsets and stats.json."""
    start = time.time()
    convert(brown_dir, output_dir, limit_train or [])
    msg.info(f"Done in {time.time() - start:.1f}s")


if __name__ == "__main__":
    app()
