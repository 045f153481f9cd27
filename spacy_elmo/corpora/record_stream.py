"""Pretraining's resumable pass over many files: a record per non-blank text line, JSONL line or
Doc, with the position after it. Damage never ends a run: it is skipped or cut, and counted."""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

from .files import (
    BadJsonLine,
    UnreadableFile,
    file_problem,
    guess_format,
    has_lone_surrogate,
    parse_jsonl_line,
    read_docbin,
    read_lines,
)

logger = logging.getLogger("spacy_elmo.pretrain")


@dataclass(frozen=True)
class RecordPosition:
    """The next record: at ``offset`` (bytes, or a Doc index) of file ``file_index``, after ``record_index``."""

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
        if self.warn and (kind, str(path)) not in self._warned:
            self._warned.add((kind, str(path)))
            logger.warning("%s: %s (further cases in this file are only counted)", path, detail)

    def summary(self) -> str:
        counts = {
            "empty file(s) skipped": len(self.empty_files),
            "binary file(s) skipped": len(self.binary_files),
            "unreadable file(s) skipped": len(self.unreadable_files),
            "invalid UTF-8 line(s) skipped": self.invalid_utf8_lines,
            "JSONL line(s) without a text field skipped": self.bad_json_lines,
            "overlong line(s) cut": self.overlong_lines,
        }
        parts = [f"{count:,} {what}" for what, count in counts.items() if count]
        return "; ".join([f"{self.records:,} records from {self.files_read} file(s)", *parts])

    def to_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if key not in ("warn", "_warned")}

    def skip_file(self, kind: str, path: Path, detail: str) -> None:
        getattr(self, f"{kind}_files").append(str(path))
        self.note(kind, path, f"{detail}; skipped")


class RecordReader:
    """Records of a list of files from a :class:`RecordPosition` on; ``.spacy`` files need ``spacy_vocab``."""

    def __init__(
        self, files: list[Path], max_line_bytes: int, jsonl_field: str = "text", spacy_vocab: Any = None
    ) -> None:
        self.files = list(files)
        self.max_line_bytes = max_line_bytes
        self.jsonl_field = jsonl_field
        self.spacy_vocab = spacy_vocab

    def records(
        self, start: RecordPosition = RecordPosition(), stats: Optional[ReadStats] = None
    ) -> Iterator[tuple[RecordPosition, Any]]:
        """``(position after the record, payload)``, a ``str`` or ``Doc``."""
        stats = stats if stats is not None else ReadStats()
        record_index = start.record_index
        for file_index in range(start.file_index, len(self.files)):
            path = self.files[file_index]
            offset = start.offset if file_index == start.file_index else 0
            kind = guess_format(path)
            if offset == 0:
                problem = file_problem(path, kind)
                if problem is not None:
                    stats.skip_file(problem.kind, path, problem.detail)
                    continue
                stats.files_read += 1
            items = self._docs(path, offset, stats) if kind == "spacy" else self._lines(path, offset, kind, stats)
            for next_offset, payload in items:
                record_index += 1
                stats.records += 1
                yield RecordPosition(file_index, next_offset, record_index), payload

    def _lines(self, path: Path, offset: int, kind: str, stats: ReadStats) -> Iterator[tuple[int, str]]:
        for line in read_lines(path, self.max_line_bytes, offset):
            if line.cut:
                stats.overlong_lines += 1
                stats.note("overlong", path, f"line {line.number} is over {self.max_line_bytes:,} bytes; cut there")
            if line.text is None:
                stats.invalid_utf8_lines += 1
                stats.note("utf8", path, f"line {line.number} is not valid UTF-8; skipped")
                continue
            text = line.text
            if not text.strip():
                continue
            if kind == "jsonl":
                try:
                    text = parse_jsonl_line(text, self.jsonl_field).text
                except BadJsonLine:
                    stats.bad_json_lines += 1
                    stats.note(
                        "json",
                        path,
                        f"line {line.number} is not a JSON object with a string {self.jsonl_field!r}; skipped",
                    )
                    continue
                if has_lone_surrogate(text):  # a "\ud800" escape: no UTF-8 form, cannot be encoded
                    stats.invalid_utf8_lines += 1
                    stats.note("utf8", path, f"line {line.number} holds a lone surrogate (no UTF-8 form); skipped")
                    continue
                if not text.strip():
                    continue
            yield line.end, text

    def _docs(self, path: Path, first: int, stats: ReadStats) -> Iterator[tuple[int, Any]]:
        try:
            docs = list(read_docbin(path, self.spacy_vocab))  # all or none: a damaged file is skipped whole
        except UnreadableFile as err:
            stats.skip_file("unreadable", path, f"is {err.detail}")
            return
        for index in range(first, len(docs)):
            yield index + 1, docs[index]
