"""The ``spacy-elmo`` command group; each subcommand lives in its own module.

It reads like spaCy's own CLI: plain help text (no boxes, no markup, so ``[paths]`` stays as
written), help wide enough for the long option lists, ``--version``, and every failure as one
``Error: ...`` line with exit code 1, never a traceback. Commands word their own errors; the
group turns any file or value error a command did not catch into that line too.
"""

from typing import Any, Optional

import typer
from typer.core import TyperGroup


class PlainErrorsGroup(TyperGroup):
    """A command group whose subcommands fail with one ``Error:`` line, as click's own errors."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (OSError, ValueError) as err:
            typer.echo(f"Error: {_one_line(err)}", err=True)
            raise typer.Exit(1) from err


def _one_line(err: BaseException) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, OSError) and err.filename is not None and str(err.filename) not in text:
        text = f"{err.filename}: {text}"
    return text


app = typer.Typer(
    name="spacy-elmo",
    help="ELMo for spaCy: pretrain a biLM, embed text, convert weights, inspect pipelines.",
    cls=PlainErrorsGroup,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"max_content_width": 110, "help_option_names": ["-h", "--help"]},
)


def _show_version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"spacy-elmo {__version__}")
        raise typer.Exit()


@app.callback()
def _group(
    version: Optional[bool] = typer.Option(
        None, "--version", "-V", callback=_show_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """ELMo for spaCy: pretrain a biLM, embed text, convert weights, inspect pipelines."""
