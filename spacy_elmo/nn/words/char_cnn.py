"""The context-independent word encoder: characters -> one vector per word (ELMo's layer 0)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Optional, Sequence, cast

import torch
from torch import nn

from ...config import BiLMConfig
from ..derived_cache import DerivedTensors
from ..precision import DEFAULT_PRECISION
from ..reduced_products import ReducedWeight
from .char_tables import conv_tables, pooled_features, split_ids, used_chars, uses_full_table
from .highway import Highway

# Words per convolution call on a GPU without autograd: bounds the (words, filters, positions) maps.
CONV_WORDS = 1024

Linear = Callable[[torch.Tensor, nn.Linear], torch.Tensor]


class CharEncoder(nn.Module):
    """Char embedding, convolutions of several widths max-pooled over the word, highway, projection.

    Input: id rows ``(..., ids_per_token)`` in the model's encoding (a code-point model's word id,
    if any, in the last column: its vector goes in front of the char features, as in
    ELMoForManyLangs). Output: ``(..., projection_dim)``; a word's vector depends on its ids only.
    On CPUs the convolutions run as table lookups (:mod:`.char_tables`), elsewhere as ``nn.Conv1d``."""

    def __init__(self, config: BiLMConfig) -> None:
        super().__init__()
        self.config = config
        self.char_embedding = nn.Embedding(config.n_characters, config.char_embed_dim, padding_idx=0)
        # nn.ModuleList is not generic: the cast tells the type checker what its items are
        self.convolutions = cast(
            Sequence[nn.Conv1d],
            nn.ModuleList(
                nn.Conv1d(config.char_embed_dim, n_filters, kernel_size=width) for width, n_filters in config.filters
            ),
        )
        self.activation = torch.relu if config.activation == "relu" else torch.tanh
        self.highway = Highway(config.n_filters, config.n_highway)
        self.word_embedding: Optional[nn.Embedding] = (
            nn.Embedding(config.n_words, config.word_dim, padding_idx=0) if config.word_dim else None
        )
        self.projection = nn.Linear(config.word_dim + config.n_filters, config.projection_dim)
        self._tables = DerivedTensors()
        self._reduced: dict[tuple[int, str], DerivedTensors] = {}

    def forward(
        self, ids: torch.Tensor, precision: str = DEFAULT_PRECISION, use_tables: Optional[bool] = None
    ) -> torch.Tensor:
        """``precision`` (one that runs here): bfloat16 or int8 highway and projection products in
        inference on a CPU; on a GPU, or with gradients, bfloat16 or float16 by autocast."""
        leading = ids.shape[:-1]
        chars, words = split_ids(ids.reshape(-1, ids.shape[-1]), self.config.max_characters_per_token)
        if use_tables is None:
            use_tables = chars.device.type == "cpu"
        training = torch.is_grad_enabled() and self.projection.weight.requires_grad
        if precision != DEFAULT_PRECISION and (chars.is_cuda or training):
            dtype = torch.bfloat16 if precision == "bfloat16" else torch.float16
            with torch.autocast(chars.device.type, dtype=dtype):
                return self.forward(ids, use_tables=use_tables).float()
        linear = None if precision == DEFAULT_PRECISION else self._reduced_linear(precision)
        pooled = self._pooled_by_tables(chars) if use_tables else self._pooled_by_convolution(chars)
        features = self.highway(self.activation(pooled), linear)
        if words is not None and self.word_embedding is not None:
            features = torch.cat([self.word_embedding(words).to(features.dtype), features], dim=-1)
        projected = self.projection(features) if linear is None else linear(features, self.projection)
        return projected.reshape(*leading, -1)

    def _pooled_by_convolution(self, chars: torch.Tensor) -> torch.Tensor:
        step = CONV_WORDS if not torch.is_grad_enabled() else max(1, chars.shape[0])
        pieces = []
        for start in range(0, chars.shape[0], step):
            embedded = self.char_embedding(chars[start : start + step]).transpose(1, 2)  # channels first
            with _without_tf32():
                pieces.append(torch.cat([conv(embedded).amax(dim=-1) for conv in self.convolutions], dim=-1))
        if not pieces:
            return self.projection.weight.new_zeros(0, self.config.n_filters)
        return torch.cat(pieces)

    def _pooled_by_tables(self, chars: torch.Tensor) -> torch.Tensor:
        weights = [conv.weight for conv in self.convolutions]
        biases = [cast(torch.Tensor, conv.bias) for conv in self.convolutions]  # built with biases
        embedding = self.char_embedding.weight
        grad = torch.is_grad_enabled() and any(p.requires_grad for p in [embedding, *weights])
        if not uses_full_table(self.config.n_characters, self.config.filters):
            used, chars = used_chars(chars)
            return pooled_features(
                chars, conv_tables(self._frozen_padding(embedding)[used], weights), len(used), biases
            )
        if grad:
            tables = conv_tables(self._frozen_padding(embedding), weights)
        else:
            tables = self._tables.get([embedding, *weights], lambda: conv_tables(embedding, weights))
        return pooled_features(chars, tables, embedding.shape[0], biases)

    def _frozen_padding(self, embedding: torch.Tensor) -> torch.Tensor:
        """The embedding with no gradient into the padding row, as ``nn.Embedding(padding_idx=0)``."""
        if not embedding.requires_grad:
            return embedding
        frozen = torch.zeros(embedding.shape[0], 1, dtype=torch.bool, device=embedding.device)
        frozen[0] = True
        return torch.where(frozen, embedding.detach(), embedding)

    def _reduced_linear(self, precision: str) -> Linear:
        """``F.linear`` with the product in ``precision`` by a :class:`ReducedWeight` built once
        per weight version; inference only."""

        def linear(x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
            cache = self._reduced.setdefault((id(layer), precision), DerivedTensors())
            weight = cache.get([layer.weight], lambda: ReducedWeight(layer.weight, precision))
            out = x.new_empty(x.shape[0], layer.out_features, dtype=torch.float32)
            return weight.product_into(x.float(), out, layer.bias.float())

        return linear


@contextmanager
def _without_tf32() -> Iterator[None]:
    """cuDNN runs float32 convolutions in TF32 (10-bit mantissas) by default on recent GPUs;
    float32 must mean float32 (reduced precision is the ``precision`` setting's, by autocast)."""
    cudnn = torch.backends.cudnn
    previous = cudnn.allow_tf32
    cudnn.allow_tf32 = False
    try:
        yield
    finally:
        cudnn.allow_tf32 = previous
