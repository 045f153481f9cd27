"""Lines of a text or JSONL file, read in binary mode, in bounded memory, with byte offsets.

Binary mode lets a line that is not UTF-8 be reported and passed over instead of ending the
read, and ``max_line_bytes`` bounds what one line costs: a 1 GB line without a newline is cut
there and the rest skipped in small pieces. Each line carries the byte offset just after it,
where a later read can start again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterator, Optional

SKIP_CHUNK_BYTES = 1 << 20


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
    """Read up to the next newline in bounded pieces; return how many bytes were skipped."""
    skipped = 0
    while True:
        piece = handle.readline(SKIP_CHUNK_BYTES)
        skipped += len(piece)
        if not piece or piece.endswith(b"\n"):
            return skipped


def _decode(raw: bytes, cut: bool) -> tuple[Optional[str], Optional[int]]:
    """Strict UTF-8 (text, None), or (None, first bad byte). A line that was cut may end inside
    a character, which is dropped, not an error."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as err:
        if cut and err.end == len(raw) and err.reason == "unexpected end of data":
            try:
                return raw[: err.start].decode("utf-8"), None
            except UnicodeDecodeError as inner:
                return None, inner.start
        return None, err.start
