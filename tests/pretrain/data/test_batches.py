"""The batch stream: shards partition the corpus, batches respect the budget, resuming is exact."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from spacy_elmo.corpora.record_stream import RecordReader
from spacy_elmo.pretrain.data.batches import BatchPlan, RankStream, ShardStream, shards_of_rank
from spacy_elmo.pretrain.data.sentences import SentenceSplitter
from spacy_elmo.pretrain.errors import EmptyCorpusError
from spacy_elmo.pretrain.settings import CorpusSettings

PLAN = BatchPlan(batch_tokens=40, max_sentences=8, chunk_sentences=10)


@pytest.fixture()
def corpus(tmp_path):
    lines = [" ".join(f"w{i}x{j}" for j in range(1 + i % 7)) for i in range(60)]
    (tmp_path / "a.txt").write_text("\n".join(lines[:25]) + "\n")
    (tmp_path / "b.txt").write_text("\n".join(lines[25:]) + "\n")
    reader = RecordReader([tmp_path / "a.txt", tmp_path / "b.txt"], max_line_bytes=1000)
    return reader, SentenceSplitter(CorpusSettings(pretokenized=True)), [line.split() for line in lines]


def one_epoch(stream):
    """The batches of the first epoch (the stream itself never ends)."""
    batches = []
    for batch, state in stream:
        if state.epoch > 0:
            break
        batches.append(batch)
    return batches


def test_shards_partition_each_epoch(corpus):
    reader, splitter, sentences = corpus
    seen = Counter()
    for shard in range(3):
        for batch in one_epoch(ShardStream(reader, splitter, PLAN, shard, 3)):
            seen.update(tuple(s) for s in batch)
    assert seen == Counter(tuple(s) for s in sentences)


def test_batches_respect_the_token_budget(corpus):
    reader, splitter, _ = corpus
    for batch in one_epoch(ShardStream(reader, splitter, PLAN)):
        assert len(batch) <= PLAN.max_sentences
        assert len(batch) == 1 or len(batch) * max(len(s) + 2 for s in batch) <= PLAN.batch_tokens


def test_resuming_from_any_state_continues_with_the_same_batches(corpus):
    reader, splitter, _ = corpus
    reference = list(itertools.islice(ShardStream(reader, splitter, PLAN, seed=3), 40))  # > 1 epoch
    for index in (0, 1, 5, 13, 29):
        state = reference[index][1]
        resumed = ShardStream(reader, splitter, PLAN, seed=3, state=state)
        assert list(itertools.islice(resumed, 10)) == reference[index + 1 : index + 11]


def test_epochs_are_shuffled_differently(corpus):
    reader, splitter, _ = corpus
    stream = iter(ShardStream(reader, splitter, PLAN))
    batches = [next(stream) for _ in range(60)]
    first = [b for b, s in batches if s.epoch == 0]
    second = [b for b, s in batches if s.epoch == 1][: len(first)]
    assert first != second


def test_one_process_with_two_shards_sees_what_two_processes_see(corpus):
    reader, splitter, _ = corpus
    joined = RankStream([ShardStream(reader, splitter, PLAN, shard, 2) for shard in (0, 1)])
    ranks = [
        RankStream([ShardStream(reader, splitter, PLAN, shard, 2)])
        for shard in shards_of_rank(0, 2, 2) + shards_of_rank(1, 2, 2)
    ]
    for (together, _), (first, _), (second, _) in itertools.islice(zip(joined, *ranks), 20):
        assert together == first + second


def test_empty_corpus_and_empty_shard_are_errors_not_endless_loops(tmp_path):
    (tmp_path / "one.txt").write_text("only line\n")
    reader = RecordReader([tmp_path / "one.txt"], max_line_bytes=100)
    splitter = SentenceSplitter(CorpusSettings(pretokenized=True))
    assert next(iter(ShardStream(reader, splitter, PLAN, 0, 2)))[0] == [["only", "line"]]
    with pytest.raises(EmptyCorpusError, match="shard 1 of 2"):
        next(iter(ShardStream(reader, splitter, PLAN, 1, 2)))
    with pytest.raises(ValueError, match="cannot be split over"):
        shards_of_rank(0, 2, 3)
