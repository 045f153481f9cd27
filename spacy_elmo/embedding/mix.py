"""The one layer mix, ELMo's task-specific combination ``gamma * sum_j w_j * h_j``, for every caller
(numpy or cupy as ``xp``): the weighted sum over the layer axis in one ``tensordot``, then the scale."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy


def layer_weights_array(layer_weights: Optional[Sequence[float]], n_layers: int, xp: Any = numpy) -> Any:
    """``layer_weights`` as a float32 array (checked: one per layer); ``None``: the average."""
    if layer_weights is None:
        return xp.full(n_layers, 1.0 / n_layers, dtype=numpy.float32)
    weights = xp.asarray(layer_weights, dtype=numpy.float32)
    if weights.shape != (n_layers,):
        raise ValueError(f"layer_weights has {weights.size} values but the biLM has {n_layers} layers")
    return weights


def weighted_sum(layers: Any, weights: Any, xp: Any = numpy) -> Any:
    """``sum_j weights[j] * layers[j]`` over the first axis."""
    return xp.tensordot(weights, layers, axes=(0, 0))


def scale(summed: Any, gamma: Any) -> Any:
    """``gamma * summed`` in float32 (``gamma``: a number or a one-element array's item)."""
    return (gamma * summed).astype(numpy.float32, copy=False)


def mix_layers(layers: Any, layer_weights: Optional[Sequence[float]] = None, gamma: float = 1.0, xp: Any = None) -> Any:
    """``gamma * sum_j w_j * layers[j]`` over the first axis of ``(L+1, n, D)`` layers; ``layer_weights``
    as given (``[0, 0, 1]``: the top layer), ``None`` averages; ``xp``: the array module of ``layers``."""
    xp = numpy if xp is None else xp
    weights = layer_weights_array(layer_weights, layers.shape[0], xp)
    return scale(weighted_sum(layers, weights, xp), gamma)
