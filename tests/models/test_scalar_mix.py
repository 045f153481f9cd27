"""The learned layer mix: its starting point, its gradients, layer norm and layer dropout."""

import numpy
import pytest

from spacy_elmo.models.scalar_mix import mix_softmax_weights, scalar_mix

N_LAYERS, WIDTH = 3, 5


def inputs(seed=0, lengths=(4, 0, 2)):
    rng = numpy.random.default_rng(seed)
    return [rng.normal(size=(N_LAYERS, n, WIDTH)).astype("float32") for n in lengths]


def make(layer_norm=False, layer_dropout=0.0):
    model = scalar_mix(layer_norm=layer_norm, layer_dropout=layer_dropout)
    model.initialize(X=inputs())
    return model


def test_starts_as_an_even_average():
    model = make()
    assert model.get_dim("nL") == N_LAYERS and model.get_dim("nO") == WIDTH
    numpy.testing.assert_array_equal(model.get_param("a"), numpy.zeros(N_LAYERS))
    numpy.testing.assert_array_equal(model.get_param("gamma"), [1.0])
    X = inputs()
    Y = model.predict(X)
    assert [y.shape for y in Y] == [(4, WIDTH), (0, WIDTH), (2, WIDTH)]
    for x, y in zip(X, Y):
        numpy.testing.assert_allclose(y, x.mean(axis=0), rtol=1e-6, atol=1e-6)


def test_weights_and_gamma_apply():
    model = make()
    model.set_param("a", numpy.asarray([0.0, 1.0, 2.0], dtype="float32"))
    model.set_param("gamma", numpy.asarray([0.5], dtype="float32"))
    weights = numpy.exp([0.0, 1.0, 2.0]) / numpy.exp([0.0, 1.0, 2.0]).sum()
    numpy.testing.assert_allclose(mix_softmax_weights(model), weights, rtol=1e-6)
    X = inputs()
    numpy.testing.assert_allclose(
        model.predict(X)[0], 0.5 * numpy.tensordot(weights, X[0], axes=(0, 0)), rtol=1e-5, atol=1e-6
    )


def loss_and_grads(model, X, R):
    Y, backprop = model.begin_update(X)
    loss = sum(float((y * r).sum()) for y, r in zip(Y, R))
    dX = backprop(R)
    return loss, dX


@pytest.mark.parametrize("layer_norm", [False, True])
def test_gradients_match_finite_differences(layer_norm):
    model = make(layer_norm=layer_norm)
    model.set_param("a", numpy.asarray([0.3, -0.2, 0.1], dtype="float32"))
    model.set_param("gamma", numpy.asarray([1.3], dtype="float32"))
    X = inputs(seed=1)
    R = [numpy.random.default_rng(2).normal(size=(x.shape[1], WIDTH)).astype("float32") for x in X]
    _, dX = loss_and_grads(model, X, R)
    d_a, d_gamma = model.get_grad("a").copy(), model.get_grad("gamma").copy()
    eps = 1e-2

    def loss_with(a=None, gamma=None, X_=None):
        if a is not None:
            model.set_param("a", a)
        if gamma is not None:
            model.set_param("gamma", gamma)
        return sum(float((y * r).sum()) for y, r in zip(model.predict(X_ if X_ is not None else X), R))

    a0, g0 = model.get_param("a").copy(), model.get_param("gamma").copy()
    for j in range(N_LAYERS):
        up, down = a0.copy(), a0.copy()
        up[j] += eps
        down[j] -= eps
        numeric = (loss_with(a=up) - loss_with(a=down)) / (2 * eps)
        assert numeric == pytest.approx(float(d_a[j]), rel=1e-2, abs=1e-3)
    model.set_param("a", a0)
    numeric = (loss_with(gamma=g0 + eps) - loss_with(gamma=g0 - eps)) / (2 * eps)
    assert numeric == pytest.approx(float(d_gamma[0]), rel=1e-2, abs=1e-3)
    model.set_param("gamma", g0)
    for index in [(0, 0, 1), (2, 3, 4), (1, 1, 0)]:
        up = [x.copy() for x in X]
        down = [x.copy() for x in X]
        up[0][index] += eps
        down[0][index] -= eps
        numeric = (loss_with(X_=up) - loss_with(X_=down)) / (2 * eps)
        assert numeric == pytest.approx(float(dX[0][index]), rel=2e-2, abs=1e-3)


def test_layer_norm_normalizes_each_layer():
    model = make(layer_norm=True)
    X = [numpy.full((N_LAYERS, 2, WIDTH), 7.0, dtype="float32") + numpy.arange(WIDTH, dtype="float32")]
    Y = model.predict(X)[0]
    expected = (numpy.arange(WIDTH) - numpy.arange(WIDTH).mean()) / numpy.arange(WIDTH).std()
    numpy.testing.assert_allclose(Y[0], expected, rtol=1e-4, atol=1e-4)


def test_layer_dropout_only_while_training():
    model = make(layer_dropout=0.5)
    X = inputs()
    numpy.random.seed(0)
    outputs = {tuple(numpy.round(model.begin_update(X)[0][0][0], 5)) for _ in range(20)}
    assert len(outputs) > 1  # different layers dropped in different steps
    numpy.testing.assert_allclose(model.predict(X)[0], X[0].mean(axis=0), rtol=1e-6, atol=1e-6)


