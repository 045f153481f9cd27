"""The context-independent word encoder: characters -> one vector per word (ELMo's layer 0)."""
from __future__ import annotations

import torch
from torch import nn

from .config import BiLMConfig
from .highway import Highway


class CharEncoder(nn.Module):
    """Char embedding, convolutions of several widths max-pooled over the word, highway, projection.

    Input: char ids ``(..., 50)`` as made by :mod:`spacy_elmo.nn.char_ids`.
    Output: ``(..., projection_dim)``. A word's vector depends only on its own characters.
    """

    def __init__(self, config: BiLMConfig) -> None:
        super().__init__()
        self.config = config
        self.char_embedding = nn.Embedding(config.n_characters, config.char_embed_dim, padding_idx=0)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(config.char_embed_dim, n_filters, kernel_size=width)
            for width, n_filters in config.filters
        )
        self.activation = torch.relu if config.activation == "relu" else torch.tanh
        self.highway = Highway(config.n_filters, config.n_highway)
        self.projection = nn.Linear(config.n_filters, config.projection_dim)

    def forward(self, char_ids: torch.Tensor) -> torch.Tensor:
        leading = char_ids.shape[:-1]
        flat = char_ids.reshape(-1, char_ids.shape[-1])
        # (words, dim, chars): channels first for Conv1d.
        embedded = self.char_embedding(flat).transpose(1, 2)
        pooled = [conv(embedded).amax(dim=-1) for conv in self.convolutions]
        features = self.activation(torch.cat(pooled, dim=-1))
        features = self.highway(features)
        return self.projection(features).reshape(*leading, -1)
