"""Sentences to embed, lazily, each with a key that a rerun reproduces, so an interrupted ``embed``
skips what it wrote (the keys and what is skipped or refused: docs/embed.md). An unreadable or
overlong line is skipped, never cut: its vectors would be stored under the whole line's key."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

from ..formats.regular_files import open_regular_file
from .files import FORMATS, BadJsonLine, file_problem, guess_format, parse_jsonl_line, read_docbin, read_lines
from .pipelines import sentence_spans

logger = logging.getLogger("spacy_elmo")

PathLike = Union[str, Path]
MAX_WARNINGS = 5
# Far past any line worth embedding (a sentence of millions of tokens), yet a bound on memory.
DEFAULT_MAX_LINE_BYTES = 1 << 24


@dataclass
class SkippedLines:
    """Input lines left out; the first few are logged."""

    count: int = 0
    examples: list[str] = field(default_factory=list)  # "path:line: why", the first few

    def add(self, path: Path, line_number: int, reason: str) -> None:
        self.count += 1
        if len(self.examples) < MAX_WARNINGS:
            where = f"{path}:{line_number}: {reason}; line skipped"
            self.examples.append(where)
            logger.warning(where)


@dataclass
class Sentence:
    key: str
    text: str
    tokens: list[str]


def read_sentences(
    path: PathLike,
    input_format: str = "auto",
    nlp: Any = None,
    skipped: Optional[SkippedLines] = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
) -> Iterator[Sentence]:
    """Sentences of ``path``, lazily; a file that cannot be read at all raises here, at once."""
    path = Path(path)
    open_regular_file(path, "input file").close()  # opened without blocking (a FIFO would wait) and checked
    input_format = guess_format(path) if input_format == "auto" else input_format
    if input_format not in FORMATS:
        raise ValueError(f"input format must be one of {FORMATS} or 'auto', not {input_format!r}")
    problem = file_problem(path, input_format)
    if problem is not None and problem.kind != "empty":
        raise ValueError(f"{path}: {problem.detail}")
    if input_format == "spacy":
        from spacy.vocab import Vocab

        return _doc_sentences(read_docbin(path, Vocab()))
    paragraphs = _paragraphs(path, input_format, max_line_bytes, SkippedLines() if skipped is None else skipped)
    if nlp is None:
        return (Sentence(str(number), text, tokens) for number, text, tokens in paragraphs if tokens)
    return _doc_sentences(nlp.pipe(text for _, text, _ in paragraphs))


def _paragraphs(
    path: Path, input_format: str, max_line_bytes: int, skipped: SkippedLines
) -> Iterator[tuple[int, str, list[str]]]:
    """(0-based line number, text, tokens) of each readable line that is not blank."""
    for line in read_lines(path, max_line_bytes):
        if line.cut:
            skipped.add(path, line.number, f"longer than {max_line_bytes:,} bytes")
        elif line.text is None:
            skipped.add(path, line.number, f"not valid UTF-8 (byte {line.bad_byte})")
        elif not line.text.strip():
            continue
        elif input_format == "text":
            yield line.number - 1, line.text.strip(), line.text.split()
        else:
            try:
                record = parse_jsonl_line(line.text, with_tokens=True)
            except BadJsonLine as err:
                raise ValueError(f"{path}:{line.number}: {err}") from err
            if record.has_lone_surrogate():
                skipped.add(path, line.number, "a lone surrogate (\\ud800-\\udfff) has no UTF-8 form")
            else:
                yield line.number - 1, record.text, record.text.split() if record.tokens is None else record.tokens


def _doc_sentences(docs: Iterable[Any]) -> Iterator[Sentence]:
    """The non-empty sentences of ``docs`` (whitespace tokens left out), keyed 0, 1, 2, ..."""
    index = 0
    for doc in docs:
        for span in sentence_spans(doc):
            tokens = [token.text for token in span if token.text.strip()]
            if tokens:
                yield Sentence(str(index), span.text.strip(), tokens)
                index += 1