def test_rejects_bad_dropout():
    with pytest.raises(ValueError):
        scalar_mix(layer_dropout=1.0)


# -- fixed layer weights ----------------------------------------------------------------


def make_fixed(weights, layer_norm=False):
    model = scalar_mix(layer_norm=layer_norm, fixed_layer_weights=weights)
    model.initialize(X=inputs())
    return model


def test_fixed_one_hot_weights_give_that_layer_times_gamma():
    model = make_fixed([0.0, 1.0, 0.0])
    assert not model.has_param("a")  # nothing to train but gamma
    numpy.testing.assert_array_equal(mix_softmax_weights(model), [0.0, 1.0, 0.0])
    model.set_param("gamma", numpy.asarray([0.5], dtype="float32"))
    X = inputs()
    for x, y in zip(X, model.predict(X)):
        numpy.testing.assert_array_equal(y, 0.5 * x[1])


def test_fixed_weights_are_used_as_given_not_softmaxed():
    model = make_fixed([2, 0, -1])
    X = inputs()
    numpy.testing.assert_allclose(model.predict(X)[0], 2 * X[0][0] - X[0][2], rtol=1e-6, atol=1e-6)


def test_fixed_weights_get_no_gradient_and_never_change():
    from thinc.api import Adam

    model = make_fixed([0.0, 0.0, 1.0])
    X = inputs(seed=4)
    R = [numpy.ones((x.shape[1], WIDTH), dtype="float32") for x in X]
    _, dX = loss_and_grads(model, X, R)
    assert not model.has_grad("a") and model.get_grad("gamma") is not None
    # only the chosen layer passes a gradient back: gamma * dY
    numpy.testing.assert_array_equal(dX[0][2], R[0])
    numpy.testing.assert_array_equal(dX[0][:2], numpy.zeros((2, 4, WIDTH)))
    model.finish_update(Adam(0.1))
    numpy.testing.assert_array_equal(mix_softmax_weights(model), [0.0, 0.0, 1.0])
    assert model.attrs["fixed_layer_weights"] == [0.0, 0.0, 1.0]
    assert float(model.get_param("gamma")[0]) != 1.0  # gamma still learns


def test_fixed_weights_of_the_wrong_length_are_refused():
    with pytest.raises(ValueError, match=r"has 2 values but the biLM has 3 layers"):
        make_fixed([1.0, 0.0])
    model = make_fixed([1.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"has 3 values but the biLM has 2 layers"):
        model.predict([x[:2] for x in inputs()])


@pytest.mark.parametrize("weights,dropout", [([], 0.0), ([1.0, float("nan"), 0.0], 0.0), ([1.0, 0.0, 0.0], 0.5)])
def test_bad_fixed_weights_are_refused(weights, dropout):
    with pytest.raises(ValueError, match="fixed_layer_weights"):
        scalar_mix(layer_dropout=dropout, fixed_layer_weights=weights)


# ------------------------------------------------------------ the paper's recipe: dropout, L2
def test_mix_dropout_zeroes_and_rescales_in_training_only():
    rate = 0.5
    model = scalar_mix(mix_dropout=rate)
    X = [numpy.random.default_rng(3).normal(size=(N_LAYERS, 400, WIDTH)).astype("float32")]
    model.initialize(X=X)
    clean = model.predict(X)[0]
    numpy.random.seed(0)
    Y, backprop = model.begin_update(X)
    kept = Y[0] != 0
    # every unit is either dropped or the clean value scaled by 1 / (1 - rate)
    numpy.testing.assert_allclose(Y[0][kept], clean[kept] / (1 - rate), rtol=1e-6)
    assert 0.45 < 1 - kept.mean() < 0.55
    # the gradient flows only through the kept units, with the same scale
    dX = backprop([numpy.ones_like(Y[0])])[0]
    weights = mix_softmax_weights(model)
    expected = weights[:, None, None] * (kept / (1 - rate))[None]
    numpy.testing.assert_allclose(dX, expected, rtol=1e-6)
    numpy.testing.assert_array_equal(model.predict(X)[0], clean)  # prediction: no dropout


def test_weights_l2_pulls_the_mix_towards_the_average():
    model = scalar_mix(weights_l2=0.25)
    model.initialize(X=inputs())
    a = numpy.asarray([0.5, -1.0, 2.0], dtype="float32")
    model.set_param("a", a)
    Y, backprop = model.begin_update(inputs())
    backprop([numpy.zeros_like(y) for y in Y])  # no task gradient: only the penalty remains
    numpy.testing.assert_allclose(model.get_grad("a"), 2 * 0.25 * a, rtol=1e-6)
    plain = scalar_mix()
    plain.initialize(X=inputs())
    plain.set_param("a", a)
    Y, backprop = plain.begin_update(inputs())
    backprop([numpy.zeros_like(y) for y in Y])
    numpy.testing.assert_array_equal(plain.get_grad("a"), numpy.zeros(N_LAYERS))


@pytest.mark.parametrize(
    "kwargs", [{"mix_dropout": 1.0}, {"mix_dropout": -0.1}, {"weights_l2": -1.0}, {"weights_l2": float("nan")}]
)
def test_recipe_options_refuse_bad_values(kwargs):
    with pytest.raises(ValueError):
        scalar_mix(**kwargs)
