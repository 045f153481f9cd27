"""The ``spacy-elmo`` command group; each subcommand lives in its own module."""
import typer

app = typer.Typer(
    name="spacy-elmo",
    help="ELMo for spaCy: pretrain a biLM, embed text, convert weights, inspect pipelines.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _group() -> None:
    """ELMo for spaCy: pretrain a biLM, embed text, convert weights, inspect pipelines."""
