"""Command-line interface: thin shells over library functions, one module per command (each
import registers its subcommand); :mod:`._app` is the command group and :mod:`.spacy_cli` puts it
inside spaCy's own CLI (``python -m spacy elmo``)."""

from . import embed, export_allennlp, init_config, inspect, perplexity, plot_training, pretrain  # noqa: F401
from ._app import app


def main() -> None:
    app()
