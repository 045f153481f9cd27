"""``spacy-elmo export-allennlp``: write a biLM in bilm-tf/AllenNLP's format."""

from pathlib import Path
from typing import Optional

import typer

from ._app import app


@app.command("export-allennlp")
def export_allennlp_cli(
    source: str = typer.Argument(
        ...,
        help="A spacy-elmo model directory (e.g. a pretraining OUTPUT_DIR/model-best), a trained spaCy pipeline "
        "(directory or installed package) whose biLM to export, or any weights path the elmo component takes",
    ),
    output_dir: Path = typer.Argument(..., help="Where to write options.json and weights.hdf5"),
    component: Optional[str] = typer.Option(
        None,
        "--component",
        "-c",
        help="With a pipeline: the component whose biLM to export, the elmo component or one "
        "that replace_listeners gave its own copy (default: the only biLM)",
    ),
) -> None:
    """Write a biLM as options.json + weights.hdf5, e.g. one fine-tuned inside a trained pipeline."""
    bilm = _read(source, component)
    try:
        bilm.config.to_options()  # refuses what bilm-tf's format cannot hold, before writing anything
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from err
    output_dir.mkdir(parents=True, exist_ok=True)
    bilm.to_allennlp(output_dir / "options.json", output_dir / "weights.hdf5")  # all or nothing
    typer.echo(f"Wrote {output_dir / 'options.json'} and {output_dir / 'weights.hdf5'}")


def _read(source: str, component: Optional[str]):
    from spacy.util import is_package

    path = Path(source)
    if is_package(source) or ((path / "config.cfg").is_file() and (path / "meta.json").is_file()):
        import spacy

        from ..pipeline.mixes import pipeline_bilm

        return pipeline_bilm(spacy.load(source), component)
    if component is not None:
        raise ValueError(f"--component needs a trained spaCy pipeline; {source} is none")
    from ..loading import load_bilm

    return load_bilm(path)
