"""The ``preprocess`` step for pretraining: Brown train+dev text and the SOTU addresses -> one
tokenized sentence per line (sources, order and dev rule: ``scripts.workflow.corpora.text``).

Usage: ``python -m scripts.preprocess_text [--brown-dir DIR] [--sotu-dir DIR] [--output-dir DIR]``.
"""
import time
from pathlib import Path

import typer
from wasabi import msg

from scripts.workflow.corpora.text import build

app = typer.Typer(add_completion=False)


@app.command()
def main(
    sotu_dir: Path = typer.Option(Path("assets/sotu"), "--sotu-dir", help="The SOTU addresses (*.txt)"),
    brown_dir: Path = typer.Option(Path("assets/brown"), "--brown-dir", help="The Brown files"),
    no_sotu: bool = typer.Option(False, "--no-sotu", help="Leave out the SOTU texts"),
    no_brown: bool = typer.Option(False, "--no-brown", help="Leave out the Brown text"),
    output_dir: Path = typer.Option(Path("corpus/text"), "--output-dir",
                                    help="Where train.txt, dev.txt and stats.json go"),
    max_words: int = typer.Option(0, "--max-words", min=0, help="Stop after about this many words (0: no limit)"),
    max_sentence_words: int = typer.Option(150, "--max-sentence-words", min=0,
                                           help="Cut longer lines (0: no limit)"),
) -> None:
    """Plain-text corpus for pretraining the biLM: train.txt and dev.txt (every 50th line),
    one tokenized sentence per line, and stats.json."""
    start = time.time()
    build(None if no_sotu else sotu_dir, None if no_brown else brown_dir, output_dir, max_words,
          max_sentence_words)
    msg.info(f"Done in {time.time() - start:.1f}s")


if __name__ == "__main__":
    app()
