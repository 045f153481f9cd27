"""The spaCy pipelines that tokenize texts and split them into sentences."""

from __future__ import annotations

from typing import Any, Iterable

SENTENCE_SPLITTERS = ("parser", "senter", "sentencizer")


def splits_sentences(nlp: Any) -> bool:
    return any(name in nlp.pipe_names for name in SENTENCE_SPLITTERS)


def blank_with_sentencizer(lang: str) -> Any:
    import spacy

    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    return nlp


def load_pipeline(name: str) -> Any:
    """An installed package or path, or a language code (``en``) for a blank one; it splits sentences."""
    import spacy

    if len(name) <= 3 and name.isalpha():
        return blank_with_sentencizer(name)
    nlp = spacy.load(name)
    if not splits_sentences(nlp):
        nlp.add_pipe("sentencizer")
    return nlp


def sentence_spans(doc: Any) -> Iterable[Any]:
    """The doc's sentences when it has boundaries, else the whole doc as one span."""
    if doc.has_annotation("SENT_START"):
        return doc.sents
    return [doc[:]]
