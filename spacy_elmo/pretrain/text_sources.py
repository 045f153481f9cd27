"""Reading raw records (paragraphs, sentences or Docs) from files, one at a time, resumably.

Plain text gives one record per non-blank line, ``.jsonl`` one per line (its text field), and
``.spacy`` one per Doc. Files are read in binary mode so that an invalid UTF-8 line is skipped
and counted instead of ending the run, and a line is never read past ``max_line_bytes``: a
1 GB line without a newline costs no more memory than a short one. Every record carries the
position just after it, so a reader can restart there (byte offset, or Doc index).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator, Optional, Union

from ..sentence_sources import has_lone_surrogate

logger = logging.getLogger("spacy_elmo.pretrain")

BINARY_SNIFF_BYTES = 8192
SKIP_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class RecordPosition:
    """Where a pass over the corpus stands: the next record is at ``offset`` in file
    ``file_index`` (bytes for text/JSONL, Doc index for ``.spacy``); ``record_index`` counts the
    records before it in the pass, which is what sharding uses."""

    file_index: int = 0
    offset: int = 0
    record_index: int = 0


@dataclass
class ReadStats:
    """What a pass skipped or cut. With ``warn`` the first case per file is logged."""

    warn: bool = False
    records: int = 0
    files_read: int = 0
    empty_files: list[str] = field(default_factory=list)
    binary_files: list[str] = field(default_factory=list)
    unreadable_files: list[str] = field(default_factory=list)
    invalid_utf8_lines: int = 0
    overlong_lines: int = 0
    bad_json_lines: int = 0
    _warned: set[tuple[str, str]] = field(default_factory=set, repr=False)

    def note(self, kind: str, path: Path, detail: str) -> None:
        """Log the first case of ``kind`` in ``path`` (the rest are only counted)."""
        if self.warn and (kind, str(path)) not in self._warned:
            self._warned.add((kind, str(path)))
            logger.warning("%s: %s (further cases in this file are only counted)", path, detail)

    def summary(self) -> str:
        parts = [f"{self.records:,} records from {self.files_read} file(s)"]
        for name, items in (("empty", self.empty_files), ("binary", self.binary_files), ("unreadable", self.unreadable_files)):
            if items:
                parts.append(f"{len(items)} {name} file(s) skipped")
        if self.invalid_utf8_lines:
            parts.append(f"{self.invalid_utf8_lines:,} invalid UTF-8 line(s) skipped")
        if self.bad_json_lines:
            parts.append(f"{self.bad_json_lines:,} JSONL line(s) without a text field skipped")
        if self.overlong_lines:
            parts.append(f"{self.overlong_lines:,} overlong line(s) cut")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "records": self.records,
            "files_read": self.files_read,
            "empty_files": list(self.empty_files),
            "binary_files": list(self.binary_files),
            "unreadable_files": list(self.unreadable_files),
            "invalid_utf8_lines": self.invalid_utf8_lines,
            "overlong_lines": self.overlong_lines,
            "bad_json_lines": self.bad_json_lines,
        }


def list_corpus_files(path: Union[str, Path]) -> list[Path]:
    """A file, or every non-hidden file under a folder, in a fixed (sorted) order."""
    path = Path(path)
    if path.is_file():
        return [path]
    if path.is_dir():
        return sorted(
            p for p in path.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
        )
    raise FileNotFoundError(f"Corpus path not found: {path}")


def file_kind(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return "jsonl"
    if suffix == ".spacy":
        return "spacy"
    return "text"


class RecordReader:
    """Iterates records of a list of files from a :class:`RecordPosition` on.

    ``spacy_vocab`` is needed only for ``.spacy`` files (their Docs are rebuilt on it).
    """

    def __init__(
        self,
        files: list[Path],
        max_line_bytes: int,
        jsonl_field: str = "text",
        spacy_vocab: Any = None,
    ) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self.files = list(files)
        self.max_line_bytes = max_line_bytes
        self.jsonl_field = jsonl_field
        self.spacy_vocab = spacy_vocab

    def records(
        self, start: RecordPosition = RecordPosition(), stats: Optional[ReadStats] = None
    ) -> Iterator[tuple[RecordPosition, Any]]:
        """Yield ``(position after the record, payload)``; payloads are ``str`` or ``Doc``."""
        stats = stats if stats is not None else ReadStats()
        record_index = start.record_index
        for file_index in range(start.file_index, len(self.files)):
            path = self.files[file_index]
            offset = start.offset if file_index == start.file_index else 0
            if offset == 0 and not self._readable(path, stats):
                continue
            stats.files_read += 1 if offset == 0 else 0
            kind = file_kind(path)
            items = self._docs(path, offset, stats) if kind == "spacy" else self._lines(path, offset, kind, stats)
            for next_offset, payload in items:
                record_index += 1
                stats.records += 1
                yield RecordPosition(file_index, next_offset, record_index), payload

    # ------------------------------------------------------------------ per file
    def _readable(self, path: Path, stats: ReadStats) -> bool:
        try:
            with open(path, "rb") as handle:
                head = handle.read(BINARY_SNIFF_BYTES)
        except OSError as err:
            stats.unreadable_files.append(str(path))
            stats.note("unreadable", path, f"cannot be read ({err}); skipped")
            return False
        if not head:
            stats.empty_files.append(str(path))
            stats.note("empty", path, "empty file; skipped")
            return False
        if file_kind(path) != "spacy" and b"\x00" in head:
            stats.binary_files.append(str(path))
            stats.note("binary", path, "looks binary (NUL bytes; compressed?), not text; skipped")
            return False
        return True

    def _lines(self, path: Path, offset: int, kind: str, stats: ReadStats) -> Iterator[tuple[int, Any]]:
        with open(path, "rb") as handle:
            handle.seek(offset)
            line_number = 0
            while True:
                raw = handle.readline(self.max_line_bytes + 1)
                if not raw:
                    return
                line_number += 1
                start_of_file = offset == 0
                offset += len(raw)
                cut = len(raw) > self.max_line_bytes and not raw.endswith(b"\n")
                if cut:
                    offset += _skip_rest_of_line(handle)
                    raw = raw[: self.max_line_bytes]
                    stats.overlong_lines += 1
                    stats.note("overlong", path, f"line {line_number} is over {self.max_line_bytes:,} bytes; cut there")
                text = _decode(raw, cut)
                if text is None:
                    stats.invalid_utf8_lines += 1
                    stats.note("utf8", path, f"line {line_number} is not valid UTF-8; skipped")
                    continue
                if start_of_file and text.startswith("\ufeff"):
                    text = text[1:]
                text = text.rstrip("\r\n")
                if not text.strip():
                    continue
                if kind == "jsonl":
                    text = self._json_text(text)
                    if text is None:
                        stats.bad_json_lines += 1
                        stats.note("json", path, f"line {line_number} is not a JSON object with a string {self.jsonl_field!r}; skipped")
                        continue
                    if has_lone_surrogate(text):  # a "\ud800" escape: no UTF-8 form, cannot be encoded
                        stats.invalid_utf8_lines += 1
                        stats.note("utf8", path, f"line {line_number} holds a lone surrogate (no UTF-8 form); skipped")
                        continue
                    if not text.strip():
                        continue
                yield offset, text

    def _json_text(self, line: str) -> Optional[str]:
        try:
            data = json.loads(line)
        except ValueError:
            return None
        value = data.get(self.jsonl_field) if isinstance(data, dict) else None
        return value if isinstance(value, str) else None

    def _docs(self, path: Path, first: int, stats: ReadStats) -> Iterator[tuple[int, Any]]:
        from spacy.tokens import DocBin

        if self.spacy_vocab is None:
            raise ValueError("RecordReader needs a spaCy vocab to read .spacy files")
        try:
            docs = list(DocBin().from_disk(path).get_docs(self.spacy_vocab))
        except Exception as err:  # a corrupt DocBin can fail in many ways; none should end the run
            stats.unreadable_files.append(str(path))
            stats.note("unreadable", path, f"is not a readable .spacy file ({type(err).__name__}: {err}); skipped")
            return
        for index in range(first, len(docs)):
            yield index + 1, docs[index]


def _skip_rest_of_line(handle: IO[bytes]) -> int:
    """Read up to the next newline in bounded pieces; return how many bytes were skipped."""
    skipped = 0
    while True:
        piece = handle.readline(SKIP_CHUNK_BYTES)
        skipped += len(piece)
        if not piece or piece.endswith(b"\n"):
            return skipped


def _decode(raw: bytes, cut: bool) -> Optional[str]:
    """Strict UTF-8; a line we cut may end inside a character, which is dropped, not an error."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        if cut and err.end == len(raw) and err.reason == "unexpected end of data":
            try:
                return raw[: err.start].decode("utf-8")
            except UnicodeDecodeError:
                return None
        return None
