"""Our biLM against activations from the reference implementations (AllenNLP and bilm-tf)."""

import json

import h5py
import numpy
import pytest
import torch

from spacy_elmo import BiLM, embed_layers
from spacy_elmo.nn.words.char_ids import encode_sentences


@pytest.fixture(scope="module")
def reference_bilm(allennlp_fixtures):
    return BiLM.from_allennlp(allennlp_fixtures / "options.json", allennlp_fixtures / "lm_weights.hdf5")


@pytest.fixture(scope="module")
def stateless_expected(allennlp_fixtures):
    with h5py.File(allennlp_fixtures / "expected_allennlp_stateless.hdf5", "r") as handle:
        sentences = json.loads(handle.attrs["sentences_json"])
        layers = [handle["layers_f64"][str(i)][...] for i in range(len(sentences))]
    return sentences, layers


def test_all_layers_of_all_sentences_match_allennlp(reference_bilm, stateless_expected):
    sentences, expected = stateless_expected
    assert len(sentences) == 30
    actual = embed_layers(reference_bilm, sentences)
    for ours, theirs in zip(actual, expected):
        assert ours.dtype == numpy.float32
        assert ours.shape == theirs.shape == (3, ours.shape[1], 32)
        numpy.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=0)


def test_top_layer_of_first_batch_matches_bilm_tf(reference_bilm, allennlp_fixtures):
    files = json.loads((allennlp_fixtures / "sentences.json").read_text())
    batch = [files[k][0].split() for k in range(3)]
    actual = embed_layers(reference_bilm, batch)
    for k, tokens in enumerate(batch):
        with h5py.File(allennlp_fixtures / f"lm_embeddings_{k}.hdf5", "r") as handle:
            stored = handle["0"][...]  # (forward|backward, tokens, P)
        expected = numpy.concatenate([stored[0], stored[1]], axis=-1)
        assert expected.shape[0] == len(tokens)
        numpy.testing.assert_allclose(actual[k][-1], expected, atol=1e-5, rtol=0)


def test_char_cnn_matches_bilm_tf_token_embeddings(reference_bilm, allennlp_fixtures):
    words = (allennlp_fixtures / "vocab_test.txt").read_text(encoding="utf8").strip().split("\n")
    with h5py.File(allennlp_fixtures / "elmo_token_embeddings.hdf5", "r") as handle:
        expected = handle["embedding"][...]
    ids, _ = encode_sentences([words], add_boundaries=False)
    with torch.inference_mode():
        actual = reference_bilm.char_encoder(torch.from_numpy(ids))[0].numpy()
    assert expected.shape == (len(words), 16)
    assert "<S>" in words and "</S>" in words
    numpy.testing.assert_allclose(actual, expected, atol=1e-5, rtol=0)


def test_layer_zero_is_the_char_cnn_twice(reference_bilm):
    layers = embed_layers(reference_bilm, [["The", "bank", "raised", "rates", "."]])[0]
    assert layers.shape == (3, 5, 32)
    numpy.testing.assert_array_equal(layers[0, :, :16], layers[0, :, 16:])
