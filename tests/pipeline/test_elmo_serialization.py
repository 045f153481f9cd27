"""Saving and loading pipelines with ``elmo``: same outputs, weights inside, no pickle."""

import shutil

import numpy
import spacy
import torch
from spacy.lang.en import English

from spacy_elmo import BiLM
from spacy_elmo.config import TINY_CONFIG

TEXTS = ["Alice works at Acme in Paris .", "The bank near Lima hired Bob .", "", "Eve flew to Osaka ."]


def outputs(nlp):
    docs = [nlp(text) for text in TEXTS]
    return [(doc._.elmo_layers, doc._.elmo_vectors, [(e.start, e.end, e.label_) for e in doc.ents]) for doc in docs]


def assert_same_outputs(a, b):
    for (layers_a, vectors_a, ents_a), (layers_b, vectors_b, ents_b) in zip(a, b):
        numpy.testing.assert_array_equal(layers_a, layers_b)
        numpy.testing.assert_array_equal(vectors_a, vectors_b)
        assert ents_a == ents_b


def test_to_disk_and_load_reproduce_outputs(trained_ner, tmp_path, no_pickle):
    nlp = spacy.load(trained_ner)
    before = outputs(nlp)
    assert any(ents for _, _, ents in before)
    nlp.to_disk(tmp_path / "copy")
    assert_same_outputs(before, outputs(spacy.load(tmp_path / "copy")))


def test_to_bytes_and_from_bytes_reproduce_outputs(trained_ner, no_pickle):
    nlp = spacy.load(trained_ner)
    before = outputs(nlp)
    restored = English.from_config(nlp.config).from_bytes(nlp.to_bytes())
    assert_same_outputs(before, outputs(restored))


def test_component_bytes_round_trip(nlp_tiny):
    elmo = nlp_tiny.get_pipe("elmo")
    data = elmo.to_bytes()
    fresh = spacy.blank("en")
    fresh.add_pipe("elmo").from_bytes(data)
    text = "They sat by the river bank ."
    numpy.testing.assert_array_equal(nlp_tiny(text)._.elmo_layers, fresh(text)._.elmo_layers)


def test_from_bytes_replaces_a_biLM_of_another_size(nlp_tiny, tmp_path):
    nlp_tiny("warm up")  # the tiny biLM is loaded: 3 layers
    torch.manual_seed(1)
    BiLM(TINY_CONFIG.replace(n_layers=1)).to_disk(tmp_path / "one_layer")
    other = spacy.blank("en")
    other.add_pipe("elmo", config={"weights": str(tmp_path / "one_layer")})
    elmo = nlp_tiny.get_pipe("elmo").from_bytes(other.get_pipe("elmo").to_bytes())
    assert elmo.bilm.config.n_layers == 1
    assert nlp_tiny("a b")._.elmo_layers.shape[0] == 2


def test_loaded_pipeline_does_not_read_the_weights_path(tiny_weights, tmp_path):
    weights = tmp_path / "weights"
    shutil.copytree(tiny_weights, weights)
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    nlp.to_disk(tmp_path / "pipeline")  # reads the weights (lazily) and embeds them
    expected = nlp("The river bank .")._.elmo_layers
    shutil.rmtree(weights)
    loaded = spacy.load(tmp_path / "pipeline")
    numpy.testing.assert_array_equal(loaded("The river bank .")._.elmo_layers, expected)


def test_pipeline_directory_holds_no_pickle(trained_ner):
    model_file = trained_ner / "elmo" / "model"
    data = model_file.read_bytes()
    assert b"\x89HDF" in data  # the weights travel as HDF5 bytes
    assert b"PK\x03\x04" not in data  # torch.save's zip container


def test_uninitialized_component_round_trips():
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    restored = English.from_config(nlp.config).from_bytes(nlp.to_bytes())
    assert restored.get_pipe("elmo").bilm is None
