"""``spacy_elmo.scalar_mix.v1``: ELMo's task-specific mix ``gamma * sum_j softmax(a)_j * h_j``, learned
from ``a = 0`` (the average) and ``gamma = 1``, with the options of docs/training.md#the-listener:
``layer_dropout`` from UDify, ``mix_dropout`` from the paper, ``weights_l2`` from bilm-tf."""

from __future__ import annotations

import math
from itertools import accumulate
from typing import Any, Callable, List, Optional, Sequence

from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats2d, Floats3d

from ..embedding.mix import scale, weighted_sum

LAYER_NORM_EPS = 1e-6


@registry.layers("spacy_elmo.scalar_mix.v1")
def scalar_mix(
    layer_norm: bool = False,
    layer_dropout: float = 0.0,
    fixed_layer_weights: Optional[Sequence[float]] = None,
    mix_dropout: float = 0.0,
    weights_l2: float = 0.0,
) -> Model[List[Floats3d], List[Floats2d]]:
    """With ``fixed_layer_weights`` (one per layer, used as given) only gamma is learned."""
    for name, rate in (("layer_dropout", layer_dropout), ("mix_dropout", mix_dropout)):
        if not 0.0 <= rate < 1.0:
            raise ValueError(f"{name} must be in [0, 1), not {rate}")
    if not (math.isfinite(weights_l2) and weights_l2 >= 0.0):
        raise ValueError(f"weights_l2 must be a finite number >= 0, not {weights_l2}")
    fixed = checked_weights("fixed_layer_weights", fixed_layer_weights)
    if fixed is not None and layer_dropout > 0.0:  # dropping a one-hot mix's layer zeros the features
        raise ValueError("layer_dropout needs learned layer weights: set it to 0 with fixed_layer_weights")
    return Model(
        "elmo_scalar_mix",
        forward,
        init=init,
        dims={"nL": None, "nO": None},
        params={"gamma": None} if fixed is not None else {"a": None, "gamma": None},
        # "mix_dropout", not "dropout_rate": spaCy's nlp.update sets every node's dropout_rate
        attrs={
            "layer_norm": layer_norm,
            "layer_dropout": layer_dropout,
            "fixed_layer_weights": fixed,
            "mix_dropout": float(mix_dropout),
            "weights_l2": float(weights_l2),
        },
    )


def checked_weights(setting: str, weights: Optional[Sequence[float]]) -> Optional[List[float]]:
    """``weights`` as floats, or an error naming ``setting`` unless they are finite numbers."""
    if weights is None:
        return None
    values = [float(w) for w in weights]
    if not values or not all(math.isfinite(w) for w in values):
        raise ValueError(f"{setting} must be one finite number per biLM layer (or null), not {list(weights)}")
    return values


def check_layer_count(setting: str, weights: Optional[Sequence[float]], n_layers: int) -> None:
    """One weight per layer the upstream gives: the char-CNN and each LSTM layer."""
    if weights is not None and len(weights) != n_layers:
        raise ValueError(
            f"{setting} has {len(weights)} values but the biLM has {n_layers} layers "
            f"(the char-CNN layer and {n_layers - 1} LSTM layers): give one weight per layer"
        )


def init(model: Model, X: Optional[List[Floats3d]] = None, Y: Optional[object] = None) -> None:
    if X:
        model.set_dim("nL", X[0].shape[0], force=not model.has_param("gamma"))
        model.set_dim("nO", X[0].shape[2], force=not model.has_param("gamma"))
    if model.maybe_get_dim("nL") is None:
        raise ValueError(
            "The ELMo layer mix does not know how many layers to mix: initialize the upstream "
            "elmo component first (nlp.initialize() does this) or pass sample inputs"
        )
    check_layer_count("fixed_layer_weights", model.attrs["fixed_layer_weights"], model.get_dim("nL"))
    if model.attrs["fixed_layer_weights"] is None:
        model.set_param("a", model.ops.alloc1f(model.get_dim("nL")))
    model.set_param("gamma", model.ops.asarray1f([1.0]))


