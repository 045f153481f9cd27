"""The one layer mix, ELMo's task-specific combination: ``gamma * sum_j w_j * h_j``.

Written once for every caller: :func:`embed` and ``spacy-elmo embed --layers mix`` (numpy), the
``elmo`` component's ``token._.elmo`` vectors and the learned ``spacy_elmo.scalar_mix.v1``
layer (numpy or cupy, passed as ``xp``). The arithmetic is the same everywhere: the weighted
sum over the layer axis in one ``tensordot``, then the scale, in float32.
"""

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
    """``gamma * sum_j w_j * layers[j]`` over the first axis of ``(L+1, n, D)`` layers.

    ``layer_weights`` are used as given (``[0, 0, 1]`` is the top layer); ``None`` averages
    all layers. Learned weights from a listener are already softmax-normalised. ``xp``: the
    array module of ``layers`` (numpy unless given).
    """
    xp = numpy if xp is None else xp
    weights = layer_weights_array(layer_weights, layers.shape[0], xp)
    return scale(weighted_sum(layers, weights, xp), gamma)
