"""``spacy-elmo inspect``: the layer weights and gamma each component of a pipeline learned."""

from pathlib import Path
from typing import Optional

import typer

from ._app import app


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
