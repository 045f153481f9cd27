"""Command-line interface: thin shells over library functions (each module's import registers its
commands); :mod:`._app` is the command group, :mod:`.spacy_cli` puts it into ``python -m spacy``."""

from . import embed, init_config, inspect, pretrain  # noqa: F401
from ._app import app


def main() -> None:
    app()
