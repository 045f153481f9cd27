"""Which corpus files to read, as what, and which to leave alone.

The format follows the file name, the same way for ``embed`` and for pretraining, so a file is
never JSONL to one and text to the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

PathLike = Union[str, Path]
FORMATS = ("text", "jsonl", "spacy")
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
BINARY_SNIFF_BYTES = 8192


def guess_format(path: PathLike) -> str:
    """``"jsonl"``, ``"spacy"`` or ``"text"`` (anything else), from the file name."""
    suffix = Path(path).suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    if suffix == ".spacy":
        return "spacy"
    return "text"


def list_corpus_files(path: PathLike) -> list[Path]:
    """A file, or every non-hidden file under a folder, in a fixed (sorted) order."""
    path = Path(path)
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(
            p
            for p in path.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    raise FileNotFoundError(f"Corpus path not found: {path}")


@dataclass(frozen=True)
class FileProblem:
    """Why a whole file is not read: ``kind`` is ``"unreadable"``, ``"empty"`` or ``"binary"``."""

    kind: str
    detail: str


def file_problem(path: Path, input_format: str) -> Optional[FileProblem]:
    """What stops ``path`` from being read as ``input_format``, or None when nothing does.

    A NUL byte in the first few kB means a binary (often compressed) file, whose "lines" would
    be noise; ``.spacy`` files are binary by design and are not checked for it."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(BINARY_SNIFF_BYTES)
    except OSError as err:
        return FileProblem("unreadable", f"cannot be read ({err})")
    if not head:
        return FileProblem("empty", "empty file")
    if input_format != "spacy" and b"\x00" in head:
        return FileProblem("binary", "looks binary (NUL bytes; compressed?), not text")
    return None
