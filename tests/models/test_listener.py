"""``spacy_elmo.ElmoListener.v1``: what it returns, and which gradient reaches the upstream."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Config

from spacy_elmo.models import ElmoLayersListener, build_elmo_listener
from spacy_elmo.pipeline import install_extensions

N_LAYERS, WIDTH = 3, 4


@pytest.fixture(scope="module")
def docs():
    install_extensions()
    vocab = spacy.blank("en").vocab
    return [Doc(vocab, words=["a", "b"]), Doc(vocab, words=["c"])]


def layers_for(docs, seed=0):
    rng = numpy.random.default_rng(seed)
    return [rng.normal(size=(N_LAYERS, len(doc), WIDTH)).astype("float32") for doc in docs]


def make(grad_factor=0.0):
    model = build_elmo_listener(upstream="elmo", grad_factor=grad_factor)
    listener = model.layers[0]
    listener.set_upstream_dims(N_LAYERS, WIDTH)
    return model, listener


def test_registered():
    assert registry.architectures.get("spacy_elmo.ElmoListener.v1") is build_elmo_listener


def test_training_uses_received_layers_and_mixes_them(docs):
    model, listener = make()
    model.initialize(X=docs)
    layers = layers_for(docs)
    listener.receive(ElmoLayersListener.get_batch_id(docs), layers, None)
    outputs, backprop = model.begin_update(docs)
    for out, x in zip(outputs, layers):
        numpy.testing.assert_allclose(out, x.mean(axis=0), rtol=1e-6, atol=1e-6)
    backprop([numpy.ones_like(o) for o in outputs])
    assert model.layers[1].get_grad("gamma") is not None


def test_another_batch_is_refused(docs):
    model, listener = make()
    model.initialize(X=docs)
    listener.receive(12345, layers_for(docs), None)
    with pytest.raises(ValueError, match="other than the one"):
        model.begin_update(docs)


@pytest.mark.parametrize("grad_factor", [0.0, 0.5])
def test_grad_factor_scales_what_the_upstream_gets(docs, grad_factor):
    model, listener = make(grad_factor)
    model.initialize(X=docs)
    received = []
    listener.receive(ElmoLayersListener.get_batch_id(docs), layers_for(docs), received.append)
    outputs, backprop = model.begin_update(docs)
    backprop([numpy.ones_like(o) for o in outputs])
    if grad_factor == 0.0:
        assert received == []
    else:
        (d_layers,) = received
        # d/dh_j of gamma * sum_j w_j h_j with w = 1/3, gamma = 1, scaled by the factor.
        numpy.testing.assert_allclose(d_layers[0], numpy.full((N_LAYERS, 2, WIDTH), 0.5 / 3), rtol=1e-6)


def test_prediction_reads_doc_attribute_or_gives_zeros(docs):
    model, _ = make()
    model.initialize(X=docs)
    layers = layers_for(docs, seed=3)
    docs[0]._.elmo_layers = layers[0]
    try:
        outputs = model.predict(docs)
    finally:
        docs[0]._.elmo_layers = None
    numpy.testing.assert_allclose(outputs[0], layers[0].mean(axis=0), rtol=1e-6, atol=1e-6)
    numpy.testing.assert_array_equal(outputs[1], numpy.zeros((1, WIDTH)))


def test_dims_can_come_from_the_upstream_on_demand(docs):
    model = build_elmo_listener()
    model.layers[0].attach(lambda: (N_LAYERS, WIDTH))
    model.initialize(X=docs)
    assert model.layers[1].get_dim("nL") == N_LAYERS


def test_unknown_dims_give_a_clear_error(docs):
    with pytest.raises(ValueError, match=r"upstream = '\*'\) is linked to no elmo component.*nlp.add_pipe\('elmo'"):
        build_elmo_listener().initialize(X=docs)


def test_negative_grad_factor_is_rejected():
    with pytest.raises(ValueError):
        build_elmo_listener(grad_factor=-1.0)


def test_fixed_layer_weights_pick_a_layer_and_come_from_the_config(docs):
    config = Config().from_str(
        '[model]\n@architectures = "spacy_elmo.ElmoListener.v1"\nupstream = "elmo"\nfixed_layer_weights = [0, 0, 1]\n'
    )
    model = registry.resolve(config)["model"]
    listener = model.layers[0]
    listener.set_upstream_dims(N_LAYERS, WIDTH)
    model.initialize(X=docs)
    layers = layers_for(docs, seed=5)
    listener.receive(ElmoLayersListener.get_batch_id(docs), layers, None)
    outputs, backprop = model.begin_update(docs)
    for out, x in zip(outputs, layers):
        numpy.testing.assert_array_equal(out, x[2])
    backprop([numpy.ones_like(o) for o in outputs])
    mix = model.layers[1]
    assert not mix.has_param("a") and mix.get_grad("gamma") is not None


def test_fixed_layer_weights_must_match_the_upstream_layers(docs):
    model = build_elmo_listener(upstream="elmo", fixed_layer_weights=[1.0, 0.0])
    model.layers[0].set_upstream_dims(N_LAYERS, WIDTH)
    with pytest.raises(ValueError, match=r"fixed_layer_weights has 2 values but the biLM has 3 layers"):
        model.initialize(X=docs)


def test_without_fixed_layer_weights_the_weights_are_learned(docs):
    model, _ = make()
    model.initialize(X=docs)
    assert model.layers[1].has_param("a") and model.layers[1].attrs["fixed_layer_weights"] is None
