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
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional, Union

PathLike = Union[str, Path]
FORMATS = ("text", "jsonl", "spacy")


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


def read_sentences(path: PathLike, input_format: str = "auto", nlp: Any = None) -> Iterator[Sentence]:
    """Sentences of ``path``, one at a time (see the module docstring for keys and formats)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Input file not found: {path}")
    input_format = guess_format(path) if input_format == "auto" else input_format
    if input_format == "spacy":
        return _spacy_sentences(path)
    if input_format not in FORMATS:
        raise ValueError(f"input format must be one of {FORMATS} or 'auto', not {input_format!r}")
    paragraphs = _text_lines(path) if input_format == "text" else _jsonl_records(path)
    if nlp is None:
        return _whitespace_sentences(paragraphs)
    return _split_with_pipeline(((n, text) for n, text, _ in paragraphs), nlp)


def _whitespace_sentences(lines: Iterable[tuple[int, str, Optional[list[str]]]]) -> Iterator[Sentence]:
    for number, text, tokens in lines:
        tokens = tokens if tokens is not None else text.split()
        if tokens:
            yield Sentence(str(number), text, tokens)


def _text_lines(path: Path) -> Iterator[tuple[int, str, Optional[list[str]]]]:
    with open(path, encoding="utf8") as handle:
        for number, line in enumerate(handle):
            text = line.strip()
            if text:
                yield number, text, None


def _jsonl_records(path: Path) -> Iterator[tuple[int, str, Optional[list[str]]]]:
    with open(path, encoding="utf8") as handle:
        for number, line in enumerate(handle):
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
