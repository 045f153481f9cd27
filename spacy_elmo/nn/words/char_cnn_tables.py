"""The char-CNN without autograd: convolutions as summed table lookups, words in fixed blocks.

A width-w convolution over char embeddings is ``sum_k E[c_{p+k}] @ W_k``. Since a char has
only 262 possible embeddings, each ``E @ W_k`` is a small table (262 x n_filters) computed once;
the convolution at position p is then the sum of w table rows, which ``embedding_bag`` fetches
and adds in one fused call: w*n additions instead of 2*w*16*n multiply-adds, and no
(words x positions x width*16) unfolded copy. The tables are cached until a weight changes.

Highway and projection matmuls always see blocks of exactly ``WORD_BLOCK`` rows (the last one
padded): BLAS kernels may round a row differently depending on how many rows share the call,
and a fixed block makes a word's vector independent of which other words are encoded with it.
That is what lets a word cache return exactly what the uncached path computes. Within the
block a word's row may sit anywhere, so the rows are also laid out the same way whatever their
place (:mod:`..row_layout`): feature rows padded with zero columns to whole 64-byte lines (with
weights padded to match; published sizes need none), and the gates' sigmoid and a tanh
activation run on groups of rows that one thread computes. Large (code-point) alphabets get
tables of the characters in use only (:mod:`.alphabet`), built from char rows padded the same way.

This module runs an encoder's weights without building one: it reads them through the
:class:`CharCnnWeights` protocol, which :class:`.char_cnn.CharEncoder` satisfies, so the arrow
runs one way (``char_cnn`` imports this module, never the reverse).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional, Protocol, Sequence, cast

import torch
from torch import nn
from torch.nn import functional as F

from ...config import BiLMConfig
from ..derived_cache import DerivedTensors
from ..precision import DEFAULT_PRECISION
from ..reduced_products import ReducedWeight
from ..row_layout import aligned_width, padded_columns, rowwise_
from .alphabet import CHAR_BLOCK, split_ids, used_chars, uses_full_table
from .highway import Highway

WORD_BLOCK = 256  # rows per highway/projection matmul (fixed: see the module docstring)
# On a GPU the tables lose: thousands of small lookups cost more in launches than cuDNN's
# convolutions cost in arithmetic. There words go through the convolutions in blocks of this
# fixed size (a fixed size again keeps each word's vector independent of its neighbours).
GPU_WORD_BLOCK = 4096
CONV_CHUNK = 16  # words per table-lookup call: the (words, positions, filters) maxima stay in cache


class CharCnnWeights(Protocol):
    """The parts of a char encoder this module reads (``config`` for its activation only)."""

    config: BiLMConfig
    char_embedding: nn.Embedding
    convolutions: Sequence[nn.Conv1d]  # an nn.ModuleList, one per filter width
    highway: Highway
    projection: nn.Linear
    word_embedding: Optional[nn.Embedding]  # the word table, concatenated before the projection


@dataclass
class ConvTables:
    """Per filter width: the stacked lookup tables ``(width * n_chars, n)`` and row offsets."""

    tables: list[torch.Tensor]
    offsets: list[torch.Tensor]  # (width,): k * n_chars, added to the char id at offset k
    bias: torch.Tensor  # (n_filters,): every convolution's bias, concatenated


def conv_tables(encoder: CharCnnWeights) -> ConvTables:
    """The encoder's lookup tables, rebuilt only after its embedding or a convolution changes."""
    cache = encoder.__dict__.setdefault("_conv_table_cache", DerivedTensors())
    params = [encoder.char_embedding.weight] + [p for conv in encoder.convolutions for p in conv.parameters()]
    weights = [conv.weight for conv in encoder.convolutions]
    return cache.get(params, lambda: _tables(encoder, weights, [encoder.char_embedding.weight]))


