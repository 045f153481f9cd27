"""Regression losses of predicted vectors against target vectors, per token, with token weights:
the losses of ``spacy_elmo.PretrainElmo.v1``.

A row of ``prediction`` and ``target`` holds ``n_groups`` vectors of equal width (one per biLM
layer, or one); each pair gets its own distance and a token's loss is their mean:

- ``"cosine"``: ``1 - cos(p, t)``, blind to the vectors' lengths; a zero target (whitespace)
  contributes nothing;
- ``"l2"``: the mean squared difference per value, ``||p - t||^2 / D``;
- ``"cosine+l2"``: the two added: the direction first, the length too.

The loss returned is the sum over tokens of weight x token loss (what ``spacy pretrain`` adds up
and logs, as for its own objectives); the gradient is that of the weighted mean, so a batch's
step does not grow with its number of words. Works on numpy and cupy arrays (``xp``).
"""

from __future__ import annotations

from typing import Any, Tuple

LOSSES = ("cosine", "l2", "cosine+l2")
EPSILON = 1e-8  # below this length a prediction counts as zero for the cosine


def check_loss(name: str, architecture: str) -> None:
    """Raise a ValueError naming the ``loss`` setting of ``architecture`` for an unknown loss."""
    if name not in LOSSES:
        raise ValueError(f"{architecture}: loss must be one of {', '.join(map(repr, LOSSES))}, not {name!r}")


def vector_loss(name: str, prediction: Any, target: Any, weights: Any, n_groups: int, xp: Any) -> Tuple[float, Any]:
    """``(loss, d_prediction)`` for ``(N, G*D)`` predictions and targets and ``(N,)`` weights."""
    check_loss(name, "vector_loss")
    n_rows, width = prediction.shape
    if target.shape != prediction.shape or weights.shape != (n_rows,) or width % n_groups:
        raise ValueError(
            f"vector_loss: prediction {prediction.shape}, target {target.shape} and weights "
            f"{weights.shape} do not fit {n_groups} groups"
        )
    p = prediction.reshape(n_rows, n_groups, width // n_groups)
    t = target.reshape(n_rows, n_groups, width // n_groups)
    loss = xp.zeros((n_rows, n_groups), dtype="float32")
    grad = xp.zeros(p.shape, dtype="float32")
    if name in ("cosine", "cosine+l2"):
        cos_loss, cos_grad = _cosine(p, t, xp)
        loss += cos_loss
        grad += cos_grad
    if name in ("l2", "cosine+l2"):
        diff = p - t
        loss += (diff**2).mean(axis=-1)
        grad += 2.0 * diff / p.shape[-1]
    token_loss = loss.mean(axis=1)
    scale = weights / max(float(weights.sum()), 1.0) / n_groups
    d_prediction = (grad * scale[:, None, None]).reshape(n_rows, width).astype("float32")
    return float((weights * token_loss).sum()), d_prediction


def _cosine(p: Any, t: Any, xp: Any) -> Tuple[Any, Any]:
    """``1 - cos`` per vector pair and its gradient by ``p``; zero for zero targets."""
    p_norm = xp.maximum(xp.sqrt((p**2).sum(axis=-1)), EPSILON)
    t_norm = xp.sqrt((t**2).sum(axis=-1))
    valid = t_norm > 0
    t_norm = xp.where(valid, t_norm, 1.0)
    cos = (p * t).sum(axis=-1) / (p_norm * t_norm)
    grad = -(t / (p_norm * t_norm)[..., None] - cos[..., None] * p / (p_norm**2)[..., None])
    return xp.where(valid, 1.0 - cos, 0.0), grad * valid[..., None]
