"""The spaCy project's steps, one command per module: ``python -m scripts.NAME --help``.

``project.yml`` runs them from the project root, where ``python -m`` finds this package without
any change to the import path. The code the steps share is the ``workflow`` package beside them.
"""
