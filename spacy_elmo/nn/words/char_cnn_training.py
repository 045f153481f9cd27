"""The char-CNN's convolutions and max-pooling for training, as table lookups with a sparse backward.

A width-w convolution over char embeddings is ``sum_k E[c_{p+k}] @ W_k``; with ``E @ W_k``
precomputed as a table (as :mod:`.char_cnn_tables` does), the forward pass is a sum of table
rows. The gain is in the backward pass: the max over positions passes a word's gradient to
only the position(s) holding the maximum, so the dense convolution backward that autograd
runs (a matmul over every position, nearly all of them zero) is replaced by adding each
word's gradient into the few table rows that its maximum read. The table's gradient then goes
back into the embedding and the filters through the small ``E @ W_k`` product, by autograd.
Ties: positions whose windows hold the same chars (the padding after a word) have bit-equal
sums, and ``torch.amax``'s backward would split the gradient among them only for the
convolution backward to add the shares back into the same table rows; here one of them takes
it whole, which is the same sum. (Different windows with exactly equal sums would take the
whole gradient at one of them: another valid subgradient, and a float coincidence.)
"""

from __future__ import annotations

from typing import Optional, Sequence

import torch
from torch.autograd.function import once_differentiable
from torch.nn import functional as F


def pooled_convolutions(
    char_ids: torch.Tensor,
    embedding: torch.Tensor,
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor],
    padding_idx: Optional[int] = 0,
) -> torch.Tensor:
    """Max-pooled convolution features ``(words, sum of n_filters)`` (before the activation)
    for char ids ``(words, chars)``; ``weights[i]`` is a Conv1d weight ``(n, d, width)``.

    Equal to ``cat([conv(E[ids].T).amax(-1) for conv])`` up to float rounding; the embedding
    row ``padding_idx`` gets no gradient, as with ``nn.Embedding(padding_idx=...)``.
    """
    n_chars = embedding.shape[0]
    char_ids = _without_repeated_tail(char_ids, max(weight.shape[-1] for weight in weights))
    if padding_idx is not None:
        frozen = torch.zeros(n_chars, 1, dtype=torch.bool, device=embedding.device)
        frozen[padding_idx] = True
        embedding = torch.where(frozen, embedding.detach(), embedding)
    features = []
    for weight, bias in zip(weights, biases):
        width = weight.shape[-1]
        # table[k * n_chars + c] = E[c] @ W[:, :, k]^T
        table = torch.einsum("cd,ndk->kcn", embedding, weight).reshape(width * n_chars, -1)
        features.append(_PooledLookup.apply(char_ids, table, width, n_chars) + bias)
    return torch.cat(features, dim=-1)


def _without_repeated_tail(char_ids: torch.Tensor, max_width: int) -> torch.Tensor:
    """Drop the trailing columns that only repeat windows already there.

    Past its last real character a word's ids repeat one padding id, so every window that
    starts in that tail sums the same table rows (bit for bit) as the first one there: the
    maximum is the same without them. Words are far shorter than the 50 columns, so this
    cuts most of the lookups. At least ``max_width`` columns stay.
    """
    length = char_ids.shape[1]
    if char_ids.shape[0] == 0 or length <= max_width:
        return char_ids
    repeats = char_ids == char_ids[:, -1:]
    tail = repeats.flip(1).cumprod(dim=1).sum(dim=1)  # each word's trailing run of its last id
    tail_start = length - int(tail.min())  # the first column from which every word repeats
    keep = min(length, max(max_width, tail_start + max_width))
    return char_ids[:, :keep]


class _PooledLookup(torch.autograd.Function):
    """``max over p of sum_k table[k * n_chars + ids[:, p + k]]``, ``(words, n)``."""

    @staticmethod
    def forward(ctx, char_ids: torch.Tensor, table: torch.Tensor, width: int, n_chars: int):  # type: ignore[override]
        n_words, length = char_ids.shape
        positions = length - width + 1
        offsets = torch.arange(width, device=char_ids.device) * n_chars
        bags = (char_ids.unfold(1, width, 1) + offsets).reshape(n_words, positions * width)
        sums = F.embedding_bag(bags.view(-1, width), table, mode="sum").view(n_words, positions, table.shape[1])
        pooled, argmax = sums.max(dim=1)
        # The table rows each maximum read: (words, n, width).
        first = argmax * width
        rows = torch.stack([bags.gather(1, first + k) for k in range(width)], dim=-1)
        ctx.save_for_backward(rows)
        ctx.table_rows = table.shape[0]
        return pooled

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_pooled: torch.Tensor):  # type: ignore[override]
        (rows,) = ctx.saved_tensors
        n_words, n_filters, width = rows.shape
        # Entry (c, f) of the flat table gradient is c * n + f.
        column = torch.arange(n_filters, device=rows.device).view(1, n_filters, 1)
        index = (rows * n_filters + column).reshape(-1)
        values = grad_pooled.unsqueeze(-1).expand(n_words, n_filters, width).reshape(-1)
        grad_table = grad_pooled.new_zeros(ctx.table_rows * n_filters)
        grad_table.index_add_(0, index, values)
        return None, grad_table.view(ctx.table_rows, n_filters), None, None
