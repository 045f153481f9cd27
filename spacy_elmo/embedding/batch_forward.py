"""One planned batch of word sequences through :meth:`BiLM.contextualize`, without autograd: the
embedder's part (the batch's id rows, layer 0 from the word cache, the tokens' layers one sentence
after the other) and the check that every prediction path gets, that the layers are finite.
:func:`to_host` brings them to the CPU as float32 numpy arrays.
"""

from __future__ import annotations

import threading
from typing import Optional, Sequence

import numpy
import torch

from ..nn.bilm import BiLM
from ..nn.precision import DEFAULT_PRECISION
from ..nn.words.word_batch import encode_padded
from .word_cache import WordVectorCache


def run_batch(
    bilm: BiLM,
    sequences: Sequence[Sequence[str]],
    word_cache: Optional[WordVectorCache] = None,
    precision: str = DEFAULT_PRECISION,
) -> torch.Tensor:
    """Every layer of every token, ``(L+1, n_tokens, 2P)`` in the model's dtype and device: the
    tokens of ``sequences[0]`` first, then those of ``sequences[1]``, ...

    ``precision`` is one that runs on the model's device (the embedder resolved it); the cache
    holds that precision's vectors. Call it under ``torch.inference_mode()`` (or ``no_grad``).
    Layers that are not finite are a ValueError naming where the weights were read from.
    """
    char_ids, lengths = encode_padded(sequences, encoding=bilm.encoding)
    ids = torch.from_numpy(char_ids).to(bilm.device)
    n_tokens = int(lengths.sum())  # sentence boundaries included
    version = bilm.char_encoder_version()
    version = None if version is None else (version, precision)

    def cached_vectors(unique: torch.Tensor) -> torch.Tensor:
        assert word_cache is not None
        keys = [row.tobytes() for row in unique.cpu().numpy()]
        return word_cache.vectors(
            keys, n_tokens, version, lambda positions: bilm.encode_words(unique[positions], precision)
        )

    states = bilm.contextualize(
        ids,
        torch.from_numpy(lengths),
        precision=precision,
        final_boundary=False,
        word_vectors=None if word_cache is None else cached_vectors,
    )
    steps = numpy.arange(char_ids.shape[1])[None, :]
    tokens = torch.from_numpy((steps >= 1) & (steps < lengths[:, None] - 1)).to(ids.device)
    layers = states.layers()[:, tokens]
    if not bool(torch.isfinite(layers).all()):  # finite weights can still overflow (a diverged run's)
        weights = f"the weights read from {bilm.source}" if bilm.source else "this biLM's weights"
        raise ValueError(
            f"The biLM gives NaN or infinite layers for a batch of {len(sequences)} sentences (precision "
            f"{precision}): {weights} are finite but overflow, as a diverged training run's can: use other weights"
        )
    return layers


def to_host(values: torch.Tensor) -> numpy.ndarray:
    """``values`` as a float32 numpy array. From a GPU the copy goes through a pinned buffer kept
    per thread and device: the result is that buffer, valid until this thread's next call, so
    callers copy out of it."""
    values = values.to(torch.float32)
    if not values.is_cuda:
        return values.numpy()
    buffers = _PINNED.__dict__.setdefault("buffers", {})
    buffer = buffers.get(values.device)
    if buffer is None or buffer.numel() < values.numel():
        buffer = torch.empty(values.numel(), dtype=torch.float32, pin_memory=True)
        buffers[values.device] = buffer
    host = buffer[: values.numel()].view(values.shape)
    host.copy_(values, non_blocking=True)
    torch.cuda.current_stream(values.device).synchronize()
    return host.numpy()


_PINNED = threading.local()