def compact_tables(encoder: CharCnnWeights, used: torch.Tensor) -> ConvTables:
    """The tables of the char ids ``used`` only (a multiple of ``CHAR_BLOCK`` of them), in that order.

    A char's place among them depends on the batch, so its rows must not depend on the place:
    every block of ``CHAR_BLOCK`` chars is one product of the same shape, and the embedding
    rows (with the filters' inputs) are padded with zero columns to whole 64-byte lines, so
    that every row of a block is read at the same alignment.
    """
    embedding = encoder.char_embedding.weight
    dim = aligned_width(embedding.shape[1], embedding.dtype)
    rows = padded_columns(embedding[used], dim)
    weights = [conv.weight for conv in encoder.convolutions]
    if dim != embedding.shape[1]:
        weights = [padded_columns(weight.transpose(1, 2), dim).transpose(1, 2) for weight in weights]
    return _tables(encoder, weights, list(rows.split(CHAR_BLOCK)))


def _tables(
    encoder: CharCnnWeights,
    weights: list[torch.Tensor],
    embedding_blocks: list[torch.Tensor],
) -> ConvTables:
    """The tables of the char rows ``embedding_blocks`` (concatenated), each block's product
    computed on its own; ``weights`` are the convolutions' ``(n, d, width)``."""
    n_chars = sum(block.shape[0] for block in embedding_blocks)
    device = embedding_blocks[0].device
    tables, offsets = [], []
    for weight in weights:
        width = weight.shape[-1]
        # table[k * n_chars + c] = E[c] @ W[:, :, k]^T
        parts = [torch.einsum("cd,ndk->kcn", block, weight) for block in embedding_blocks]
        tables.append(torch.cat(parts, dim=1).reshape(width * n_chars, -1).contiguous())
        offsets.append(torch.arange(width, device=device) * n_chars)
    bias = torch.cat(cast(list[torch.Tensor], [conv.bias for conv in encoder.convolutions]))  # built with biases
    return ConvTables(tables, offsets, bias)


@dataclass
class DenseWeights:
    """Highway and projection weights for feature rows padded to ``width`` (zero columns).

    Each highway layer maps ``width`` to ``2 * width`` (transform, then gate); the padded
    columns of the transform and of the features are zero, so they stay zero (the gate there
    is 0.5, and 0.5 * 0 + 0.5 * 0 = 0). The projection reads ``[word vector, features]`` rows
    padded to ``projection_width``. Models whose widths are whole lines use their own weights.
    """

    width: int
    highway: list[tuple[torch.Tensor, torch.Tensor]]
    projection_width: int
    projection: torch.Tensor
    projection_bias: torch.Tensor


def dense_weights(encoder: CharCnnWeights) -> DenseWeights:
    """The highway and projection weights laid out for padded rows, rebuilt after a change."""
    cache = encoder.__dict__.setdefault("_dense_weight_cache", DerivedTensors())
    params = [p for layer in encoder.highway.layers for p in (layer.weight, layer.bias)]
    params += [encoder.projection.weight, encoder.projection.bias]
    return cache.get(params, lambda: _dense_weights(encoder))


def _dense_weights(encoder: CharCnnWeights) -> DenseWeights:
    projection = encoder.projection.weight
    dim = encoder.highway.dim
    width = aligned_width(dim, projection.dtype)
    highway = []
    for layer in encoder.highway.layers:
        weight, bias = layer.weight, layer.bias
        if width != dim:
            halves = [padded_columns(half, width) for half in weight.split(dim)]  # (dim, width) each
            weight = torch.cat([padded_columns(half.t(), width).t() for half in halves])
            bias = torch.cat([padded_columns(half, width) for half in bias.split(dim)])
        highway.append((weight, bias))
    projection_width = aligned_width(projection.shape[1], projection.dtype)
    return DenseWeights(
        width,
        highway,
        projection_width,
        padded_columns(projection, projection_width),
        encoder.projection.bias,
    )


