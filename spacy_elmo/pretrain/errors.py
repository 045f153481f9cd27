"""The errors of problems a user can fix, printed as one line naming the file or setting; each is
also the built-in type of its kind (``OSError``, ``ValueError``), so code catching those still does."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import ContextManager, Iterator, Union


class PretrainError(RuntimeError):
    """A problem with the inputs or the output folder, explained for the user."""


class ConfigError(PretrainError, ValueError):
    """A config value or command-line override that cannot be used; the message names it."""


class InputError(PretrainError, ValueError):
    """A file the run reads (word list, initial weights) holds something it cannot use."""


class InputFileError(OSError, PretrainError):
    """A file the run reads cannot be read; the message names it."""


class InputNotFoundError(InputFileError, FileNotFoundError):
    """A file or folder the run was given does not exist."""


class OutputFolderError(OSError, PretrainError):
    """A file in the output folder cannot be written (a full disk, no permission) or removed."""


class CheckpointError(OSError, PretrainError):
    """A checkpoint or saved model that cannot be written or read; the message names the file."""


class ForeignCheckpointError(CheckpointError, ValueError):
    """A file that is not a spacy-elmo checkpoint, or one written by a newer release."""


class CheckpointMismatchError(CheckpointError, ValueError):
    """A checkpoint of another run: its model's sizes or vocabulary are not the run's own."""


class EmptyCorpusError(PretrainError, ValueError):
    """A whole pass over (a shard of) the corpus produced no sentence."""


class ResumeSettingsError(PretrainError, ValueError):
    """A resumed run asked for a change that cannot be honoured."""


def reading(path: Union[str, Path]) -> ContextManager[None]:
    return _naming(path, InputFileError)


def writing(path: Union[str, Path]) -> ContextManager[None]:
    return _naming(path, OutputFolderError)


@contextmanager
def _naming(path: Union[str, Path], kind: type[OSError]) -> Iterator[None]:
    """An ``OSError`` as ``kind`` (a missing input as :class:`InputNotFoundError`), naming ``path``."""
    try:
        yield
    except PretrainError:
        raise
    except OSError as err:
        if kind is InputFileError and isinstance(err, FileNotFoundError):
            kind = InputNotFoundError
        if err.errno is not None and err.strerror is not None:
            raise kind(err.errno, err.strerror, err.filename if err.filename is not None else str(path)) from err
        raise kind(str(err) if str(path) in str(err) else f"{path}: {err}") from err
