"""The spaCy project's workflow: one command line app, ``python -m scripts COMMAND``.

``scripts/__main__.py`` is the app and names its commands; ``commands/`` holds the thin command
functions; ``workflow/`` the code the steps share. ``project.yml`` runs them from the project
root, where ``python -m`` finds this package without any change to the import path.
"""
