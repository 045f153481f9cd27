"""``spacy_elmo.ElmoStandalone.v1`` and the two ``replace_listeners`` hooks, without a pipeline."""

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc
from spacy.util import registry

from spacy_elmo import BiLM
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.models import build_bilm_model, build_elmo_standalone, elmo_layers_node, get_bilm, set_bilm
from spacy_elmo.models.listener import STANDALONE_ARCHITECTURE, replace_listener_cfg

LISTENER = {
    "@architectures": "spacy_elmo.ElmoListener.v1",
    "upstream": "elmo",
    "layer_norm": True,
    "layer_dropout": 0.0,
    "grad_factor": 0.25,
    "fixed_layer_weights": None,
}
BILM_CFG = {"@architectures": "spacy_elmo.BiLM.v1", "lstm_dim": 32, "filters": [[1, 4], [2, 8]]}


@pytest.fixture(scope="module")
def docs():
    vocab = spacy.blank("en").vocab
    return [Doc(vocab, words=["the", "cat", "sat"]), Doc(vocab, words=["dogs"])]


def tiny_bilm_model():
    torch.manual_seed(0)
    model = build_bilm_model()
    set_bilm(model, BiLM(TINY_CONFIG).eval())
    return model


def test_registered():
    assert registry.architectures.get(STANDALONE_ARCHITECTURE) is build_elmo_standalone


def test_negative_grad_factor_is_refused():
    with pytest.raises(ValueError, match="grad_factor"):
        elmo_layers_node(tiny_bilm_model(), grad_factor=-1.0)


def test_outputs_are_the_bilm_layers_mixed(docs):
    bilm = tiny_bilm_model()
    expected = bilm.predict(docs)
    model = build_elmo_standalone(bilm)
    model.initialize(X=docs)
    for out, layers in zip(model.predict(docs), expected):
        numpy.testing.assert_allclose(out, layers.mean(axis=0), rtol=1e-5, atol=1e-6)


def test_a_copy_without_weights_is_never_random(docs):
    model = registry.resolve({"m": {"@architectures": STANDALONE_ARCHITECTURE, "bilm": BILM_CFG}})["m"]
    with pytest.raises(ValueError, match="biLM copy .* has no weights: .*source the component"):
        model.initialize(X=docs)


def test_frozen_copy_gets_no_gradient(docs):
    layers_model = elmo_layers_node(tiny_bilm_model(), grad_factor=0.0)
    outputs, backprop = layers_model.begin_update(docs)
    assert backprop([numpy.ones_like(x) for x in outputs]) == []
    assert all(p.grad is None for p in get_bilm(layers_model.layers[0]).parameters())


def test_fine_tuned_copy_gets_scaled_gradient(docs):
    grads = {}
    for factor in (1.0, 0.5):
        layers_model = elmo_layers_node(tiny_bilm_model(), grad_factor=factor)
        outputs, backprop = layers_model.begin_update(docs)
        backprop([numpy.ones_like(x) for x in outputs])
        weight = next(get_bilm(layers_model.layers[0]).parameters())
        assert weight.grad is not None
        grads[factor] = weight.grad.clone()
    torch.testing.assert_close(grads[0.5], grads[1.0] * 0.5)


def test_cfg_takes_the_elmo_model_and_the_listener_settings():
    tok2vec = {"@architectures": "spacy_elmo.ElmoTok2Vec.v1", "elmo": dict(LISTENER), "embed": {}}
    cfg = replace_listener_cfg(BILM_CFG, tok2vec)
    assert cfg == {
        "@architectures": STANDALONE_ARCHITECTURE,
        "bilm": BILM_CFG,
        "layer_norm": True,
        "layer_dropout": 0.0,
        "grad_factor": 0.25,
        "fixed_layer_weights": None,
    }
    cfg["bilm"]["filters"][0][1] = 99  # a copy: the upstream's config is untouched
    assert BILM_CFG["filters"][0][1] == 4


@pytest.mark.parametrize("n_listeners", [0, 2])
def test_cfg_needs_exactly_one_listener(n_listeners):
    tok2vec = {"@architectures": "spacy_elmo.ElmoTok2Vec.v1", "embed": {}}
    for i in range(n_listeners):
        tok2vec[f"elmo{i}"] = dict(LISTENER)
    with pytest.raises(ValueError, match=f"exactly one spacy_elmo.ElmoListener.v1 block.*found {n_listeners}"):
        replace_listener_cfg(BILM_CFG, tok2vec)


def test_the_standalone_builder_takes_every_listener_setting_with_its_default():
    """The two builders repeat one list of mix settings (spaCy's config reads each signature),
    and replace_listener_cfg copies SHARED_SETTINGS across: the three must stay in step."""
    import inspect

    from spacy_elmo.models.listener import SHARED_SETTINGS, build_elmo_listener

    listener = dict(inspect.signature(build_elmo_listener).parameters)
    del listener["upstream"]
    standalone = dict(inspect.signature(build_elmo_standalone).parameters)
    del standalone["bilm"]
    assert listener == standalone
    assert set(SHARED_SETTINGS) == set(listener)