def encode_words(encoder: CharCnnWeights, ids: torch.Tensor, precision: str = DEFAULT_PRECISION) -> torch.Tensor:
    """Vectors ``(n_words, projection_dim)`` for id rows ``(n_words, ids_per_token)``, without autograd.

    ``precision`` ``"bfloat16"``/``"int8"``: the highway and projection products in that precision
    (:func:`_reduced_highway_and_projection`); the table lookups stay float32."""
    n_words = ids.shape[0]
    weight = encoder.projection.weight
    result = weight.new_empty(n_words, weight.shape[0])
    if n_words == 0:
        return result
    on_gpu = ids.is_cuda
    block_size = GPU_WORD_BLOCK if on_gpu else WORD_BLOCK
    config = encoder.config
    char_ids, word_ids = split_ids(ids, config.max_characters_per_token)
    with torch.no_grad():
        tables = None
        if not on_gpu and uses_full_table(config.n_characters, config.filters):
            tables = conv_tables(encoder)
        elif not on_gpu:
            used, char_ids = used_chars(char_ids)
            tables = compact_tables(encoder, used)
        for start in range(0, n_words, block_size):
            chars = _fixed_block(char_ids[start : start + block_size], block_size)
            words = None if word_ids is None else _fixed_block(word_ids[start : start + block_size], block_size)
            size = min(block_size, n_words - start)
            if tables is None:
                result[start : start + size] = _encode_block_by_convolution(encoder, chars, words, precision)[:size]
            else:
                result[start : start + size] = _encode_block(encoder, tables, chars, words, precision)[:size]
    return result


def _fixed_block(rows: torch.Tensor, size: int) -> torch.Tensor:
    """``rows`` padded with zero rows (id 0: padding) to exactly ``size`` rows."""
    if rows.shape[0] == size:
        return rows
    return torch.cat([rows, rows.new_zeros(size - rows.shape[0], *rows.shape[1:])])


def _encode_block_by_convolution(
    encoder: CharCnnWeights,
    char_ids: torch.Tensor,
    word_ids: Optional[torch.Tensor] = None,
    precision: str = DEFAULT_PRECISION,
) -> torch.Tensor:
    embedded = F.embedding(char_ids, encoder.char_embedding.weight).transpose(1, 2)
    with _full_precision_convolutions():
        features = torch.cat([conv(embedded).amax(dim=-1) for conv in encoder.convolutions], dim=-1)
    return _highway_and_projection(encoder, features, word_ids, precision)


@contextmanager
def _full_precision_convolutions() -> Iterator[None]:
    """cuDNN may run float32 convolutions in TF32 (10-bit mantissas) by default; layer 0 must
    stay float32 like every other path (reduced precision is :meth:`BiLM.use_autocast`)."""
    cudnn = torch.backends.cudnn
    previous = cudnn.allow_tf32
    cudnn.allow_tf32 = False
    try:
        yield
    finally:
        cudnn.allow_tf32 = previous


def _encode_block(
    encoder: CharCnnWeights,
    tables: ConvTables,
    char_ids: torch.Tensor,
    word_ids: Optional[torch.Tensor] = None,
    precision: str = DEFAULT_PRECISION,
) -> torch.Tensor:
    n_words, n_chars_per_word = char_ids.shape
    n_features = tables.bias.shape[0]
    padded = aligned_width(n_features, tables.bias.dtype)
    # Padded rows (see the module docstring); the pooled features go into the first columns.
    features = tables.bias.new_empty(n_words, padded)
    if padded > n_features:
        features[:, n_features:] = 0.0
    column = 0
    for table, offsets in zip(tables.tables, tables.offsets):
        width, n_filters = offsets.shape[0], table.shape[1]
        positions = n_chars_per_word - width + 1
        # (words, positions, width) rows of the table to add up, one bag per position.
        bags = (char_ids.unfold(1, width, 1) + offsets).reshape(n_words, positions * width)
        for start in range(0, n_words, CONV_CHUNK):
            chunk = bags[start : start + CONV_CHUNK]
            sums = F.embedding_bag(chunk.reshape(-1, width), table, mode="sum")
            torch.amax(
                sums.view(chunk.shape[0], positions, n_filters),
                dim=1,
                out=features[start : start + CONV_CHUNK, column : column + n_filters],
            )
        column += n_filters
    features[:, :n_features] += tables.bias  # max(x + b) = max(x) + b: the bias goes on after pooling
    return _highway_and_projection(encoder, features, word_ids, precision)


