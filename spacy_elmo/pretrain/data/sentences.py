"""Records (texts or Docs) to sentences of tokens, tokenized as a user's spaCy pipeline sees them
downstream; long tokens are cut (a megabyte-long "word" must not reach the vocabulary) and long
sentences split (which bounds the LSTM's time loop). Also the passes the vocabulary and dev set need."""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, TypeVar, Union

from ...corpora.files import guess_format, list_corpus_files
from ...corpora.pipelines import blank_with_sentencizer, sentence_spans, splits_sentences
from ...corpora.record_stream import ReadStats, RecordReader
from ...progress import progress_bar
from ..errors import reading
from ..settings import CorpusSettings, PretrainSettings
from ..vocab import WordCounter

logger = logging.getLogger("spacy_elmo.pretrain")

Context = TypeVar("Context")
Tokens = list[str]  # one sentence, as its tokens
PIPE_GROUP = 256


@dataclass
class SentenceStats:
    tokens: int = 0
    sentences: int = 0
    cut_tokens: int = 0
    split_sentences: int = 0

    def summary(self) -> str:
        text = f"{self.sentences:,} sentences, {self.tokens:,} tokens"
        if self.cut_tokens:
            text += f"; {self.cut_tokens:,} tokens over the length limit cut"
        if self.split_sentences:
            text += f"; {self.split_sentences:,} overlong sentences split"
        return text


def load_sentence_pipeline(settings: CorpusSettings) -> Any:
    """A named pipeline without a sentence splitter makes each record one sentence."""
    import spacy

    if settings.pipeline:
        with reading(settings.pipeline):  # spaCy's "can't find model" is an OSError
            nlp = spacy.load(settings.pipeline)
        if not splits_sentences(nlp):
            logger.warning(
                "Pipeline %s has no sentencizer, senter or parser: each record is one sentence", settings.pipeline
            )
    else:
        nlp = blank_with_sentencizer(settings.lang)
    nlp.max_length = max(nlp.max_length, settings.max_line_bytes + 1)
    return nlp


class SentenceSplitter:
    """Turns records (``str`` or ``Doc``) into sentences; ``pretokenized`` skips spaCy entirely."""

    def __init__(self, settings: CorpusSettings, nlp: Any = None) -> None:
        self.settings = settings
        # A pretokenized corpus never needs spaCy unless it has .spacy files: load it lazily.
        self.nlp = nlp if nlp is not None or settings.pretokenized else load_sentence_pipeline(settings)
        self.stats = SentenceStats()

    @property
    def pipeline(self) -> Any:
        if self.nlp is None:
            self.nlp = load_sentence_pipeline(self.settings)
        return self.nlp

    def split(self, records: Iterable[tuple[Context, Any]]) -> Iterator[tuple[Context, list[Tokens]]]:
        """Each record's context with its sentences, in input order; a ``Doc``'s own sentences are kept."""
        waiting: list[tuple[Any, Context]] = []
        for context, payload in records:
            if self.settings.pretokenized and isinstance(payload, str):
                yield context, self._finish([payload.split()])
            elif not isinstance(payload, str) and payload.has_annotation("SENT_START"):
                yield from self._flush(waiting)
                yield context, self._finish([token.text for token in sent] for sent in payload.sents)
            else:
                waiting.append((payload, context))
                if len(waiting) >= PIPE_GROUP:
                    yield from self._flush(waiting)
        yield from self._flush(waiting)

    def _flush(self, waiting: list[tuple[Any, Context]]) -> Iterator[tuple[Context, list[Tokens]]]:
        if not waiting:
            return
        group = list(waiting)
        waiting.clear()
        for doc, context in self.pipeline.pipe(group, as_tuples=True, batch_size=PIPE_GROUP):
            yield context, self._finish([token.text for token in sent] for sent in sentence_spans(doc))

    def _finish(self, raw_sentences: Iterable[Iterable[str]]) -> list[Tokens]:
        limit = self.settings.max_token_chars
        size = self.settings.max_sentence_tokens
        result: list[Tokens] = []
        for raw in raw_sentences:
            tokens = []
            for token in raw:
                if not token or token.isspace():
                    continue
                if len(token) > limit:
                    token = token[:limit]
                    self.stats.cut_tokens += 1
                tokens.append(token)
            if not tokens:
                continue
            if len(tokens) > size:
                self.stats.split_sentences += 1
            for start in range(0, len(tokens), size):
                piece = tokens[start : start + size]
                result.append(piece)
                self.stats.sentences += 1
                self.stats.tokens += len(piece)
        return result


def make_reader(path: Union[str, Path], settings: CorpusSettings, splitter: SentenceSplitter) -> RecordReader:
    with reading(path):
        files = list_corpus_files(path)
    needs_spacy = any(guess_format(f) == "spacy" for f in files)
    return RecordReader(
        files,
        max_line_bytes=settings.max_line_bytes,
        jsonl_field=settings.jsonl_field,
        spacy_vocab=splitter.pipeline.vocab if needs_spacy else None,
    )


def _sentences(reader: RecordReader, splitter: SentenceSplitter, stats: ReadStats) -> Iterator[Tokens]:
    for _, sentences in splitter.split(reader.records(stats=stats)):
        yield from sentences


def count_words(
    settings: PretrainSettings, splitter: SentenceSplitter, progress: bool = True
) -> tuple[WordCounter, ReadStats]:
    """One pass over the training text: word counts, and what was skipped."""
    path = settings.paths.train
    assert path is not None  # set_up_run checks it
    stats = ReadStats(warn=True)
    splitter.stats = SentenceStats()
    counter = WordCounter(settings.vocab.max_tracked_types)
    sentences = _sentences(make_reader(path, settings.corpus, splitter), splitter, stats)
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
) -> list[Tokens]:
    """The first ``limit`` sentences of the dev text."""
    stats = ReadStats(warn=True)
    reader = make_reader(path, settings, splitter)
    with reading(path):
        sentences = list(itertools.islice(_sentences(reader, splitter, stats), limit))
    logger.info("Dev text: %s; %d sentences used", stats.summary(), len(sentences))
    return sentences
