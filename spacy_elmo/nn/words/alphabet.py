"""A token's id row split in two, and the char rows a batch of words needs.

The table-lookup char-CNN (:mod:`.char_cnn_tables`, :mod:`.char_cnn_training`) precomputes,
per filter width w, ``w * n_chars`` rows of ``n_filters`` values. For the 262 byte ids that is
13 MB at the published size, computed once. A code-point alphabet has thousands of entries
(every character of a language's training text): all of its rows would take hundreds of MB,
so above :data:`FULL_TABLE_FLOATS` only the rows of the characters a batch uses are computed,
in fixed blocks of :data:`CHAR_BLOCK` characters so that a row's values do not depend on which
other characters share the batch (a word's vector must not, for the word cache's sake).
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch

#: The whole table set is kept when it holds at most this many floats (64 MB in float32).
FULL_TABLE_FLOATS = 1 << 24
CHAR_BLOCK = 64


def split_ids(ids: torch.Tensor, max_chars: int) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``(chars, words)`` of id rows ``(n, width)``: the first ``max_chars`` columns, and the
    word id column when the rows have one (None otherwise)."""
    if ids.shape[-1] == max_chars:
        return ids, None
    return ids[..., :max_chars], ids[..., max_chars]


def uses_full_table(n_chars: int, filters: Sequence[tuple[int, int]]) -> bool:
    """Whether the tables of every character are small enough to build and keep."""
    return n_chars * sum(width * n for width, n in filters) <= FULL_TABLE_FLOATS


def used_chars(char_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The char ids that occur, sorted (0, the padding row, always among them, so first), padded
    with 0 to a multiple of :data:`CHAR_BLOCK`; and ``char_ids`` renumbered as positions in it."""
    used = torch.unique(torch.cat([char_ids.new_zeros(1), char_ids.reshape(-1)]))
    renumbered = torch.searchsorted(used, char_ids.contiguous())
    padding = -used.shape[0] % CHAR_BLOCK
    return torch.cat([used, used.new_zeros(padding)]), renumbered