def _highway_and_projection(
    encoder: CharCnnWeights,
    features: torch.Tensor,
    word_ids: Optional[torch.Tensor] = None,
    precision: str = DEFAULT_PRECISION,
) -> torch.Tensor:
    """Activation of the pooled features (in place), highway layers, the word vectors in front
    (models with a word table), projection. ``features`` may come padded with zero columns."""
    if precision != DEFAULT_PRECISION:
        return _reduced_highway_and_projection(encoder, features, word_ids, precision)
    weights = dense_weights(encoder)
    dim, width = encoder.highway.dim, weights.width
    features = padded_columns(features, width)
    features = features.relu_() if encoder.config.activation == "relu" else rowwise_(torch.Tensor.tanh_, features)
    for weight, bias in weights.highway:
        projected = F.linear(features, weight, bias)
        transform = projected[:, :width].relu_()
        gate = rowwise_(torch.Tensor.sigmoid_, projected[:, width:])
        features = gate * transform + (1.0 - gate) * features
    inputs = features  # without a word table, projection_width is width
    if word_ids is not None and encoder.word_embedding is not None:
        words = F.embedding(word_ids, encoder.word_embedding.weight)
        inputs = features.new_zeros(features.shape[0], weights.projection_width)
        inputs[:, : words.shape[1]] = words
        inputs[:, words.shape[1] : words.shape[1] + dim] = features[:, :dim]
    return F.linear(inputs, weights.projection, weights.projection_bias)


@dataclass
class ReducedDenseWeights:
    """The highway layers' and the projection's weights for products in a reduced precision."""

    highway: list[tuple[ReducedWeight, torch.Tensor]]  # (2 dim, dim) weight, float32 bias
    projection: ReducedWeight  # (P, word_dim + dim)
    projection_bias: torch.Tensor


def reduced_dense_weights(encoder: CharCnnWeights, precision: str) -> ReducedDenseWeights:
    """The highway and projection weights converted to ``precision``, rebuilt after a change."""
    caches = encoder.__dict__.setdefault("_reduced_dense_weight_cache", {})
    cache = caches.setdefault(precision, DerivedTensors())
    params = [p for layer in encoder.highway.layers for p in (layer.weight, layer.bias)]
    params += [encoder.projection.weight, encoder.projection.bias]

    def build() -> ReducedDenseWeights:
        return ReducedDenseWeights(
            [(ReducedWeight(layer.weight, precision), layer.bias.float()) for layer in encoder.highway.layers],
            ReducedWeight(encoder.projection.weight, precision),
            encoder.projection.bias.float(),
        )

    return cache.get(params, build)


def _reduced_highway_and_projection(
    encoder: CharCnnWeights, features: torch.Tensor, word_ids: Optional[torch.Tensor], precision: str
) -> torch.Tensor:
    """:func:`_highway_and_projection` with its products in ``precision`` (the highway's gates,
    activations and sums stay float32), on unpadded rows: no row layout is promised here."""
    weights = reduced_dense_weights(encoder, precision)
    dim = encoder.highway.dim
    features = features[:, :dim].float()
    features = features.relu_() if encoder.config.activation == "relu" else features.tanh_()
    for weight, bias in weights.highway:
        projected = weight.product_into(features, features.new_empty(features.shape[0], 2 * dim), bias)
        transform = projected[:, :dim].relu_()
        gate = projected[:, dim:].sigmoid_()
        features = gate * transform + (1.0 - gate) * features
    if word_ids is not None and encoder.word_embedding is not None:
        features = torch.cat([F.embedding(word_ids, encoder.word_embedding.weight).float(), features], dim=-1)
    out = features.new_empty(features.shape[0], weights.projection.out_features)
    return weights.projection.product_into(features, out, weights.projection_bias).to(encoder.projection.weight.dtype)
