"""Command-line interface: thin shells over library functions, one module per command.

``embed``, ``export-allennlp``, ``init-config`` (its templates in :mod:`.templates`), ``inspect``,
``perplexity``, ``pretrain`` and ``plot-training``; :mod:`._app` is the command group and
:mod:`.spacy_cli` puts it inside spaCy's own CLI (``python -m spacy elmo``).
"""

from . import (
    embed,  # noqa: F401
    export_allennlp,  # noqa: F401  (each import registers its subcommand)
    init_config,  # noqa: F401
    inspect,  # noqa: F401
    perplexity,  # noqa: F401
    plot_training,  # noqa: F401
    pretrain,  # noqa: F401
)
from ._app import app


def main() -> None:
    app()
