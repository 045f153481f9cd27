"""Reading one corpus file, the same way for ``embed`` and pretraining: lines are read in binary
mode, bounded, each with the byte offset after it, so an undecodable or huge line is reported
instead of ending the read."""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterator, Optional, Union

PathLike = Union[str, Path]
FORMATS = ("text", "jsonl", "spacy")
JSONL_SUFFIXES = (".jsonl", ".json", ".ndjson")
BINARY_SNIFF_BYTES = 8192
SKIP_CHUNK_BYTES = 1 << 20


def guess_format(path: PathLike) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    return "spacy" if suffix == ".spacy" else "text"


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
    """What stops ``path`` from being read as ``input_format`` (a NUL byte means a binary file), or None."""
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


# ---------------------------------------------------------------------------- lines
@dataclass(frozen=True)
class Line:
    """One line; ``number`` counts from 1 at the offset reading started from."""

    number: int
    end: int  # byte offset just after the line (and its newline)
    text: Optional[str]  # without the line break (and a BOM at the start of the file); None if not UTF-8
    cut: bool = False  # longer than max_line_bytes: text holds its first max_line_bytes bytes
    bad_byte: Optional[int] = None  # where decoding failed, when text is None


def read_lines(path: Path, max_line_bytes: int, start: int = 0) -> Iterator[Line]:
    """Every line of ``path`` from byte ``start`` on, blank and undecodable ones included."""
    if max_line_bytes < 1:
        raise ValueError("max_line_bytes must be positive")
    with open(path, "rb") as handle:
        handle.seek(start)
        offset = start
        number = 0
        while True:
            raw = handle.readline(max_line_bytes + 1)
            if not raw:
                return
            number += 1
            start_of_file = offset == 0
            offset += len(raw)
            cut = len(raw) > max_line_bytes and not raw.endswith(b"\n")
            if cut:
                offset += _skip_rest_of_line(handle)
                raw = raw[:max_line_bytes]
            text, bad_byte = _decode(raw, cut)
            if text is None:
                yield Line(number, offset, None, cut, bad_byte)
                continue
            if start_of_file and text.startswith("\ufeff"):
                text = text[1:]
            yield Line(number, offset, text.rstrip("\r\n"), cut)


def _skip_rest_of_line(handle: IO[bytes]) -> int:
    skipped = 0
    while True:
        piece = handle.readline(SKIP_CHUNK_BYTES)
        skipped += len(piece)
        if not piece or piece.endswith(b"\n"):
            return skipped


def _decode(raw: bytes, cut: bool) -> tuple[Optional[str], Optional[int]]:
    """Strict UTF-8 (text, None), or (None, first bad byte); a cut line may end inside a character."""
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(raw, final=not cut), None
    except UnicodeDecodeError as err:
        return None, err.start


# ---------------------------------------------------------------------------- JSONL and DocBins
class BadJsonLine(ValueError):
    """A line that is not a JSON object with the wanted fields (``embed`` stops, pretraining goes on)."""


@dataclass(frozen=True)
class JsonlRecord:
    text: str
    tokens: Optional[list[str]] = None

    def has_lone_surrogate(self) -> bool:
        return has_lone_surrogate(self.text) or any(has_lone_surrogate(t) for t in self.tokens or ())


def parse_jsonl_line(line: str, text_field: str = "text", with_tokens: bool = False) -> JsonlRecord:
    try:
        record = json.loads(line)
    except ValueError as err:
        raise BadJsonLine(f"not valid JSON: {err}") from err
    except RecursionError as err:
        raise BadJsonLine("not usable JSON: nested too deeply") from err
    if not isinstance(record, dict) or not isinstance(record.get(text_field), str):
        raise BadJsonLine(f"expected an object with a string {text_field!r} field")
    if not with_tokens:
        return JsonlRecord(record[text_field])
    tokens = record.get("tokens")
    if tokens is not None and not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
        raise BadJsonLine("'tokens' must be a list of strings")
    return JsonlRecord(record[text_field], tokens)


def has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class UnreadableFile(ValueError):
    """A corpus file that cannot be read at all."""

    def __init__(self, path: Path, detail: str) -> None:
        super().__init__(f"{path}: {detail}")
        self.path = path
        self.detail = detail


def read_docbin(path: Path, vocab: Any) -> Iterator[Any]:
    """The Docs of a ``.spacy`` file; every way a damaged one fails is :class:`UnreadableFile`."""
    from spacy.tokens import DocBin

    try:
        yield from DocBin().from_disk(path).get_docs(vocab)
    except Exception as err:  # noqa: BLE001 -- see the docstring
        raise UnreadableFile(path, f"not a readable .spacy file ({type(err).__name__}: {err})") from err
