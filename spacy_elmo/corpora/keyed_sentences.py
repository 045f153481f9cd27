"""Sentences to embed, from text, JSONL or ``.spacy`` files, lazily and with stable keys.

Each sentence comes with a key that a rerun over the same input reproduces, so an interrupted
``spacy-elmo embed`` can skip what it already wrote:

- text, one sentence per line (tokens split on whitespace): the key is the line number
  (0-based; blank lines are skipped but keep their number), as ``allennlp elmo`` did;
- JSONL (a ``text`` field, and optionally ``tokens``, a list of strings): the line number;
- with a spaCy pipeline, each line (or JSONL ``text``) is a paragraph that the pipeline
  tokenizes and splits into sentences; keys then number the sentences in order;
- ``.spacy`` (a DocBin): each sentence if the docs have sentence boundaries, else each doc,
  numbered in order. Whitespace tokens are left out.

A line that is not valid UTF-8, whose JSON holds a lone surrogate (``"\\ud800"``, which has no
UTF-8 form and could not be stored), or that is longer than ``max_line_bytes``, is skipped: it
is counted in :class:`SkippedLines` and logged with its file and line number (the first few),
and its key is left unused. A long line is not cut, as pretraining cuts it: its vectors would
be stored under the line's key as if they were the whole line's. A line that is not a JSON
object with a string ``text`` stops the read with an error naming the file and line, and so
does a binary (NUL bytes) or damaged file: the input is then probably not what was meant.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

from ..formats.regular_files import open_regular_file
from .docbin import read_docbin
from .files import FORMATS, file_problem, guess_format
from .jsonl import BadJsonLine, parse_jsonl_line
from .lines import read_lines
from .pipelines import sentence_spans

logger = logging.getLogger("spacy_elmo")

PathLike = Union[str, Path]
MAX_WARNINGS = 5
# Far past any line worth embedding (a sentence of millions of tokens), yet a bound on memory.
DEFAULT_MAX_LINE_BYTES = 1 << 24


@dataclass
class SkippedLines:
    """Input lines left out because they cannot be read as text; the first few are logged."""

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
    """Sentences of ``path``, one at a time (see the module docstring for keys and formats).

    Unreadable lines are skipped and counted in ``skipped`` (a fresh counter when None). The
    file itself is checked at once: a missing, unreadable or binary file raises here, and so
    does anything but a regular file (``/dev/null``, a FIFO, a directory), saying what it is."""
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
    """The lines of ``path`` (number, text) that are UTF-8 and within ``max_line_bytes``; the
    others are counted."""
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
