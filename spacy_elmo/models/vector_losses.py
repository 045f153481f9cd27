"""The losses of ``spacy_elmo.PretrainElmo.v1``: predicted against target vectors, per token.

A row holds ``n_groups`` vectors (one per biLM layer, or one), each with its own distance,
averaged per token: ``"cosine"`` (``1 - cos``; a zero target counts nothing), ``"l2"`` (mean
squared difference) or ``"cosine+l2"``. The loss is the weighted sum over tokens (what
``spacy pretrain`` logs); the gradient is the weighted mean's, so a step does not grow with the
batch. numpy or cupy (``xp``).
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