def mix_softmax_weights(model: Model, mask=None):
    """The weight of each layer: softmax(a) over the layers ``mask`` keeps, or the fixed weights."""
    fixed = model.attrs["fixed_layer_weights"]
    if fixed is not None:
        return model.ops.asarray1f(fixed)
    xp: Any = model.ops.xp  # numpy or cupy
    a = model.get_param("a")
    if mask is not None:
        a = xp.where(mask, a, -xp.inf)
    exp = xp.exp(a - a.max())
    return (exp / exp.sum()).astype("float32")


def forward(model: Model, X: List[Floats3d], is_train: bool) -> tuple[List[Floats2d], Callable]:
    ops = model.ops
    xp: Any = ops.xp
    lengths = [x.shape[1] for x in X]
    n_layers, width = model.get_dim("nL"), model.get_dim("nO")
    H = xp.concatenate(X, axis=1) if X else ops.alloc3f(n_layers, 0, width)
    check_layer_count("fixed_layer_weights", model.attrs["fixed_layer_weights"], H.shape[0])
    if model.attrs["layer_norm"]:
        H, backprop_norm = _normalize(H)
    mask, keep, rate = None, None, model.attrs["mix_dropout"]
    if is_train and model.attrs["layer_dropout"] > 0.0:  # whole layers out of the softmax, one kept
        mask = xp.random.uniform(0.0, 1.0, n_layers) >= model.attrs["layer_dropout"]
        if not mask.any():
            mask[int(xp.random.randint(n_layers))] = True
    weights = mix_softmax_weights(model, mask)
    gamma = model.get_param("gamma")
    mixed = weighted_sum(H, weights, xp)
    Y = scale(mixed, gamma[0])
    if is_train and rate > 0.0:  # inverted dropout on the mixed vector
        keep = ((xp.random.uniform(0.0, 1.0, Y.shape) >= rate) / (1.0 - rate)).astype("float32")
        Y = Y * keep

    def backprop(dY: List[Floats2d]) -> List[Floats3d]:
        dY_all = xp.concatenate(dY, axis=0) if dY else ops.alloc2f(0, width)
        if keep is not None:
            dY_all = dY_all * keep
        if model.attrs["fixed_layer_weights"] is None:
            d_weights = gamma[0] * xp.tensordot(H, dY_all, axes=([1, 2], [0, 1]))
            d_a = weights * (d_weights - (weights * d_weights).sum())
            if model.attrs["weights_l2"] > 0.0:
                d_a = d_a + 2.0 * model.attrs["weights_l2"] * model.get_param("a")
            model.inc_grad("a", d_a.astype("float32"))
        model.inc_grad("gamma", (dY_all * mixed).sum().reshape(1).astype("float32"))
        # thinc types no None (new axis) index
        dH = (gamma[0] * weights[:, None, None] * dY_all[None]).astype("float32")  # type: ignore[call-overload]
        if model.attrs["layer_norm"]:
            dH = backprop_norm(dH)
        return _split(dH, lengths, axis=1)

    return _split(Y, lengths, axis=0), backprop


def _normalize(H: Floats3d) -> tuple[Floats3d, Callable[[Floats3d], Floats3d]]:
    """Per token and layer: zero mean, unit variance over the D features."""
    mean = H.mean(axis=-1, keepdims=True)  # type: ignore[attr-defined]  # thinc types no mean() of 3d arrays
    centred = H - mean
    inv_std = 1.0 / (centred.var(axis=-1, keepdims=True) + LAYER_NORM_EPS) ** 0.5
    normed = (centred * inv_std).astype("float32")

    def backprop(d_normed: Floats3d) -> Floats3d:
        d_mean = d_normed.mean(axis=-1, keepdims=True)  # type: ignore[attr-defined]  # as above
        d_proj = (d_normed * normed).mean(axis=-1, keepdims=True)
        return (inv_std * (d_normed - d_mean - normed * d_proj)).astype("float32")

    return normed, backprop


def _split(array, lengths: List[int], axis: int) -> list:
    return [
        array[end - n : end] if axis == 0 else array[:, end - n : end] for n, end in zip(lengths, accumulate(lengths))
    ]
