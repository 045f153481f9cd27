"""The output vocabulary of a run: the saved one on resume, a given word list, the initial
model's, or one built from the training text (with ``corpus_stats.json`` beside it).

Under torchrun rank 0 counts the text and writes ``vocab.json``; the others read it.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

from ..nn.bilm import BiLM
from .data.passes import count_words
from .distributed import Distributed, run_on_main
from .initialization import vocabulary_of
from ..corpora.record_stream import ReadStats
from .output_folder import STATS_FILE, VOCAB_FILE
from .settings import PretrainSettings
from .errors import EmptyCorpusError
from .data.sentences import SentenceSplitter
from .vocab import Vocabulary, WordCounter, build_vocabulary, with_counts

logger = logging.getLogger("spacy_elmo.pretrain")


def run_vocabulary(
    settings: PretrainSettings,
    out: Path,
    context: Distributed,
    splitter: SentenceSplitter,
    initial: Optional[BiLM],
    resumed: bool,
    show_progress: bool,
) -> Vocabulary:
    """The vocabulary this run predicts, written to ``OUTPUT_DIR/vocab.json`` (by rank 0)."""
    if resumed:
        return Vocabulary.from_disk(out / VOCAB_FILE)
    if settings.paths.vocab:
        vocab = Vocabulary.from_disk(settings.paths.vocab)
        if initial is None or initial.vocab != vocab.words:  # a new output layer: start it from counts
            vocab = with_counts(vocab, _count(settings, splitter, show_progress)[0])
    elif initial is not None and vocabulary_of(initial) is not None:
        vocab = vocabulary_of(initial)
        logger.info("Using the %d-word vocabulary of the initial model", len(vocab))
    else:
        return run_on_main(
            context,
            lambda: _build(settings, out, splitter, show_progress),
            lambda: Vocabulary.from_disk(out / VOCAB_FILE),
        )
    if context.is_main:
        vocab.to_disk(out / VOCAB_FILE)
    return vocab


def _count(settings: PretrainSettings, splitter: SentenceSplitter, show_progress: bool) -> tuple[WordCounter, ReadStats]:
    return count_words(settings.paths.train, settings.corpus, splitter, settings.vocab.max_tracked_types, show_progress)


def _build(settings: PretrainSettings, out: Path, splitter: SentenceSplitter, show_progress: bool) -> Vocabulary:
    counter, stats = _count(settings, splitter, show_progress)
    if counter.sentences == 0:
        raise EmptyCorpusError(f"The training text {settings.paths.train} has no sentences ({stats.summary()})")
    vocab = build_vocabulary(counter, settings.vocab.size, settings.vocab.min_count)
    coverage = 1.0 - vocab.counts[vocab.unk_id] / max(1, counter.tokens)
    logger.info("Vocabulary: %d words, covering %.1f%% of %s training tokens", len(vocab), 100 * coverage, f"{counter.tokens:,}")
    vocab.to_disk(out / VOCAB_FILE)
    summary = {
        "sentences": counter.sentences,
        "tokens": counter.tokens,
        "distinct_words": len(counter.counts),
        "vocab_size": len(vocab),
        "vocab_coverage": coverage,
        "reading": stats.to_dict(),
        "cut_tokens": splitter.stats.cut_tokens,
        "split_sentences": splitter.stats.split_sentences,
    }
    (out / STATS_FILE).write_text(json.dumps(summary, indent=2), encoding="utf8")
    return vocab
