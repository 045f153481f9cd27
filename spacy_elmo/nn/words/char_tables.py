"""The char-CNN's convolutions on CPUs, as summed table lookups.

A width-w convolution is ``sum_k E[c_{p+k}] @ W_k``; with each ``E @ W_k`` a small table (one row
per char), a position's value is the sum of w table rows, which ``embedding_bag`` adds in one
call. The backward pass gains most: the max over positions sends a word's gradient into the few
table rows its maximum read, not through a dense convolution backward. Large (code-point)
alphabets build the rows of the chars a batch uses only."""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

#: The whole table set is kept when it holds at most this many floats (64 MB in float32).
FULL_TABLE_FLOATS = 1 << 24
#: Words per table-lookup call without autograd: the (words, positions, filters) sums stay in cache.
LOOKUP_CHUNK = 64


def split_ids(ids: torch.Tensor, max_chars: int) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``(chars, words)`` of id rows ``(n, width)``: the first ``max_chars`` columns, and the
    word id column when the rows have one (None otherwise)."""
    if ids.shape[-1] == max_chars:
        return ids, None
    return ids[..., :max_chars], ids[..., max_chars]


def uses_full_table(n_chars: int, filters: Sequence[tuple[int, int]]) -> bool:
    """Whether the tables of every char are small enough to build and keep."""
    return n_chars * sum(width * n for width, n in filters) <= FULL_TABLE_FLOATS


def used_chars(char_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The char ids that occur, sorted (0, the padding id, always first), and ``char_ids``
    renumbered as positions in that list."""
    used = torch.unique(torch.cat([char_ids.new_zeros(1), char_ids.reshape(-1)]))
    return used, torch.searchsorted(used, char_ids.contiguous())


def conv_tables(embedding: torch.Tensor, weights: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """Per convolution weight ``(n, d, width)``, the table ``(width * n_chars, n)`` whose row
    ``k * n_chars + c`` is ``E[c] @ W[:, :, k]^T``."""
    return [torch.einsum("cd,ndk->kcn", embedding, weight).reshape(-1, weight.shape[0]) for weight in weights]


def pooled_features(
    char_ids: torch.Tensor, tables: Sequence[torch.Tensor], n_chars: int, biases: Sequence[torch.Tensor]
) -> torch.Tensor:
    """Max-pooled convolution features ``(words, sum of n)`` before the activation, for char ids
    ``(words, chars)`` below ``n_chars`` (the tables' alphabet); differentiable in the tables and biases."""
    widths = [table.shape[0] // n_chars for table in tables]
    char_ids = _without_repeated_tail(char_ids, max(widths))
    features = []
    for table, width, bias in zip(tables, widths, biases):
        bags = _bags(char_ids, width, n_chars)
        if torch.is_grad_enabled() and table.requires_grad:
            pooled = _PooledLookup.apply(bags, table, width)
        else:
            pooled = _pooled_without_autograd(bags, table, width)
        features.append(pooled + bias)  # max(x + b) = max(x) + b: the bias goes on after pooling
    return torch.cat(features, dim=-1)


def _bags(char_ids: torch.Tensor, width: int, n_chars: int) -> torch.Tensor:
    """``(words, positions * width)``: the table rows each position's window adds up."""
    offsets = torch.arange(width, device=char_ids.device) * n_chars
    n_words, length = char_ids.shape
    return (char_ids.unfold(1, width, 1) + offsets).reshape(n_words, (length - width + 1) * width)


def _pooled_without_autograd(bags: torch.Tensor, table: torch.Tensor, width: int) -> torch.Tensor:
    n_words, n_filters = bags.shape[0], table.shape[1]
    positions = bags.shape[1] // width
    pooled = table.new_empty(n_words, n_filters)
    for start in range(0, n_words, LOOKUP_CHUNK):
        chunk = bags[start : start + LOOKUP_CHUNK]
        sums = F.embedding_bag(chunk.reshape(-1, width), table, mode="sum")
        torch.amax(sums.view(chunk.shape[0], positions, n_filters), dim=1, out=pooled[start : start + LOOKUP_CHUNK])
    return pooled


def _without_repeated_tail(char_ids: torch.Tensor, max_width: int) -> torch.Tensor:
    """Drop the trailing columns that only repeat windows already there: past its last char a
    word's ids repeat one padding id, so every window starting in that tail has the same sum."""
    length = char_ids.shape[1]
    if char_ids.shape[0] == 0 or length <= max_width:
        return char_ids
    repeats = char_ids == char_ids[:, -1:]
    tail = repeats.flip(1).cumprod(dim=1).sum(dim=1)  # each word's trailing run of its last id
    keep = min(length, max(max_width, length - int(tail.min()) + max_width))
    return char_ids[:, :keep]


class _PooledLookup(torch.autograd.Function):
    """``max over p of sum_k table[bags[:, p * width + k]]``, ``(words, n)``, with a sparse backward."""

    @staticmethod
    def forward(ctx, bags: torch.Tensor, table: torch.Tensor, width: int):  # type: ignore[override]
        n_words = bags.shape[0]
        sums = F.embedding_bag(bags.view(-1, width), table, mode="sum").view(n_words, -1, table.shape[1])
        pooled, argmax = sums.max(dim=1)
        first = argmax * width  # the table rows each maximum read: (words, n, width)
        ctx.save_for_backward(torch.stack([bags.gather(1, first + k) for k in range(width)], dim=-1))
        ctx.table_rows = table.shape[0]
        return pooled

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_pooled: torch.Tensor):  # type: ignore[override]
        (rows,) = ctx.saved_tensors
        n_words, n_filters, width = rows.shape
        column = torch.arange(n_filters, device=rows.device).view(1, n_filters, 1)
        index = (rows * n_filters + column).reshape(-1)  # entry (c, f) of the flat table is c * n + f
        values = grad_pooled.unsqueeze(-1).expand(n_words, n_filters, width).reshape(-1)
        grad_table = grad_pooled.new_zeros(ctx.table_rows * n_filters)
        grad_table.index_add_(0, index, values)
        return None, grad_table.view(ctx.table_rows, n_filters), None
