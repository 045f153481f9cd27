"""The distillation losses: their values, their gradients (against finite differences), token
weights, layer groups and the one error for an unknown name."""

from __future__ import annotations

import numpy
import pytest

from spacy_elmo.models.tok2vec_objectives import LOSSES, vector_loss


def loss_value(name, prediction, target, weights, groups):
    return vector_loss(name, prediction, target, weights, groups, numpy)[0]


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("groups", [1, 3])
def test_gradient_matches_finite_differences(name, groups):
    rng = numpy.random.default_rng(0)
    prediction = rng.normal(size=(4, 6 * groups)).astype("float32")
    target = rng.normal(size=(4, 6 * groups)).astype("float32")
    weights = numpy.asarray([1, 0, 1, 1], dtype="float32")
    _, grad = vector_loss(name, prediction, target, weights, groups, numpy)
    numeric = numpy.zeros_like(prediction, dtype="float64")
    step = 1e-3
    for index in numpy.ndindex(prediction.shape):
        up, down = prediction.astype("float64"), prediction.astype("float64")
        up[index] += step
        down[index] -= step
        numeric[index] = (
            loss_value(name, up, target, weights, groups) - loss_value(name, down, target, weights, groups)
        ) / (2 * step)
    # the gradient is that of the weighted mean: the summed loss divided by the weight total
    assert numpy.allclose(grad, numeric / weights.sum(), atol=2e-4)
    assert not grad[1].any()  # weight 0: no gradient


def test_values_of_each_loss():
    target = numpy.asarray([[3.0, 4.0], [1.0, 0.0]], dtype="float32")
    prediction = numpy.asarray([[6.0, 8.0], [0.0, 1.0]], dtype="float32")
    weights = numpy.ones(2, dtype="float32")
    # cosine: same direction -> 0, orthogonal -> 1; l2: mean squared difference per value
    assert loss_value("cosine", prediction, target, weights, 1) == pytest.approx(1.0)
    assert loss_value("l2", prediction, target, weights, 1) == pytest.approx((9 + 16) / 2 + (1 + 1) / 2)
    assert loss_value("cosine+l2", prediction, target, weights, 1) == pytest.approx(1.0 + 12.5 + 1.0)
    assert loss_value("l2", target, target, weights, 1) == 0.0


def test_groups_are_averaged_per_token():
    """Two layers: the token's loss is the mean of its two distances."""
    target = numpy.asarray([[1.0, 0.0, 1.0, 0.0]], dtype="float32")
    prediction = numpy.asarray([[1.0, 0.0, 0.0, 1.0]], dtype="float32")
    assert loss_value("cosine", prediction, target, numpy.ones(1, "float32"), 2) == pytest.approx(0.5)


def test_zero_targets_add_nothing_to_the_cosine():
    prediction = numpy.ones((2, 3), dtype="float32")
    target = numpy.asarray([[0, 0, 0], [1, 1, 1]], dtype="float32")
    loss, grad = vector_loss("cosine", prediction, target, numpy.ones(2, "float32"), 1, numpy)
    assert loss == pytest.approx(0.0, abs=1e-6) and numpy.isfinite(grad).all() and not grad[0].any()


def test_unknown_loss_and_bad_shapes():
    rows = numpy.zeros((2, 4), dtype="float32")
    with pytest.raises(ValueError, match="loss must be one of 'cosine', 'l2', 'cosine\\+l2', not 'L2'"):
        vector_loss("L2", rows, rows, numpy.ones(2, "float32"), 1, numpy)
    with pytest.raises(ValueError, match="do not fit 3 groups"):
        vector_loss("l2", rows, rows, numpy.ones(2, "float32"), 3, numpy)
