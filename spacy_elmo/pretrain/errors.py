"""The error a pretraining run raises for problems with its inputs or its output folder."""


class PretrainError(RuntimeError):
    """A problem with the inputs or the output folder, explained for the user."""
