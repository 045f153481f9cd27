"""``spacy-elmo plot-training``: a PNG of a pretraining run's loss and perplexity curves."""

from pathlib import Path
from typing import Optional

import typer

from ._app import app


@app.command("plot-training")
def plot_training_cli(
    output_dir: Path = typer.Argument(
        ..., help="A pretraining OUTPUT_DIR (with metrics.jsonl)", exists=True, file_okay=False
    ),
    image: Optional[Path] = typer.Option(
        None, "--output", "-o", help="Where to write the PNG (default OUTPUT_DIR/training.png)"
    ),
) -> None:
    """Plot train loss and train/dev perplexity against steps."""
    from ..pretrain.plot import plot_training

    typer.echo(f"Wrote {plot_training(output_dir, image)}")
