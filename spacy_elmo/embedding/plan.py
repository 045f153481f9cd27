"""The plan of a run: which windows of which sentences go into which biLM batch.

Sentences of at most ``max_tokens`` tokens are batched by length (longest first) under
``batch_tokens`` padded tokens and ``batch_sentences`` sentences; a longer sentence is read as
consecutive windows of ``max_tokens`` tokens, each with its own BOS/EOS, whose layers are joined
(:func:`stitch`). The plan depends on the lengths and settings only, so every caller and every
process (``spacy-elmo embed``'s shards) forms the same groups.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Container, Iterator, Optional, Sequence

import numpy


@dataclass(frozen=True)
class Window:
    """Tokens ``start:end`` of sentence number ``sentence``: one biLM input sequence."""

    sentence: int
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start

    def words(self, sentences: Sequence[Sequence[str]]) -> Sequence[str]:
        return sentences[self.sentence][self.start : self.end]


@dataclass(frozen=True)
class Group:
    """What finishes together: ``sentences`` (indices into the caller's list) and the batches of
    windows computing them; an empty sentence belongs to a group but to no batch."""

    sentences: tuple[int, ...]
    batches: tuple[tuple[Window, ...], ...]

    def only(self, keep: Container[int]) -> "Group":
        """The same group without the sentences not in ``keep`` (e.g. those already stored)."""
        batches = (tuple(w for w in batch if w.sentence in keep) for batch in self.batches)
        return Group(tuple(i for i in self.sentences if i in keep), tuple(b for b in batches if b))


def cut(sentence: int, length: int, max_tokens: int) -> list[Window]:
    """The windows of a sentence of ``length`` tokens: one when it fits, none when it is empty."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    return [Window(sentence, start, min(start + max_tokens, length)) for start in range(0, length, max_tokens)]


def stitch(pieces: Sequence[Any], xp: Any = None) -> Any:
    """One sentence's layers ``(L+1, n, D)`` from its windows' layers, in window order."""
    if len(pieces) == 1:
        return pieces[0]
    return (numpy if xp is None else xp).concatenate(pieces, axis=1)


def length_sorted_batches(
    lengths: Sequence[int], max_sentences: int = 64, max_tokens: Optional[int] = None, skip_empty: bool = False
) -> Iterator[list[int]]:
    """Lists of indices into ``lengths``, longest first, of at most ``max_sentences`` sentences
    and ``max_tokens`` padded tokens (a sentence longer than the budget gets a batch of its own)."""
    if max_sentences < 1:
        raise ValueError(f"batch size must be at least 1, not {max_sentences}")
    batch: list[int] = []
    for index in sorted(range(len(lengths)), key=lambda i: -lengths[i]):
        if skip_empty and lengths[index] == 0:
            continue
        longest = lengths[batch[0]] if batch else lengths[index]
        too_long = max_tokens is not None and (len(batch) + 1) * longest > max_tokens
        if batch and (len(batch) >= max_sentences or too_long):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch


def plan_groups(
    lengths: Sequence[int], max_tokens: int, batch_tokens: Optional[int], batch_sentences: int
) -> list[Group]:
    """Short sentences' batches (longest first), then one group per longer sentence, in input
    order; ``batch_tokens=None``: no budget (a long sentence's windows in one batch)."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
    groups = []
    short = [i for i, n in enumerate(lengths) if n <= max_tokens]
    for batch in length_sorted_batches([lengths[i] for i in short], batch_sentences, batch_tokens):
        members = tuple(short[j] for j in batch)
        windows = tuple(w for i in members for w in cut(i, lengths[i], max_tokens))
        groups.append(Group(members, (windows,) if windows else ()))
    for i, n in enumerate(lengths):
        if n > max_tokens:
            windows = cut(i, n, max_tokens)
            per_batch = len(windows) if batch_tokens is None else max(1, batch_tokens // max_tokens)
            batches = tuple(tuple(windows[k : k + per_batch]) for k in range(0, len(windows), per_batch))
            groups.append(Group((i,), batches))
    return groups
