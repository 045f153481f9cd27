"""``spacy-elmo init-config``: a complete training config whose components listen to ELMo."""

from pathlib import Path
from typing import Optional

import typer

from ._app import app


@app.command("init-config")
def init_config_cli(
    output_file: Path = typer.Argument(
        ..., help="Where to write the config ('-' for stdout)", dir_okay=False, allow_dash=True
    ),
    pipeline: str = typer.Option(
        "ner",
        "--pipeline",
        "-p",
        help="Comma-separated components that read ELMo features: parser, ner, tagger, morphologizer, senter, "
        "trainable_lemmatizer, textcat, textcat_multilabel, spancat",
    ),
    weights: Optional[Path] = typer.Option(
        None,
        "--weights",
        "-w",
        help="ELMo weights ([paths] elmo): spacy-elmo model dir, AllenNLP dir, or .hdf5 with options.json beside it",
    ),
    gpu: bool = typer.Option(False, "--gpu", "-G", help="Settings for training on a GPU (spacy train --gpu-id 0)"),
    lang: str = typer.Option("en", "--lang", "-l", help="Language code of the pipeline"),
    force: bool = typer.Option(False, "--force", "-F", help="Overwrite OUTPUT_FILE if it exists"),
) -> None:
    """Write a spacy train config: elmo first, each component with an ELMo listener in its tok2vec."""
    from .templates.training_config import config_text, training_config

    names = [name.strip() for name in pipeline.split(",") if name.strip()]
    if str(output_file) != "-" and output_file.exists() and not force:
        typer.echo(f"Error: {output_file} already exists: pass --force (-F) to overwrite it", err=True)
        raise typer.Exit(code=1)
    config = training_config(names, weights=None if weights is None else weights.resolve(), gpu=gpu, lang=lang)
    elmo = "" if weights is not None else " --paths.elmo WEIGHTS"
    text = (
        f"# Written by spacy-elmo init-config --pipeline {','.join(names)}{' --gpu' if gpu else ''}. Train with:\n"
        "#   python -m spacy train CONFIG --output OUTPUT --paths.train TRAIN.spacy --paths.dev DEV.spacy"
        f"{elmo}{' --gpu-id 0' if gpu else ''}\n\n{config_text(config)}"
    )
    if str(output_file) == "-":
        typer.echo(text, nl=False)
        return
    created = not output_file.parent.exists()
    try:
        output_file.parent.mkdir(parents=True, exist_ok=True)
        output_file.write_text(text, encoding="utf8")
    except OSError as err:
        typer.echo(f"Error: cannot write {output_file}: {err.strerror or err}", err=True)
        raise typer.Exit(code=1) from err
    if created:
        typer.echo(f"Created the folder {output_file.parent}", err=True)
    typer.echo(f"Wrote {output_file}", err=True)
