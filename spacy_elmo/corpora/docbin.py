"""The Docs of a ``.spacy`` file (a spaCy ``DocBin``), with one clear error when it is damaged."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator


class UnreadableFile(ValueError):
    """A corpus file that cannot be read at all; ``detail`` says why, the message adds the path."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


def read_docbin(path: Path, vocab: Any) -> Iterator[Any]:
    """The Docs of ``path``, rebuilt on ``vocab``, one at a time.

    A corrupt DocBin can fail in many ways (zlib, msgpack, spaCy's own checks), at load or while
    the Docs are rebuilt; every one becomes :class:`UnreadableFile`."""
    from spacy.tokens import DocBin

    try:
        yield from DocBin().from_disk(path).get_docs(vocab)
    except Exception as err:  # noqa: BLE001 -- see the docstring
        raise UnreadableFile(path, f"not a readable .spacy file ({type(err).__name__}: {err})") from err
