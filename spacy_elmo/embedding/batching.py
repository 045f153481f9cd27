"""Grouping sentences into batches of similar length, so that little work is padding."""

from __future__ import annotations

from typing import Iterator, Optional, Sequence


def length_sorted_batches(
    lengths: Sequence[int],
    max_sentences: int = 64,
    max_tokens: Optional[int] = None,
    skip_empty: bool = False,
) -> Iterator[list[int]]:
    """Yield lists of indices into ``lengths``, longest sentences first.

    A batch holds at most ``max_sentences`` sentences and, if ``max_tokens`` is given, at most
    that many padded tokens (batch size times its longest sentence); a single sentence longer
    than the budget still gets a batch of its own.
    """
    if max_sentences < 1:
        raise ValueError(f"batch size must be at least 1, not {max_sentences}")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batch: list[int] = []
    for index in order:
        if skip_empty and lengths[index] == 0:
            continue
        longest = lengths[batch[0]] if batch else lengths[index]
        too_many = len(batch) >= max_sentences
        too_long = max_tokens is not None and batch and (len(batch) + 1) * longest > max_tokens
        if batch and (too_many or too_long):
            yield batch
            batch = []
        batch.append(index)
    if batch:
        yield batch
