"""The one layer mix gives every caller the numbers each computed on its own before: ``embed``
and ``spacy-elmo embed`` (numpy), ``token._.elmo`` and ``spacy_elmo.scalar_mix.v1``."""

import numpy
import pytest
import spacy
from thinc.api import NumpyOps

from spacy_elmo import embed, embed_layers, mix_layers
from spacy_elmo.models.scalar_mix import scalar_mix
from spacy_elmo.vector_file.job import reduce_layers

from ..conftest import random_tiny_bilm

LAYERS = numpy.random.default_rng(0).normal(size=(3, 7, 8)).astype(numpy.float32)


def before_embed(layers, layer_weights=None, gamma=1.0):
    """embed.py's mix before the embedding layer existed."""
    n = layers.shape[0]
    weights = (
        numpy.full(n, 1.0 / n, dtype=numpy.float32)
        if layer_weights is None
        else numpy.asarray(layer_weights, dtype=numpy.float32)
    )
    return (gamma * numpy.tensordot(weights, layers, axes=(0, 0))).astype(numpy.float32, copy=False)


def before_component(layers, layer_weights, gamma, ops):
    """pipeline/elmo.py's ``_mix`` and ``_mix_weights`` before."""
    n = layers.shape[0]
    weights = ops.asarray1f([1.0 / n] * n if layer_weights is None else layer_weights)
    return (gamma * ops.xp.tensordot(weights, layers, axes=(0, 0))).astype("float32", copy=False)


@pytest.mark.parametrize("layer_weights,gamma", [(None, 1.0), ([0.2, 0.3, 0.5], 0.7), ([0.0, 0.0, 1.0], 2.5)])
def test_mix_layers_equals_each_callers_former_mix(layer_weights, gamma):
    mixed = mix_layers(LAYERS, layer_weights, gamma)
    assert mixed.dtype == numpy.float32
    numpy.testing.assert_array_equal(mixed, before_embed(LAYERS, layer_weights, gamma))
    numpy.testing.assert_array_equal(mixed, before_component(LAYERS, layer_weights, gamma, NumpyOps()))
    numpy.testing.assert_array_equal(mix_layers(LAYERS, layer_weights, gamma, xp=numpy), mixed)


def test_the_scalar_mix_layer_equals_its_former_forward():
    model = scalar_mix()
    model.initialize(X=[LAYERS])
    model.set_param("a", numpy.asarray([0.3, -0.2, 0.9], dtype=numpy.float32))
    model.set_param("gamma", numpy.asarray([1.7], dtype=numpy.float32))
    a = model.get_param("a")
    weights = (numpy.exp(a - a.max()) / numpy.exp(a - a.max()).sum()).astype("float32")
    former = (model.get_param("gamma")[0] * numpy.tensordot(weights, LAYERS, axes=(0, 0))).astype("float32")
    (got,) = model.predict([LAYERS])
    numpy.testing.assert_array_equal(got, former)
    numpy.testing.assert_array_equal(got, mix_layers(LAYERS, weights, model.get_param("gamma")[0]))


def test_embed_the_corpus_driver_and_the_component_use_the_same_mix(tmp_path):
    bilm = random_tiny_bilm(1, scale=0.5)
    sentences = [["The", "bank", "raised", "rates", "."], ["A", "river", "bank"]]
    layers = embed_layers(bilm, sentences)
    mixed = embed(sentences, bilm, layer_weights=[0.2, 0.3, 0.5], gamma=0.7)
    for row, sentence_layers in enumerate(layers):
        want = before_embed(sentence_layers, [0.2, 0.3, 0.5], 0.7)
        numpy.testing.assert_array_equal(mixed[row, : len(sentences[row])], want)
        numpy.testing.assert_array_equal(reduce_layers(sentence_layers, "mix", [0.2, 0.3, 0.5], 0.7), want)
        numpy.testing.assert_array_equal(reduce_layers(sentence_layers, "average"), before_embed(sentence_layers))
    bilm.to_disk(tmp_path / "bilm")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tmp_path / "bilm"), "layer_weights": [0.2, 0.3, 0.5], "gamma": 0.7})
    doc = nlp("The bank raised rates .")
    want = before_component(doc._.elmo_layers, [0.2, 0.3, 0.5], 0.7, NumpyOps())
    numpy.testing.assert_array_equal(doc._.elmo_vectors, want)


def test_the_weight_count_is_checked():
    with pytest.raises(ValueError, match="has 2 values but the biLM has 3 layers"):
        mix_layers(LAYERS, [0.5, 0.5])
