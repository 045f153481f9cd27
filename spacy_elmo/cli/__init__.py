"""Command-line interface: thin shells over library functions."""
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
