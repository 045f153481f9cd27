"""``python -m spacy elmo ...``: spaCy loads its ``spacy_cli`` entry points when its CLI starts,
and importing this module adds the ``spacy-elmo`` group to spaCy's app as ``elmo``."""

from spacy.cli._util import app as spacy_app

from . import app
from ._app import HELP

spacy_app.add_typer(app, name="elmo", help=HELP)

elmo_commands = app  # what the entry point names
