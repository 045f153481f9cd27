"""The char-CNN without autograd: convolutions as summed table lookups, words in fixed blocks.

A width-w convolution over char embeddings is ``sum_k E[c_{p+k}] @ W_k``. Since a char has
only 262 possible embeddings, each ``E @ W_k`` is a small table (262 x n_filters) computed once;
the convolution at position p is then the sum of w table rows, which ``embedding_bag`` fetches
and adds in one fused call: w*n additions instead of 2*w*16*n multiply-adds, and no
(words x positions x width*16) unfolded copy. The tables are cached until a weight changes.

Highway and projection matmuls always see blocks of exactly ``WORD_BLOCK`` rows (the last one
padded): BLAS kernels may round a row differently depending on how many rows share the call,
and a fixed block makes a word's vector independent of which other words are encoded with it.
That is what lets a word cache return exactly what the uncached path computes.

This module runs an encoder's weights without building one: it reads them through the
:class:`CharCnnWeights` protocol, which :class:`.char_cnn.CharEncoder` satisfies, so the arrow
runs one way (``char_cnn`` imports this module, never the reverse).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Protocol

import torch
from torch import nn
from torch.nn import functional as F

from ...config import BiLMConfig
from ..derived_cache import DerivedTensors
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
    convolutions: nn.ModuleList  # of nn.Conv1d, one per filter width
    highway: Highway
    projection: nn.Linear


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

    def build() -> ConvTables:
        embedding = encoder.char_embedding.weight  # (n_chars, d)
        n_chars = embedding.shape[0]
        tables, offsets = [], []
        for conv in encoder.convolutions:
            weight = conv.weight  # (n, d, width)
            width = weight.shape[-1]
            # table[k * n_chars + c] = E[c] @ W[:, :, k]^T
            tables.append(torch.einsum("cd,ndk->kcn", embedding, weight).reshape(width * n_chars, -1).contiguous())
            offsets.append(torch.arange(width, device=embedding.device) * n_chars)
        bias = torch.cat([conv.bias for conv in encoder.convolutions])
        return ConvTables(tables, offsets, bias)

    return cache.get(params, build)


def encode_words(encoder: CharCnnWeights, char_ids: torch.Tensor) -> torch.Tensor:
    """Vectors ``(n_words, projection_dim)`` for char ids ``(n_words, 50)``, without autograd."""
    n_words = char_ids.shape[0]
    weight = encoder.projection.weight
    result = weight.new_empty(n_words, weight.shape[0])
    if n_words == 0:
        return result
    on_gpu = char_ids.is_cuda
    block_size = GPU_WORD_BLOCK if on_gpu else WORD_BLOCK
    with torch.no_grad():
        tables = None if on_gpu else conv_tables(encoder)
        for start in range(0, n_words, block_size):
            block = char_ids[start : start + block_size]
            size = block.shape[0]
            if size < block_size:
                block = torch.cat([block, block.new_zeros(block_size - size, block.shape[1])])
            if tables is None:
                result[start : start + size] = _encode_block_by_convolution(encoder, block)[:size]
            else:
                result[start : start + size] = _encode_block(encoder, tables, block)[:size]
    return result


def _encode_block_by_convolution(encoder: CharCnnWeights, char_ids: torch.Tensor) -> torch.Tensor:
    embedded = F.embedding(char_ids, encoder.char_embedding.weight).transpose(1, 2)
    with _full_precision_convolutions():
        features = torch.cat([conv(embedded).amax(dim=-1) for conv in encoder.convolutions], dim=-1)
    return _highway_and_projection(encoder, features)


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


def _encode_block(encoder: CharCnnWeights, tables: ConvTables, char_ids: torch.Tensor) -> torch.Tensor:
    n_words, n_chars_per_word = char_ids.shape
    features = tables.bias.new_empty(n_words, tables.bias.shape[0])
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
    features += tables.bias  # max(x + b) = max(x) + b: the bias goes on after pooling
    return _highway_and_projection(encoder, features)


def _highway_and_projection(encoder: CharCnnWeights, features: torch.Tensor) -> torch.Tensor:
    """Activation of the pooled features (in place), highway layers, projection."""
    features = features.relu_() if encoder.config.activation == "relu" else features.tanh_()
    dim = features.shape[1]
    for layer in encoder.highway.layers:
        projected = F.linear(features, layer.weight, layer.bias)
        transform = projected[:, :dim].relu_()
        gate = projected[:, dim:].sigmoid_()
        features = gate * transform + (1.0 - gate) * features
    return F.linear(features, encoder.projection.weight, encoder.projection.bias)
