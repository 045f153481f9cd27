"""``python -m spacy elmo ...``: our commands inside spaCy's own CLI.

spaCy loads the ``spacy_cli`` entry points when its CLI starts (``registry.cli``); loading this
module adds the ``spacy-elmo`` command group to spaCy's app under the name ``elmo``.
"""

from spacy.cli._util import app as spacy_app

from . import app

spacy_app.add_typer(app, name="elmo", help="ELMo for spaCy: pretrain a biLM, export weights, plot training")

# What the entry point names; spaCy registers it, the import above did the work.
elmo_commands = app
