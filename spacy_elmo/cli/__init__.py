"""Command-line interface: thin shells over library functions."""
from ._app import app
from . import export_allennlp  # noqa: F401  (each import registers its subcommand)
from . import inspect  # noqa: F401


def main() -> None:
    app()
