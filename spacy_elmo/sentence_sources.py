"""Reading sentences to embed from text, JSONL or ``.spacy`` files, lazily and with stable keys.

Each sentence comes with a key that a rerun over the same input reproduces, so an interrupted
``spacy-elmo embed`` can skip what it already wrote:

- text, one sentence per line (tokens split on whitespace): the key is the line number
  (0-based; blank lines are skipped but keep their number), as ``allennlp elmo`` did;
- JSONL (a ``text`` field, and optionally ``tokens``, a list of strings): the line number;
- with a spaCy pipeline, each line (or JSONL ``text``) is a paragraph that the pipeline
  tokenizes and splits into sentences; keys then number the sentences in order;
- ``.spacy`` (a DocBin): each sentence if the docs have sentence boundaries, else each doc,
  numbered in order. Whitespace tokens are left out.

A line that is not valid UTF-8, or whose JSON holds a lone surrogate (``"\\ud800"``, which
has no UTF-8 form and could not be stored), is skipped: it is counted in :class:`SkippedLines`
and logged with its file and line number (the first few), and its key is left unused.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

logger = logging.getLogger("spacy_elmo")

PathLike = Union[str, Path]
FORMATS = ("text", "jsonl", "spacy")
MAX_WARNINGS = 5


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


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a surrogate code point, which has no UTF-8 encoding."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@dataclass
class Sentence:
    key: str
    text: str
    tokens: list[str]


def guess_format(path: PathLike) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix == ".spacy":
        return "spacy"
    return "text"


def read_sentences(
    path: PathLike, input_format: str = "auto", nlp: Any = None, skipped: Optional[SkippedLines] = None
) -> Iterator[Sentence]:
    """Sentences of ``path``, one at a time (see the module docstring for keys and formats).

    Unreadable lines are skipped and counted in ``skipped`` (a fresh counter when None)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Input file not found: {path}")
    input_format = guess_format(path) if input_format == "auto" else input_format
    if input_format == "spacy":
        return _spacy_sentences(path)
    if input_format not in FORMATS:
        raise ValueError(f"input format must be one of {FORMATS} or 'auto', not {input_format!r}")
    skipped = SkippedLines() if skipped is None else skipped
    paragraphs = _text_lines(path, skipped) if input_format == "text" else _jsonl_records(path, skipped)
    if nlp is None:
        return _whitespace_sentences(paragraphs)
    return _split_with_pipeline(((n, text) for n, text, _ in paragraphs), nlp)


def _whitespace_sentences(lines: Iterable[tuple[int, str, Optional[list[str]]]]) -> Iterator[Sentence]:
    for number, text, tokens in lines:
        tokens = tokens if tokens is not None else text.split()
        if tokens:
            yield Sentence(str(number), text, tokens)


def _decoded_lines(path: Path, skipped: SkippedLines) -> Iterator[tuple[int, str]]:
    """(0-based number, text) of each line that is valid UTF-8 (a leading BOM dropped)."""
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                skipped.add(path, number + 1, f"not valid UTF-8 (byte {err.start})")
                continue
            if number == 0 and line.startswith("\ufeff"):
                line = line[1:]
            yield number, line


def _text_lines(path: Path, skipped: SkippedLines) -> Iterator[tuple[int, str, Optional[list[str]]]]:
    for number, line in _decoded_lines(path, skipped):
        text = line.strip()
        if text:
            yield number, text, None


def _jsonl_records(path: Path, skipped: SkippedLines) -> Iterator[tuple[int, str, Optional[list[str]]]]:
    for number, line in _decoded_lines(path, skipped):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{number + 1}: not valid JSON: {err}") from err
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise ValueError(f"{path}:{number + 1}: expected an object with a string 'text' field")
        tokens = record.get("tokens")
        if tokens is not None and not (isinstance(tokens, list) and all(isinstance(t, str) for t in tokens)):
            raise ValueError(f"{path}:{number + 1}: 'tokens' must be a list of strings")
        if has_lone_surrogate(record["text"]) or any(has_lone_surrogate(t) for t in tokens or ()):
            skipped.add(path, number + 1, "a lone surrogate (\\ud800-\\udfff) has no UTF-8 form")
            continue
        yield number, record["text"], tokens


def _split_with_pipeline(paragraphs: Iterable[tuple[int, str]], nlp: Any) -> Iterator[Sentence]:
    yield from _doc_sentences(nlp.pipe(text for _, text in paragraphs))


def _spacy_sentences(path: Path) -> Iterator[Sentence]:
    from spacy.tokens import DocBin
    from spacy.vocab import Vocab

    yield from _doc_sentences(DocBin().from_disk(path).get_docs(Vocab()))


def _doc_sentences(docs: Iterable[Any]) -> Iterator[Sentence]:
    """The non-empty sentences of ``docs`` (whitespace tokens left out), keyed 0, 1, 2, ..."""
    index = 0
    for doc in docs:
        for span in _spans(doc):
            tokens = [token.text for token in span if token.text.strip()]
            if tokens:
                yield Sentence(str(index), span.text.strip(), tokens)
                index += 1


def _spans(doc: Any) -> Iterable[Any]:
    """The doc's sentences when it has boundaries, else the whole doc as one span."""
    if doc.has_annotation("SENT_START"):
        return doc.sents
    return [doc[:]]


def load_pipeline(name: str) -> Any:
    """A spaCy pipeline for tokenizing and sentence splitting: an installed package or path,
    or a language code (``en``) for a blank pipeline with a rule-based sentencizer."""
    import spacy

    if len(name) <= 3 and name.isalpha():
        nlp = spacy.blank(name)
        nlp.add_pipe("sentencizer")
        return nlp
    nlp = spacy.load(name)
    if not any(pipe in nlp.pipe_names for pipe in ("parser", "senter", "sentencizer")):
        nlp.add_pipe("sentencizer")
    return nlp
