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
from typing import Callable, Hashable, Sequence

import torch


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
    """LRU map word -> vector, cleared whenever ``version`` changes."""

    def __init__(self, max_words: int) -> None:
        if max_words < 1:
            raise ValueError(f"max_words must be at least 1, not {max_words}")
        self.max_words = int(max_words)
        self._lock = threading.Lock()
        self._vectors: OrderedDict[Hashable, torch.Tensor] = OrderedDict()  # least recently used first
        self._version: Hashable = None
        self._stats = WordCacheStats(max_words=self.max_words)

    def __len__(self) -> int:
        return len(self._vectors)

    def __contains__(self, word: Hashable) -> bool:
        return word in self._vectors

    @property
    def stats(self) -> WordCacheStats:
        with self._lock:
            self._stats.size = len(self._vectors)
            return self._stats

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = WordCacheStats(max_words=self.max_words)

    def clear(self) -> None:
        """Forget every vector (the counters stay)."""
        with self._lock:
            self._vectors.clear()
            self._version = None

    def vectors(
        self, words: Sequence[Hashable], n_tokens: int, version: Hashable, compute: Callable[[list[int]], torch.Tensor]
    ) -> torch.Tensor:
        """Vectors ``(len(words), dim)`` for distinct ``words`` (any keys: the embedder uses each
        word's id row); ``compute(positions)`` gives those of ``words[p]`` for the misses.
        ``n_tokens``: how many tokens these words stand for (for the hit rate)."""
        with self._lock:
            if version is None or version != self._version:
                self._stats.invalidations += bool(self._vectors)
                self._vectors.clear()
                self._version = version
            found = [self._vectors.get(word) for word in words]
            for word, vector in zip(words, found):
                if vector is not None:
                    self._vectors.move_to_end(word)
            missing = [p for p, vector in enumerate(found) if vector is None]
            self._stats.tokens += n_tokens
            self._stats.computed += len(missing)
        computed = compute(missing) if missing else None
        if computed is not None:
            for position, vector in zip(missing, computed):
                found[position] = vector
            with self._lock:
                if version is not None and version == self._version:
                    self._store([words[p] for p in missing], computed)
        return torch.stack(found)  # type: ignore[arg-type]  # every entry is filled now

    def _store(self, words: list[Hashable], vectors: torch.Tensor) -> None:
        for word, vector in zip(words[-self.max_words :], vectors[-self.max_words :]):
            self._vectors[word] = vector.clone()  # its own storage, not a view of the batch
            if len(self._vectors) > self.max_words:
                self._vectors.popitem(last=False)
                self._stats.evictions += 1

    # Copies and pickles start empty: the vectors are derived data.
    def __getstate__(self) -> dict:
        return {"max_words": self.max_words}

    def __setstate__(self, state: dict) -> None:
        WordVectorCache.__init__(self, state["max_words"])  # the class has no subclasses

    def __deepcopy__(self, memo: dict) -> "WordVectorCache":
        return WordVectorCache(self.max_words)
