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
    """Sentences of ``path``, one at a time; unreadable lines are counted in ``skipped``. A file that
    cannot be read at all raises here, at once."""
    path = Path(path)
    with open_regular_file(path, "input file"):
        pass  # opened without blocking (a FIFO would wait for a writer) and checked
    input_format = guess_format(path) if input_format == "auto" else input_format
    if input_format not in FORMATS:
        raise ValueError(f"input format must be one of {FORMATS} or 'auto', not {input_format!r}")
    problem = file_problem(path, input_format)
    if problem is not None and problem.kind != "empty":
        raise ValueError(f"{path}: {problem.detail}")
    if input_format == "spacy":
        return _spacy_sentences(path)
    skipped = SkippedLines() if skipped is None else skipped
    lines = _readable_lines(path, max_line_bytes, skipped)
    paragraphs = _text_lines(lines) if input_format == "text" else _jsonl_records(path, lines, skipped)
    if nlp is None:
        return _whitespace_sentences(paragraphs)
    return _doc_sentences(nlp.pipe(text for _, text, _ in paragraphs))


def _readable_lines(path: Path, max_line_bytes: int, skipped: SkippedLines) -> Iterator[tuple[int, str]]:
    for line in read_lines(path, max_line_bytes):
        if line.cut:
            skipped.add(path, line.number, f"longer than {max_line_bytes:,} bytes")
        elif line.text is None:
            skipped.add(path, line.number, f"not valid UTF-8 (byte {line.bad_byte})")
        else:
            yield line.number, line.text


def _text_lines(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str, Optional[list[str]]]]:
    for number, line in lines:
        text = line.strip()
        if text:
            yield number - 1, text, None


def _jsonl_records(
    path: Path, lines: Iterable[tuple[int, str]], skipped: SkippedLines
) -> Iterator[tuple[int, str, Optional[list[str]]]]:
    for number, line in lines:
        if not line.strip():
            continue
        try:
            record = parse_jsonl_line(line, with_tokens=True)
        except BadJsonLine as err:
            raise ValueError(f"{path}:{number}: {err}") from err
        if record.has_lone_surrogate():
            skipped.add(path, number, "a lone surrogate (\\ud800-\\udfff) has no UTF-8 form")
            continue
        yield number - 1, record.text, record.tokens


def _whitespace_sentences(lines: Iterable[tuple[int, str, Optional[list[str]]]]) -> Iterator[Sentence]:
    for number, text, tokens in lines:
        tokens = tokens if tokens is not None else text.split()
        if tokens:
            yield Sentence(str(number), text, tokens)


def _spacy_sentences(path: Path) -> Iterator[Sentence]:
    from spacy.vocab import Vocab

    yield from _doc_sentences(read_docbin(path, Vocab()))


def _doc_sentences(docs: Iterable[Any]) -> Iterator[Sentence]:
    """The non-empty sentences of ``docs`` (whitespace tokens left out), keyed 0, 1, 2, ..."""
    index = 0
    for doc in docs:
        for span in sentence_spans(doc):
            tokens = [token.text for token in span if token.text.strip()]
            if tokens:
                yield Sentence(str(index), span.text.strip(), tokens)
                index += 1
