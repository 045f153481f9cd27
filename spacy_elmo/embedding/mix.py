"""Mixing a biLM's layers into one vector per token (ELMo's task-specific combination)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy

from .nn.bilm import BiLM


def mix_layers(
    layers: numpy.ndarray, layer_weights: Optional[Sequence[float]] = None, gamma: float = 1.0
) -> numpy.ndarray:
    """``gamma * sum_j w_j * layers[j]`` over the first axis.

    ``layer_weights`` are used as given (``[0, 0, 1]`` is the top layer); ``None`` averages
    all layers. Learned weights from a listener are already softmax-normalised.
    """
    n_layers = layers.shape[0]
    if layer_weights is None:
        weights = numpy.full(n_layers, 1.0 / n_layers, dtype=numpy.float32)
    else:
        weights = numpy.asarray(layer_weights, dtype=numpy.float32)
        if weights.shape != (n_layers,):
            raise ValueError(f"layer_weights has {weights.size} values but the model has {n_layers} layers")
    return (gamma * numpy.tensordot(weights, layers, axes=(0, 0))).astype(numpy.float32, copy=False)


def embed(
    sentences: Sequence[Sequence[str]],
    bilm: BiLM,
    layer_weights: Optional[Sequence[float]] = None,
    gamma: float = 1.0,
    batch_size: int = 64,
) -> numpy.ndarray:
    """Mixed ELMo vectors ``(batch, max_len, dim)``, zero-padded, like TF-Hub's ELMo signature."""
    per_sentence = bilm.embed_layers(sentences, batch_size=batch_size)
    max_len = max((len(s) for s in sentences), default=0)
    out = numpy.zeros((len(sentences), max_len, bilm.config.output_dim), dtype=numpy.float32)
    for row, layers in enumerate(per_sentence):
        out[row, : layers.shape[1]] = mix_layers(layers, layer_weights, gamma)
    return out
