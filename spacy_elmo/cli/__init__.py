"""Command-line interface: thin shells over library functions, one module per command.

``embed``, ``export-allennlp``, ``init-config`` (its templates in :mod:`.templates`), ``inspect``,
``perplexity``, ``pretrain`` and ``plot-training``; :mod:`._app` is the command group and
:mod:`.spacy_cli` puts it inside spaCy's own CLI (``python -m spacy elmo``).
"""
from ._app import app
from . import export_allennlp  # noqa: F401  (each import registers its subcommand)
from . import embed  # noqa: F401
from . import init_config  # noqa: F401
from . import inspect  # noqa: F401
from . import perplexity  # noqa: F401
from . import pretrain  # noqa: F401
from . import plot_training  # noqa: F401


def main() -> None:
    app()
