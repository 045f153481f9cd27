"""An endless, sharded, resumable stream of training batches: chunks of sentences, each shuffled,
grouped by length and its batches shuffled, all drawn from the seed, shard, epoch and chunk start,
so a resume re-reads one chunk, not the corpus. Record ``i`` belongs to shard ``i % n_shards``."""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Iterator, Sequence

from ...corpora.record_stream import ReadStats, RecordPosition, RecordReader
from ...embedding.plan import length_sorted_batches
from ..errors import ConfigError, EmptyCorpusError, reading
from .sentences import SentenceSplitter, Tokens


@dataclass(frozen=True)
class ShardState:
    """A shard's resume point: the chunk at ``(file_index, offset)`` in ``epoch``, ``batches_done`` used."""

    epoch: int = 0
    file_index: int = 0
    offset: int = 0
    record_index: int = 0
    batches_done: int = 0

    @property
    def chunk_start(self) -> RecordPosition:
        return RecordPosition(self.file_index, self.offset, self.record_index)


@dataclass(frozen=True)
class BatchPlan:
    batch_tokens: int
    max_sentences: int
    chunk_sentences: int


class ShardStream:
    """Yields ``(sentences, state after this batch)`` forever for shard ``shard`` of ``n_shards``."""

    def __init__(
        self,
        reader: RecordReader,
        splitter: SentenceSplitter,
        plan: BatchPlan,
        shard: int = 0,
        n_shards: int = 1,
        seed: int = 0,
        state: ShardState = ShardState(),
    ) -> None:
        if not 0 <= shard < n_shards:
            raise ValueError(f"shard {shard} is not in [0, {n_shards})")
        self.reader, self.splitter, self.plan = reader, splitter, plan
        self.shard, self.n_shards, self.seed = shard, n_shards, seed
        self.state = state

    def __iter__(self) -> Iterator[tuple[list[Tokens], ShardState]]:
        state = self.state
        epoch_has_sentences = state.chunk_start != RecordPosition()
        while True:
            sentences, next_start, exhausted = self._read_chunk(state.chunk_start)
            epoch_has_sentences = epoch_has_sentences or bool(sentences)
            for index, batch in enumerate(self._batches(sentences, state)):
                if index >= state.batches_done:
                    yield batch, replace(state, batches_done=index + 1)
            if exhausted:
                if not epoch_has_sentences:
                    where = f"shard {self.shard} of {self.n_shards} of " if self.n_shards > 1 else ""
                    raise EmptyCorpusError(f"{where}the training corpus has no sentences")
                state = ShardState(epoch=state.epoch + 1)
                epoch_has_sentences = False
            else:
                state = ShardState(state.epoch, next_start.file_index, next_start.offset, next_start.record_index)

    def _read_chunk(self, start: RecordPosition) -> tuple[list[Tokens], RecordPosition, bool]:
        own = (
            (position, payload)
            for position, payload in self.reader.records(start, ReadStats())
            if (position.record_index - 1) % self.n_shards == self.shard
        )
        sentences: list[Tokens] = []
        end = start
        files = self.reader.files
        with reading(files[start.file_index] if start.file_index < len(files) else "the training text"):
            for position, record_sentences in self.splitter.split(own):
                sentences.extend(record_sentences)
                end = position
                if len(sentences) >= self.plan.chunk_sentences:
                    return sentences, end, False
        return sentences, end, True

    def _batches(self, sentences: list[Tokens], state: ShardState) -> list[list[Tokens]]:
        rng = random.Random(f"{self.seed}/{self.shard}/{state.epoch}/{state.file_index}/{state.offset}")
        order = list(range(len(sentences)))
        rng.shuffle(order)
        shuffled = [sentences[i] for i in order]
        lengths = [len(s) + 2 for s in shuffled]  # BOS and EOS are real input positions
        groups = list(length_sorted_batches(lengths, self.plan.max_sentences, self.plan.batch_tokens))
        rng.shuffle(groups)
        return [[shuffled[i] for i in group] for group in groups]


class RankStream:
    """One process's step: the next batch of each of its shards, so N processes see what one sees."""

    def __init__(self, streams: Sequence[ShardStream]) -> None:
        if not streams:
            raise ValueError("A process needs at least one shard")
        self.streams = list(streams)

    def __iter__(self) -> Iterator[tuple[list[Tokens], dict[int, ShardState]]]:
        iterators = [iter(stream) for stream in self.streams]
        states = {stream.shard: stream.state for stream in self.streams}
        while True:
            sentences: list[Tokens] = []
            for stream, iterator in zip(self.streams, iterators):
                batch, states[stream.shard] = next(iterator)
                sentences.extend(batch)
            yield sentences, dict(states)


def shards_of_rank(rank: int, world_size: int, n_shards: int) -> list[int]:
    if n_shards % world_size:
        raise ConfigError(
            f"{n_shards} data shards cannot be split over {world_size} processes: "
            "use a number of processes that divides training.shards"
        )
    return list(range(rank, n_shards, world_size))
