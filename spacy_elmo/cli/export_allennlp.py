"""``spacy-elmo export-allennlp``: write a model in bilm-tf/AllenNLP's format."""
from pathlib import Path

import typer

from ._app import app


@app.command("export-allennlp")
def export_allennlp_cli(
    model_dir: Path = typer.Argument(..., help="A spacy-elmo model directory (e.g. OUTPUT_DIR/model-best)", exists=True, file_okay=False),
    output_dir: Path = typer.Argument(..., help="Where to write options.json and weights.hdf5"),
) -> None:
    """Convert a spacy-elmo model directory to options.json + weights.hdf5."""
    from ..nn.bilm import BiLM

    try:
        model = BiLM.from_disk(model_dir)
        try:
            model.config.to_options()  # refuses what bilm-tf's format cannot hold, before writing anything
        except ValueError as err:
            raise ValueError(f"{model_dir}: {err}") from err
        output_dir.mkdir(parents=True, exist_ok=True)
        model.to_allennlp(output_dir / "options.json", output_dir / "weights.hdf5")
    except (OSError, ValueError) as err:  # a full disk leaves an earlier export in output_dir as it was
        typer.echo(f"Error: {err}", err=True)
        raise typer.Exit(1) from err
    typer.echo(f"Wrote {output_dir / 'options.json'} and {output_dir / 'weights.hdf5'}")
