"""What a trained pipeline holds: ``spacy-elmo inspect`` prints the layer mixes its components learned,
``spacy-elmo export-allennlp`` writes one of its biLMs (or any other) in bilm-tf's format."""

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
    import spacy
    from spacy.util import is_package

    from ..loading import load_bilm
    from ..pipeline.mixes import pipeline_bilm

    path = Path(source)
    if is_package(source) or ((path / "config.cfg").is_file() and (path / "meta.json").is_file()):
        bilm = pipeline_bilm(spacy.load(source), component)
    elif component is not None:
        raise ValueError(f"--component needs a trained spaCy pipeline; {source} is none")
    else:
        bilm = load_bilm(path)
    try:
        bilm.config.to_options()  # refuses what bilm-tf's format cannot hold, before writing anything
    except ValueError as err:
        raise ValueError(f"{source}: {err}") from err
    output_dir.mkdir(parents=True, exist_ok=True)
    bilm.to_allennlp(output_dir / "options.json", output_dir / "weights.hdf5")  # all or nothing
    typer.echo(f"Wrote {output_dir / 'options.json'} and {output_dir / 'weights.hdf5'}")


@app.command("inspect")
def inspect_cli(
    pipeline: str = typer.Argument(
        ..., help="A trained spaCy pipeline: a directory (e.g. OUTPUT/model-best) or an installed package name"
    ),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Also write a bar chart of the weights to this PNG"),
) -> None:
    """Print each ELMo listener's softmax layer weights, gamma and layer_norm, and which mix
    token._.elmo uses when the elmo component has mix_from."""
    from ..pipeline import Elmo
    from ..pipeline.mixes import learned_mixes, plot_mixes, pyplot

    if plot is not None:
        pyplot()  # before the pipeline is loaded
    nlp = _load(pipeline)
    mixes = learned_mixes(nlp)
    if not mixes:
        typer.echo(f"{pipeline}: no component with an initialized ELMo listener")
        raise typer.Exit(code=1)
    for mix in mixes:
        kind = ", fixed layer weights" if mix.fixed else ""
        source = "its own biLM copy" if mix.upstream is None else f"listens to '{mix.upstream}'"
        typer.echo(f"{mix.component} ({source}, grad_factor {mix.grad_factor:g}{kind})")
        for layer, weight in enumerate(mix.weights):
            bar = "#" * round(40 * weight)
            typer.echo(f"  layer {layer}  {weight:.4f}  {bar}")
        typer.echo(f"  gamma    {mix.gamma:.4f}")
        typer.echo(f"  layer_norm  {str(mix.layer_norm).lower()}")
    for name, component in nlp.pipeline:
        mix_from = getattr(component, "mix_from", None)
        if isinstance(component, Elmo) and mix_from is not None:
            typer.echo(f"{name}: token._.elmo uses the mix of '{mix_from}' (mix_from)")
    if plot is not None:
        plot_mixes(mixes, plot)
        typer.echo(f"Wrote {plot}")


def _load(pipeline: str):
    """Load as ``spacy evaluate`` does: an installed package name or a pipeline directory."""
    import spacy
    from spacy.util import is_package

    path = Path(pipeline)
    if not is_package(pipeline) and not path.is_dir():
        what = "a file, not a pipeline directory" if path.exists() else "neither an installed package nor a directory"
        raise ValueError(f"'{pipeline}' is {what}")
    try:
        return spacy.load(pipeline)
    except (OSError, ValueError) as err:
        raise ValueError(f"cannot load the pipeline '{pipeline}': {err}") from err
