"""A bounded LRU cache of layer-0 vectors, keyed by each word's id row.

Layer 0 depends only on a word's characters, and running text repeats words (Zipf), so most
tokens skip the char-CNN. Entries are dropped when the owner's version of the char encoder's
weights changes, so a stale vector is never served. One lock covers the map and the table; the
encoder runs on the misses outside it, and vectors computed under a version that has since
changed are returned but never stored. A cached vector agrees with a fresh one within float32
rounding (docs/reliability.md)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Hashable, Optional, Sequence

import torch

INITIAL_ROWS = 1024


@dataclass
class WordCacheStats:
    """Counts since the cache was made or its counters reset: ``tokens`` served (boundaries
    included), ``computed`` by the encoder (once per distinct word of a batch)."""

    tokens: int = 0
    computed: int = 0
    evictions: int = 0
    invalidations: int = 0
    size: int = 0
    max_words: int = 0

    @property
    def hit_rate(self) -> float:
        return 1.0 - self.computed / self.tokens if self.tokens else 0.0


class WordVectorCache:
    """LRU map word -> vector row, cleared whenever ``version`` changes."""

    def __init__(self, max_words: int) -> None:
        if max_words < 1:
            raise ValueError(f"max_words must be at least 1, not {max_words}")
        self.max_words = int(max_words)
        self._lock = threading.Lock()
        self._generation = 0  # bumped whenever the storage is reset
        self._reset_storage()
        self._stats = WordCacheStats(max_words=self.max_words)

    def _reset_storage(self) -> None:
        self._generation = getattr(self, "_generation", 0) + 1
        self._rows: OrderedDict[Hashable, int] = OrderedDict()  # least recently used first
        self._table: Optional[torch.Tensor] = None
        self._version: Hashable = None

    def __len__(self) -> int:
        return len(self._rows)

    def __contains__(self, word: Hashable) -> bool:
        return word in self._rows

    @property
    def stats(self) -> WordCacheStats:
        with self._lock:
            self._stats.size = len(self._rows)
            return self._stats

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = WordCacheStats(max_words=self.max_words)

    def clear(self) -> None:
        """Forget every vector (the counters stay)."""
        with self._lock:
            self._reset_storage()

    def vectors(
        self,
        words: Sequence[Hashable],
        n_tokens: int,
        version: Hashable,
        compute: Callable[[list[int]], torch.Tensor],
    ) -> torch.Tensor:
        """Vectors ``(len(words), dim)`` for distinct ``words`` (any keys: the embedder uses
        each word's id row); ``compute(positions)`` returns the vectors of the misses,
        ``words[p]`` for p in ``positions``. ``n_tokens`` is how many tokens these words stand
        for (for the hit rate).
        """
        with self._lock:
            if version is None or version != self._version:
                if self._rows:
                    self._stats.invalidations += 1
                self._reset_storage()
                self._version = version
            generation = self._generation
            hit_positions, hit_rows, miss_positions = [], [], []
            for position, word in enumerate(words):
                row = self._rows.get(word)
                if row is None:
                    miss_positions.append(position)
                else:
                    self._rows.move_to_end(word)
                    hit_positions.append(position)
                    hit_rows.append(row)
            # A copy: once the lock is released, another thread may reuse these rows.
            hits = self._filled_table()[_index(hit_rows, self._filled_table())] if hit_positions else None
            self._stats.tokens += n_tokens
            self._stats.computed += len(miss_positions)
        missing = [words[p] for p in miss_positions]
        computed = compute(miss_positions) if missing else None
        reference = computed if computed is not None else hits
        assert reference is not None, "vectors() needs at least one word"
        result = reference.new_empty(len(words), reference.shape[1])
        if hits is not None:
            result[_index(hit_positions, result)] = hits
        if computed is not None:
            result[_index(miss_positions, result)] = computed
            with self._lock:
                if self._generation == generation:
                    self._store(missing, computed)
        return result

    def _store(self, words: list[Hashable], vectors: torch.Tensor) -> None:
        if self._version is None:
            return  # weights whose changes cannot be detected: never keep their vectors
        words, vectors = words[-self.max_words :], vectors[-self.max_words :]
        rows, kept = [], []
        for position, word in enumerate(words):
            if word in self._rows:  # stored meanwhile by another thread: keep that row
                continue
            row = self._take_row(vectors)
            self._rows[word] = row
            rows.append(row)
            kept.append(position)
        if rows:
            self._filled_table()[_index(rows, vectors)] = vectors[_index(kept, vectors)]

    def _filled_table(self) -> torch.Tensor:
        """The table, which exists once a row has been handed out (:meth:`_take_row` grows it)."""
        assert self._table is not None, "a word has a row only after the table was grown"
        return self._table

    def _take_row(self, like: torch.Tensor) -> int:
        """The next unused row of the table (grown as needed), or the LRU entry's row when full."""
        used = len(self._rows)
        if used >= self.max_words:
            _, row = self._rows.popitem(last=False)
            self._stats.evictions += 1
            return row
        if self._table is None or used >= self._table.shape[0]:
            self._grow(like)
        return used  # rows are handed out in order until the cache is full

    def _grow(self, like: torch.Tensor) -> None:
        old = self._table
        rows = INITIAL_ROWS if old is None else 2 * old.shape[0]
        table = like.new_empty(min(rows, self.max_words), like.shape[1])
        if old is not None:
            table[: old.shape[0]] = old
        self._table = table

    # Copies and pickles start empty: the vectors are derived data.
    def __getstate__(self) -> dict:
        return {"max_words": self.max_words}

    def __setstate__(self, state: dict) -> None:
        WordVectorCache.__init__(self, state["max_words"])  # the class has no subclasses

    def __deepcopy__(self, memo: dict) -> "WordVectorCache":
        return WordVectorCache(self.max_words)


def _index(positions: list[int], like: torch.Tensor) -> torch.Tensor:
    return torch.tensor(positions, dtype=torch.long, device=like.device)
