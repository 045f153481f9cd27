"""Whole passes over a corpus: the vocabulary count and the (bounded) dev set."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path
from typing import Iterator, Union

from ...corpora.files import guess_format, list_corpus_files
from ...corpora.record_stream import ReadStats, RecordReader
from ...progress import progress_bar
from ..errors import reading
from ..settings import CorpusSettings
from ..vocab import WordCounter
from .sentences import SentenceSplitter, SentenceStats, Tokens

logger = logging.getLogger("spacy_elmo.pretrain")


def make_reader(path: Union[str, Path], settings: CorpusSettings, splitter: SentenceSplitter) -> RecordReader:
    """A reader of the text at ``path`` (a file or a folder); a missing path is an error naming it."""
    with reading(path):
        files = list_corpus_files(path)
    needs_spacy = any(guess_format(f) == "spacy" for f in files)
    return RecordReader(
        files,
        max_line_bytes=settings.max_line_bytes,
        jsonl_field=settings.jsonl_field,
        spacy_vocab=splitter.vocab if needs_spacy else None,
    )


def iter_sentences(reader: RecordReader, splitter: SentenceSplitter, stats: ReadStats) -> Iterator[Tokens]:
    for _, sentences in splitter.split(reader.records(stats=stats)):
        yield from sentences


def count_words(
    path: Union[str, Path], settings: CorpusSettings, splitter: SentenceSplitter, max_types: int, progress: bool = True
) -> tuple[WordCounter, ReadStats]:
    """One streaming pass: word counts, and what was skipped along the way (with warnings)."""
    stats = ReadStats(warn=True)
    splitter.stats = SentenceStats()
    reader = make_reader(path, settings, splitter)
    counter = WordCounter(max_types)
    sentences = iter_sentences(reader, splitter, stats)
    with (
        reading(path),
        progress_bar(sentences, desc="Counting words", unit=" sent", disable=not progress, mininterval=1.0) as bar,
    ):
        for sentence in bar:
            counter.add(sentence)
    logger.info("Training text: %s; %s", stats.summary(), splitter.stats.summary())
    return counter, stats


def read_dev_sentences(
    path: Union[str, Path], settings: CorpusSettings, splitter: SentenceSplitter, limit: int
) -> tuple[list[Tokens], ReadStats]:
    """The first ``limit`` sentences of the dev text (a dev set is small; a huge one is cut)."""
    stats = ReadStats(warn=True)
    reader = make_reader(path, settings, splitter)
    with reading(path):
        sentences = list(itertools.islice(iter_sentences(reader, splitter, stats), limit))
    logger.info("Dev text: %s; %d sentences used", stats.summary(), len(sentences))
    return sentences, stats
