"""One batch of word sequences through the biLM's insides, without autograd.

Per batch (sequences sorted longest first, as :mod:`.plan` makes them):

1. distinct words are indexed and turned into id rows in the model's encoding (``bilm.token_ids``);
2. layer 0 runs on every token (or, with a word cache, only on words not cached yet);
3. one gather lays the vectors out time-major for both directions, the backward one reversed
   per row, with BOS/EOS around each sequence;
4. the LSTM stacks run (fused in-place loop by default), up to each row's last token;
5. two gathers per layer pick each token's forward and backward vectors: one device tensor
   ``(L+1, n_tokens, 2P)``, the sequences' tokens one after the other.

:func:`to_host` brings such a tensor to the CPU as float32 (from a GPU through a pinned buffer)
for callers that want numpy arrays; the others keep it on the device.
"""

from __future__ import annotations

import threading
from typing import Optional, Sequence

import numpy
import torch
from torch.nn import functional as F

from ..nn.bilm import BiLM
from ..nn.lstm import active_rows, run_time_major
from ..nn.precision import DEFAULT_PRECISION
from ..nn.words.word_batch import WordBatch, index_words
from .word_cache import WordVectorCache

# Rows of the layer-0 table built per batch: 0 is the zero vector for padding, then BOS, EOS.
_PAD_ROW, _BOS_ROW, _EOS_ROW = 0, 1, 2


def run_batch(
    bilm: BiLM,
    sequences: Sequence[Sequence[str]],
    word_cache: Optional[WordVectorCache] = None,
    precision: str = DEFAULT_PRECISION,
) -> torch.Tensor:
    """Every layer of every token, ``(L+1, n_tokens, 2P)`` in the model's dtype and device.

    ``sequences`` must be non-empty and sorted by decreasing length (ties in any order); the
    tokens of ``sequences[0]`` come first in the result, then those of ``sequences[1]``, ...
    ``precision``: of the LSTMs' products (:mod:`spacy_elmo.nn.precision`; the caller has
    checked the device's support). Call it under ``torch.inference_mode()`` (or ``no_grad``).
    """
    words = index_words(sequences, reserved=bilm.encoding.boundaries)
    if not len(sequences) or (words.lengths == 0).any() or (numpy.diff(words.lengths) > 0).any():
        raise ValueError("run_batch needs non-empty sequences sorted by decreasing length")
    table, token_rows = layer0_table(bilm, words, word_cache, precision)
    positions = words.lengths + 2
    steps, batch = int(positions.max()), len(sequences)
    forward_rows = _forward_rows(words.lengths, token_rows, steps)
    backward_rows = _reverse_rows(forward_rows, positions)
    rows = torch.from_numpy(numpy.stack([forward_rows.T, backward_rows.T])).to(table.device)
    inputs = F.embedding(rows, table)  # (2, time, batch, P)
    # Each row's last step (EOS read forward, BOS read backward) only feeds that position's own
    # outputs, which no token uses: the LSTMs stop one step earlier (about 1/(n+2) less work).
    layers = run_time_major(
        [bilm.forward_lstm, bilm.backward_lstm],
        inputs[:, : steps - 1],
        active_rows((positions - 1).tolist(), steps - 1),
        precision=precision,
        **bilm.lstm_options(),
    )
    return _gather_tokens([inputs] + layers, words.lengths, positions, batch)


def to_host(values: torch.Tensor) -> numpy.ndarray:
    """``values`` as a float32 numpy array. From a GPU the copy goes through a pinned buffer
    kept per thread and device (measured 1.2 GB/s into pageable memory on an H200 host): the
    result is that buffer, valid until this thread's next call, so callers copy out of it."""
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


def layer0_table(
    bilm: BiLM, words: WordBatch, word_cache: Optional[WordVectorCache] = None, precision: str = DEFAULT_PRECISION
) -> tuple[torch.Tensor, numpy.ndarray]:
    """A table of layer-0 vectors (row 0 zero, 1 BOS, 2 EOS) and each token's row in it.

    ``words`` must reserve words 0 and 1 for BOS and EOS. Without a word cache every token
    gets its own row (the char-CNN runs once per token); with one, each distinct word does
    (the cache holds one precision's vectors: another precision empties it).
    """
    if word_cache is None:
        char_ids = bilm.token_ids(words.words)
        wanted = numpy.concatenate([numpy.arange(2), words.token_words])
        vectors = bilm.encode_char_ids(char_ids[wanted], precision)
        token_rows = 3 + numpy.arange(words.n_tokens, dtype=numpy.int64)
    else:
        version = bilm.char_encoder_version()
        if version is not None and precision != DEFAULT_PRECISION:
            version = (version, precision)  # float32's key as it always was
        vectors = word_cache.vectors(
            words.words,
            words.n_tokens + 2 * len(words.lengths),  # BOS and EOS are served too
            version,
            lambda missing: bilm.encode_char_ids(bilm.token_ids(missing), precision),
        )
        token_rows = 1 + words.token_words
    table = torch.cat([vectors.new_zeros(1, vectors.shape[1]), vectors])
    return table, token_rows


def _forward_rows(lengths: numpy.ndarray, token_rows: numpy.ndarray, steps: int) -> numpy.ndarray:
    """``(batch, time)`` table rows read left to right: BOS, the tokens, EOS, then padding."""
    batch = lengths.shape[0]
    starts = numpy.cumsum(lengths) - lengths
    t = numpy.arange(steps)[None, :]
    rows = numpy.full((batch, steps), _PAD_ROW, dtype=numpy.int64)
    inside = (t >= 1) & (t <= lengths[:, None])
    rows[inside] = token_rows[(starts[:, None] + t - 1)[inside]]
    rows[:, 0] = _BOS_ROW
    rows[numpy.arange(batch), lengths + 1] = _EOS_ROW
    return rows


def _reverse_rows(rows: numpy.ndarray, positions: numpy.ndarray) -> numpy.ndarray:
    """Each row's first ``positions`` entries reversed; the padding stays padding."""
    t = numpy.arange(rows.shape[1])[None, :]
    source = positions[:, None] - 1 - t
    gathered = numpy.take_along_axis(rows, numpy.maximum(source, 0), axis=1)
    return numpy.where(source >= 0, gathered, _PAD_ROW)


def _gather_tokens(
    layers: list[torch.Tensor], lengths: numpy.ndarray, positions: numpy.ndarray, batch: int
) -> torch.Tensor:
    """``(L+1, n_tokens, 2P)``: each token's forward and backward vectors, sentence by sentence.

    Every tensor in ``layers`` is time-major ``(2, time, batch, P)`` with the backward direction
    reversed per row; for layer 0 (the token vectors) both halves hold the same vector.
    """
    n_tokens = int(lengths.sum())
    sentence = numpy.repeat(numpy.arange(batch), lengths)
    position = numpy.arange(n_tokens) - numpy.repeat(numpy.cumsum(lengths) - lengths, lengths) + 1
    device = layers[0].device
    forward_index = torch.from_numpy(position * batch + sentence).to(device)
    backward_index = torch.from_numpy((positions[sentence] - 1 - position) * batch + sentence).to(device)
    dim = layers[0].shape[-1]
    result = layers[0].new_empty(len(layers), n_tokens, 2 * dim)
    for j, layer in enumerate(layers):
        flat = layer.reshape(2, -1, dim)
        result[j, :, :dim] = flat[0].index_select(0, forward_index)
        result[j, :, dim:] = flat[1].index_select(0, backward_index)
    return result
