"""The bidirectional language model: a shared char encoder and two separate LSTM stacks."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

import numpy
import torch
from torch import nn

from .batching import length_sorted_batches
from .char_cnn import CharEncoder
from .char_ids import encode_sentences
from .config import BiLMConfig
from .lstm import LstmStack, run_stacks

PathLike = Union[str, Path]


@dataclass
class BiLMStates:
    """Everything the biLM computes for a batch framed by BOS/EOS (pretraining needs it all).

    ``token_vectors`` is ``(batch, time, P)``; ``forward``/``backward`` hold one
    ``(batch, time, P)`` tensor per LSTM layer, in the original left-to-right order.
    ``lengths`` counts BOS and EOS.
    """

    token_vectors: torch.Tensor
    forward: list[torch.Tensor]
    backward: list[torch.Tensor]
    lengths: torch.Tensor


def reverse_padded(values: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each row's first ``length`` steps along dim 1, leaving the padding in place."""
    steps = values.shape[1]
    positions = torch.arange(steps, device=values.device)[None, :]
    lengths = lengths.to(values.device)[:, None]
    index = torch.where(positions < lengths, lengths - 1 - positions, positions)
    index = index.reshape(*index.shape, *([1] * (values.dim() - 2))).expand_as(values)
    return values.gather(1, index)


class BiLM(nn.Module):
    """ELMo's biLM. The forward stack at position k sees only tokens <= k, the backward stack
    only tokens >= k; they share the char encoder and the (optional) output softmax.
    """

    def __init__(self, config: BiLMConfig, vocab: Optional[Sequence[str]] = None) -> None:
        super().__init__()
        if vocab is not None and config.vocab_size not in (0, len(vocab)):
            raise ValueError(f"vocab has {len(vocab)} words but config.vocab_size is {config.vocab_size}")
        if vocab is not None and not config.vocab_size:
            config = config.replace(vocab_size=len(vocab))
        self.config = config
        self.vocab: Optional[list[str]] = list(vocab) if vocab is not None else None
        self.char_encoder = CharEncoder(config)
        stack_args = dict(
            input_dim=config.projection_dim,
            cell_dim=config.lstm_dim,
            projection_dim=config.projection_dim,
            n_layers=config.n_layers,
            cell_clip=config.cell_clip,
            proj_clip=config.proj_clip,
            use_skip_connections=config.use_skip_connections,
            forget_bias=config.forget_bias,
        )
        self.forward_lstm = LstmStack(**stack_args)
        self.backward_lstm = LstmStack(**stack_args)
        self.softmax: Optional[nn.Linear] = (
            nn.Linear(config.projection_dim, config.vocab_size) if config.vocab_size else None
        )

    # ----------------------------------------------------------------- computation
    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def contextualize(self, char_ids: torch.Tensor, lengths: torch.Tensor) -> BiLMStates:
        """Run the model on ids ``(batch, time, 50)`` that already include BOS and EOS."""
        lengths = lengths.to(torch.long).cpu()
        order = torch.argsort(lengths, descending=True, stable=True)
        restore = torch.argsort(order)
        sorted_ids = char_ids[order.to(char_ids.device)]
        sorted_lengths = lengths[order]

        token_vectors = self.char_encoder(sorted_ids)
        both = torch.stack([token_vectors, reverse_padded(token_vectors, sorted_lengths)])
        layers = run_stacks([self.forward_lstm, self.backward_lstm], both, sorted_lengths)
        restore_dev = restore.to(char_ids.device)
        mask = (torch.arange(char_ids.shape[1])[None, :] < sorted_lengths[:, None]).to(token_vectors)
        token_vectors = (token_vectors * mask[..., None].to(token_vectors.device))[restore_dev]
        forward = [layer[0][restore_dev] for layer in layers]
        backward = [reverse_padded(layer[1], sorted_lengths)[restore_dev] for layer in layers]
        return BiLMStates(token_vectors, forward, backward, lengths)

    def forward(self, char_ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """All layers ``(L+1, batch, time-2, 2P)`` for ids framed by BOS/EOS, boundaries dropped.

        Layer 0 is ``[x; x]``, layer j is ``[forward_j; backward_j]``; padding is zero.
        """
        states = self.contextualize(char_ids, lengths)
        layers = [torch.cat([states.token_vectors, states.token_vectors], dim=-1)]
        layers += [torch.cat(pair, dim=-1) for pair in zip(states.forward, states.backward)]
        stacked = torch.stack(layers)
        return _drop_boundaries(stacked, states.lengths)

    def embed_layers(
        self,
        sentences: Sequence[Sequence[str]],
        batch_size: int = 64,
        max_batch_tokens: Optional[int] = None,
    ) -> list[numpy.ndarray]:
        """One float32 array ``(L+1, n_tokens, 2P)`` per sentence, in input order.

        Sentences are batched by length (at most ``batch_size`` sentences and, if given,
        ``max_batch_tokens`` padded tokens per batch). A sentence with no tokens gets an
        ``(L+1, 0, 2P)`` array.
        """
        results: list[Optional[numpy.ndarray]] = [None] * len(sentences)
        lengths = [len(s) for s in sentences]
        empty_shape = (self.config.n_output_layers, 0, self.config.output_dim)
        for index, n in enumerate(lengths):
            if n == 0:
                results[index] = numpy.zeros(empty_shape, dtype=numpy.float32)
        device = self.device
        with torch.inference_mode():
            for batch in length_sorted_batches(lengths, batch_size, max_batch_tokens, skip_empty=True):
                for index, array in zip(batch, self._embed_batch([sentences[i] for i in batch], device)):
                    results[index] = array
        return results  # type: ignore[return-value]

    def _embed_batch(self, sentences: Sequence[Sequence[str]], device: torch.device) -> Iterable[numpy.ndarray]:
        ids, lengths = encode_sentences(sentences, add_boundaries=True)
        layers = self(torch.from_numpy(ids).to(device), torch.from_numpy(lengths))
        layers = layers.to(dtype=torch.float32, device="cpu").numpy()
        for row, sentence in enumerate(sentences):
            yield numpy.ascontiguousarray(layers[:, row, : len(sentence)])

    # ----------------------------------------------------------------- persistence
    @classmethod
    def from_allennlp(cls, options_file: PathLike, weight_file: PathLike) -> "BiLM":
        """Load bilm-tf / AllenNLP ``options.json`` + weights ``.hdf5``."""
        from ..formats.allennlp import load_allennlp

        return load_allennlp(options_file, weight_file)

    def to_allennlp(self, options_file: PathLike, weight_file: PathLike) -> None:
        """Write ``options.json`` + ``.hdf5`` in bilm-tf's layout (AllenNLP can read them)."""
        from ..formats.allennlp import save_allennlp

        save_allennlp(self, options_file, weight_file)

    def to_disk(self, path: PathLike) -> None:
        """Write our own model directory (config, weights, vocabulary)."""
        from ..formats.native import save_model_dir

        save_model_dir(self, path)

    @classmethod
    def from_disk(cls, path: PathLike) -> "BiLM":
        from ..formats.native import load_model_dir

        return load_model_dir(path)


def _drop_boundaries(layers: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Remove BOS (position 0) and each row's EOS (position length-1); zero what is left over."""
    inner = layers[:, :, 1:-1] if layers.shape[2] >= 2 else layers[:, :, :0]
    steps = inner.shape[2]
    keep = torch.arange(steps)[None, :] < (lengths - 2)[:, None]
    return inner * keep.to(device=inner.device, dtype=inner.dtype)[None, :, :, None]
