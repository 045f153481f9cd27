"""The context-independent word encoder: characters -> one vector per word (ELMo's layer 0)."""

from __future__ import annotations

from typing import Optional, Sequence, cast

import torch
from torch import nn

from ...config import BiLMConfig
from ..precision import DEFAULT_PRECISION
from . import char_cnn_tables
from .alphabet import split_ids, used_chars, uses_full_table
from .char_cnn_training import pooled_convolutions
from .highway import Highway

# Training on a CPU: convolutions as table lookups with a sparse backward (:mod:`.char_cnn_training`,
# several times faster). False runs nn.Conv1d under autograd (the yardstick; GPUs always do).
USE_TABLE_TRAINING = True


class CharEncoder(nn.Module):
    """Char embedding, convolutions of several widths max-pooled over the word, highway, projection.

    Input: id rows ``(..., ids_per_token)`` as the model's encoding makes them
    (:mod:`spacy_elmo.nn.words.char_ids`: 50 byte ids; :mod:`.code_points`: code-point ids and,
    with a word table, the word's id in the last column, whose vector goes in front of the
    char features before the projection, as in ELMoForManyLangs).
    Output: ``(..., projection_dim)``. A word's vector depends only on its own ids.
    Without autograd (and outside autocast) the work goes to :mod:`.char_cnn_tables`,
    which computes the same function several times faster; with autograd on a CPU, the
    convolutions and their max-pooling go to :mod:`.char_cnn_training` (the same function,
    a sparse backward pass).
    """

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

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        leading = ids.shape[:-1]
        flat = ids.reshape(-1, ids.shape[-1])
        if self.uses_table_path():
            return self._encode_padded(flat).reshape(*leading, -1)
        chars, words = split_ids(flat, self.config.max_characters_per_token)
        if USE_TABLE_TRAINING and flat.device.type == "cpu" and not torch.is_autocast_enabled("cpu"):
            embedding = self.char_embedding.weight
            if not uses_full_table(self.config.n_characters, self.config.filters):
                used, chars = used_chars(chars)  # the padding row stays row 0
                embedding = embedding[used]
            pooled = pooled_convolutions(
                chars,
                embedding,
                [conv.weight for conv in self.convolutions],
                cast(list[torch.Tensor], [conv.bias for conv in self.convolutions]),  # built with biases
                self.char_embedding.padding_idx,
            )
        else:
            # (words, dim, chars): channels first for Conv1d.
            embedded = self.char_embedding(chars).transpose(1, 2)
            pooled = torch.cat([conv(embedded).amax(dim=-1) for conv in self.convolutions], dim=-1)
        features = self.activation(pooled)
        features = self.highway(features)
        if words is not None and self.word_embedding is not None:
            features = torch.cat([self.word_embedding(words), features], dim=-1)
        return self.projection(features).reshape(*leading, -1)

    def encode_words(self, ids: torch.Tensor, precision: str = DEFAULT_PRECISION) -> torch.Tensor:
        """Vectors ``(n_words, projection_dim)`` for ``(n_words, ids_per_token)`` ids, without autograd.

        A word's vector is bit-for-bit the same whichever words it is encoded with (in float32;
        ``precision`` runs the highway and projection products in bfloat16 or int8).
        """
        return char_cnn_tables.encode_words(self, ids, precision)

    def uses_table_path(self) -> bool:
        """True when no gradient is needed and autocast is off: the table-lookup path applies."""
        weight = self.projection.weight
        if torch.is_grad_enabled() and any(p.requires_grad for p in self.parameters()):
            return False
        return not torch.is_autocast_enabled(weight.device.type)

    def _encode_padded(self, flat: torch.Tensor) -> torch.Tensor:
        """Encode real tokens only; padding tokens (all-zero ids) share one computed vector."""
        real = flat[:, 0] != 0
        if bool(real.all()):
            return self.encode_words(flat)
        vectors = self.encode_words(torch.cat([flat[real], flat.new_zeros(1, flat.shape[1])]))
        result = vectors[-1:].expand(flat.shape[0], -1).clone()
        result[real] = vectors[:-1]
        return result
