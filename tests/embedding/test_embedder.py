"""The Embedder as an object: its settings, its copies and pickles (an empty word cache, the
biLM shared), the device tensor of one batch, and the Thinc layer's embedder, which survives
``Model.copy``/``deepcopy`` and stays out of the model's bytes."""

import copy
import pickle

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc

from spacy_elmo import Embedder, embed_layers
from spacy_elmo.models import build_bilm_model, set_bilm
from spacy_elmo.models.doc_layers import get_embedder

from ..conftest import random_tiny_bilm

SENTENCES = [["the", "bank", "raised", "rates"], ["a", "river", "bank"], [], ["x"]]


@pytest.fixture(scope="module")
def bilm():
    return random_tiny_bilm(2, scale=0.5)


def test_settings_are_checked_and_reported(bilm):
    embedder = Embedder(bilm, max_tokens=7, batch_tokens=None, batch_sentences=3, word_cache_words=10)
    assert embedder.settings == {
        "max_tokens": 7,
        "batch_tokens": None,
        "batch_sentences": 3,
        "word_cache_words": 10,
        "precision": "float32",
    }
    for bad in ({"max_tokens": 0}, {"batch_tokens": 0}, {"batch_sentences": 0}, {"word_cache_words": -1}):
        with pytest.raises(ValueError):
            Embedder(bilm, **bad)


def test_one_batch_is_a_tensor_of_the_models_dtype_with_the_windows_tokens_in_order(bilm):
    embedder = Embedder(bilm)
    (group,) = embedder.plan([len(s) for s in SENTENCES])
    (batch,) = group.batches
    layers = embedder.run(SENTENCES, batch)
    assert isinstance(layers, torch.Tensor) and layers.dtype == bilm.dtype and not layers.requires_grad
    assert layers.shape == (3, 8, bilm.config.output_dim)
    offset, expected = 0, embed_layers(bilm, SENTENCES)
    for window in batch:
        numpy.testing.assert_array_equal(layers[:, offset : offset + len(window)].numpy(), expected[window.sentence])
        offset += len(window)


def test_copies_start_empty_and_share_the_bilm(bilm):
    embedder = Embedder(bilm, word_cache_words=50)
    embedder.layers(SENTENCES)
    assert len(embedder.word_cache) > 0
    clone = copy.deepcopy(embedder)
    assert clone.bilm is bilm and clone.settings == embedder.settings and len(clone.word_cache) == 0
    both = copy.deepcopy({"bilm": bilm, "embedder": embedder})  # copied together: the copy's biLM
    assert both["embedder"].bilm is both["bilm"] and both["bilm"] is not bilm
    unpickled = pickle.loads(pickle.dumps(embedder))
    assert unpickled.settings == embedder.settings and len(unpickled.word_cache) == 0
    for got, want in zip(unpickled.layers(SENTENCES), embedder.layers(SENTENCES)):
        numpy.testing.assert_array_equal(got, want)


def test_moving_the_bilm_frees_the_word_cache():
    model = random_tiny_bilm(3)
    embedder = Embedder(model, word_cache_words=50)
    embedder.layers(SENTENCES)
    assert len(embedder.word_cache) > 0
    model.double()
    assert len(embedder.word_cache) == 0
    assert all(layers.dtype == numpy.float32 for layers in embedder.layers(SENTENCES))


def test_the_thinc_layers_embedder_survives_copies_and_stays_out_of_the_bytes(bilm):
    vocab = spacy.blank("en").vocab
    docs = [Doc(vocab, words=words) for words in (["the", "river", "bank"], ["a", "b"])]
    model = build_bilm_model(word_cache_words=100)
    set_bilm(model, bilm)
    expected = model.predict(docs)
    embedder = get_embedder(model)
    assert get_embedder(model) is embedder and len(embedder.word_cache) > 0
    for clone in (model.copy(), copy.deepcopy(model)):
        clone_embedder = get_embedder(clone)
        assert clone_embedder is not embedder and clone_embedder.bilm is not bilm
        assert len(clone_embedder.word_cache) == 0
        for got, want in zip(clone.predict(docs), expected):
            numpy.testing.assert_array_equal(got, want)
    data = model.to_bytes()
    restored = build_bilm_model().from_bytes(data)
    assert "embedder" not in restored.attrs
    for got, want in zip(restored.predict(docs), expected):
        numpy.testing.assert_array_equal(got, want)
    other = random_tiny_bilm(4)
    set_bilm(model, other)
    assert get_embedder(model).bilm is other  # a new biLM gets a new embedder
