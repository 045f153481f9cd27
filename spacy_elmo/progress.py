"""Progress bars that suit where the output goes: a live tqdm bar on a terminal; in a log file or
a pipe, where every in-place redraw would become a line of its own, a plain line now and then."""

from __future__ import annotations

import sys
from typing import Any, Iterable, Optional, TextIO

from tqdm import tqdm

SUMMARY_SECONDS = 30.0


class _SummaryLines:
    """A file for tqdm that writes each redraw as one line."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> None:
        line = text.replace("\r", "").rstrip()
        if line:
            self.stream.write(line + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress_bar(
    iterable: Optional[Iterable[Any]] = None,
    *,
    file: Optional[TextIO] = None,
    summary_seconds: float = SUMMARY_SECONDS,
    **options: Any,
) -> tqdm:
    """A live bar on a terminal; elsewhere a plain line every ``summary_seconds`` and at the end."""
    stream = file if file is not None else sys.stderr
    try:
        terminal = bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        terminal = False
    if terminal:
        return tqdm(iterable, file=stream, **options)
    interval = max(summary_seconds, float(options.pop("mininterval", 0.0) or 0.0))
    options.pop("dynamic_ncols", None)
    options.pop("maxinterval", None)
    return tqdm(iterable, file=_SummaryLines(stream), mininterval=interval, maxinterval=interval, ascii=True, **options)
