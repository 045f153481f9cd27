"""``spacy-elmo inspect``: the layer weights and gamma each component of a pipeline learned."""
from pathlib import Path
from typing import Optional

import typer

from ._app import app


@app.command("inspect")
def inspect_cli(
    pipeline_dir: Path = typer.Argument(
        ..., help="A trained spaCy pipeline (e.g. OUTPUT/model-best)", exists=True, file_okay=False
    ),
    plot: Optional[Path] = typer.Option(None, "--plot", help="Also write a bar chart of the weights to this PNG"),
) -> None:
    """Print each ELMo listener's softmax layer weights and gamma."""
    import spacy

    from ..pipeline.mixes import learned_mixes, plot_mixes

    nlp = spacy.load(pipeline_dir)
    mixes = learned_mixes(nlp)
    if not mixes:
        typer.echo(f"{pipeline_dir}: no component with an initialized ELMo listener")
        raise typer.Exit(code=1)
    for mix in mixes:
        kind = ", fixed layer weights" if mix.fixed else ""
        source = "its own biLM copy" if mix.upstream is None else f"listens to '{mix.upstream}'"
        typer.echo(f"{mix.component} ({source}, grad_factor {mix.grad_factor:g}{kind})")
        for layer, weight in enumerate(mix.weights):
            bar = "#" * round(40 * weight)
            typer.echo(f"  layer {layer}  {weight:.4f}  {bar}")
        typer.echo(f"  gamma    {mix.gamma:.4f}")
    if plot is not None:
        plot_mixes(mixes, plot)
        typer.echo(f"Wrote {plot}")
