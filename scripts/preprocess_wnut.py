"""The ``preprocess`` step for NER: the WNUT-16 training set -> ``.spacy`` splits
(split rule and repairs of malformed input: ``scripts.workflow.corpora.wnut``).

Usage: ``python -m scripts.preprocess_wnut [INPUT_PATH] [OUTPUT_DIR] [--limit-train N ...]``.
"""
import time
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from scripts.workflow.corpora.wnut import convert

app = typer.Typer(add_completion=False)


@app.command()
def main(
    input_path: Path = typer.Argument(Path("assets/wnut16/ner.txt"),
                                      help="WNUT-16 file: token TAB BIO-tag lines, a blank line after each tweet"),
    output_dir: Path = typer.Argument(Path("corpus/ner"), help="Where the .spacy splits and stats.json go"),
    limit_train: Optional[List[int]] = typer.Option(
        None, "--limit-train", min=1, metavar="N",
        help="Also write train_N.spacy with the first N training tweets (repeatable)"),
) -> None:
    """WNUT-16 NER training set -> spaCy DocBin files: train/dev/test.spacy (one Doc per tweet,
    doc.ents from the BIO tags), train_N.spacy subsets and stats.json."""
    start = time.time()
    convert(input_path, output_dir, limit_train or [])
    msg.info(f"Done in {time.time() - start:.1f}s")


if __name__ == "__main__":
    app()
