"""The ``spacy-elmo`` command group, read like spaCy's own CLI: plain help (no boxes or markup, so
``[paths]`` stays as written), ``--version``, and every file, value or run error one ``Error: ...``
line with exit code 1, never a traceback."""

from typing import Any, Optional

import click
import typer
from typer.core import TyperGroup

STOPS = (click.exceptions.Exit, click.exceptions.Abort, typer.Exit, typer.Abort)  # RuntimeErrors, not failures


class PlainErrorsGroup(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        return sorted(self.commands)  # in --help, as click lists them

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (OSError, ValueError, RuntimeError) as err:  # RuntimeError: PretrainError's base
            if isinstance(err, STOPS):
                raise
            text = " ".join(str(err).split()) or type(err).__name__
            if isinstance(err, OSError) and err.filename is not None and str(err.filename) not in text:
                text = f"{err.filename}: {text}"
            typer.echo(f"Error: {text}", err=True)
            raise typer.Exit(1) from err


HELP = "ELMo for spaCy: pretrain a biLM, embed text, convert weights, inspect pipelines."

app = typer.Typer(
    name="spacy-elmo",
    help=HELP,
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


@app.callback(help=HELP)
def _group(
    version: Optional[bool] = typer.Option(
        None, "--version", "-V", callback=_show_version, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    pass
