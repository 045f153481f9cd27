"""The ``preprocess-genres`` step: Brown paragraphs -> ``.spacy`` splits for genre classification
(15 genres, split by file; rules in ``scripts.workflow.corpora.brown_genres``).

Usage: ``python -m scripts.preprocess_genres [BROWN_DIR] [OUTPUT_DIR] --train-per-file N
--dev-per-file N --test-per-file N`` (0: every paragraph of a file).
"""
import time
from pathlib import Path

import typer
from wasabi import msg

from scripts.workflow.corpora.brown_genres import convert

app = typer.Typer(add_completion=False)


@app.command()
def main(
    brown_dir: Path = typer.Argument(Path("assets/brown"), help="The Brown files (ca01 .. cr09)"),
    output_dir: Path = typer.Argument(Path("corpus/genres"), help="Where the .spacy splits and stats.json go"),
    train_per_file: int = typer.Option(0, "--train-per-file", min=0, help="Most paragraphs kept per training file (0: all)"),
    dev_per_file: int = typer.Option(0, "--dev-per-file", min=0, help="Most paragraphs kept per dev file (0: all)"),
    test_per_file: int = typer.Option(0, "--test-per-file", min=0, help="Most paragraphs kept per test file (0: all)"),
) -> None:
    """Brown corpus -> train/dev/test.spacy with one Doc per paragraph, its file's genre in
    doc.cats (exactly one of 15 is 1.0), and stats.json."""
    start = time.time()
    convert(brown_dir, output_dir, {"train": train_per_file, "dev": dev_per_file, "test": test_per_file})
    msg.info(f"Done in {time.time() - start:.1f}s")


if __name__ == "__main__":
    app()
