"""ELMoForManyLangs models, written by their own code (``tests/fixtures/elmoformanylangs``), give
their layers: within 1e-5 in float32 against their float64 run, and to float64 rounding in
float64, on every path (loader, embedder, word cache, inference and training loops, saved copy)."""

import zipfile

import numpy
import pytest
import torch

from spacy_elmo import Embedder, embed_layers
from spacy_elmo.loading import load_bilm
from spacy_elmo.nn import BiLM
from spacy_elmo.nn.words.word_batch import encode_padded

from ..conftest import BATCH_BOUND, MANY_LANGS_FIXTURES, MANY_LANGS_MODELS, many_langs_reference, relative_difference

TOLERANCE = 1e-5


def model_dir(name: str):
    return MANY_LANGS_FIXTURES / f"{name}.model"


@pytest.fixture(scope="module", params=MANY_LANGS_MODELS)
def name(request) -> str:
    return request.param


def test_the_fixtures_cover_both_containers_and_both_kinds_of_model():
    legacy, zipped = (model_dir(n) / "token_embedder.pkl" for n in MANY_LANGS_MODELS)
    assert not zipfile.is_zipfile(legacy) and zipfile.is_zipfile(zipped)
    assert not zipfile.is_zipfile(model_dir("char_legacy") / "encoder.pkl")
    configs = [BiLM.from_elmoformanylangs(model_dir(n)).config for n in MANY_LANGS_MODELS]
    assert [c.word_dim for c in configs] == [0, 7] and [c.activation for c in configs] == ["relu", "tanh"]
    assert all(c.char_encoding == "code_points" and c.forget_bias == 0.0 for c in configs)


def test_both_containers_are_read_with_weights_only(monkeypatch, name):
    calls = []
    real_load = torch.load

    def spy(*args, **kwargs):
        calls.append(kwargs.get("weights_only"))
        return real_load(*args, **kwargs)

    monkeypatch.setattr(torch, "load", spy)
    load_bilm(model_dir(name))
    assert calls == [True, True]


def test_layers_equal_theirs_in_float32(name):
    sentences, theirs = many_langs_reference(name)
    ours = embed_layers(load_bilm(model_dir(name)), sentences)
    for mine, reference in zip(ours, theirs):
        assert mine.shape == reference.shape  # L+1 layers, the sentence marks dropped
        for layer in range(reference.shape[0]):
            assert numpy.abs(mine[layer] - reference[layer]).max() < TOLERANCE


def test_layers_equal_theirs_in_float64_for_inference_and_with_autograd(name):
    sentences, theirs = many_langs_reference(name)
    bilm = BiLM.from_elmoformanylangs(model_dir(name)).double()
    ids, lengths = encode_padded(sentences, encoding=bilm.encoding)
    with torch.no_grad():  # the inference loop and the char-CNN's table lookups
        layers = bilm(torch.from_numpy(ids), torch.from_numpy(lengths)).numpy()
    for row, reference in enumerate(theirs):
        numpy.testing.assert_allclose(layers[:, row, : reference.shape[1]], reference, atol=1e-12, rtol=0)
    bilm.train()  # the autograd char-CNN (table lookups with a sparse backward)
    layers = bilm(torch.from_numpy(ids), torch.from_numpy(lengths))
    assert layers.requires_grad
    for row, reference in enumerate(theirs):
        numpy.testing.assert_allclose(
            layers[:, row, : reference.shape[1]].detach().numpy(), reference, atol=1e-12, rtol=0
        )


def test_layer_zero_is_the_token_vector_twice(name):
    sentences, _ = many_langs_reference(name)
    layers = embed_layers(load_bilm(model_dir(name)), sentences)
    half = layers[0].shape[-1] // 2
    for sentence in layers:
        numpy.testing.assert_array_equal(sentence[0, :, :half], sentence[0, :, half:])


def test_vectors_do_not_depend_on_the_batch_or_earlier_calls(name):
    sentences, _ = many_langs_reference(name)
    bilm = load_bilm(model_dir(name))
    together = embed_layers(bilm, sentences)
    again = embed_layers(bilm, sentences)  # their encoder would start from the last call's states
    for sentence, layers, repeated in zip(sentences, together, again):
        numpy.testing.assert_array_equal(layers, repeated)
        assert relative_difference([layers], embed_layers(bilm, [sentence])) <= BATCH_BOUND


def test_the_word_cache_moves_no_vector_beyond_rounding(name):
    sentences, _ = many_langs_reference(name)
    bilm = load_bilm(model_dir(name))
    uncached = Embedder(bilm, word_cache_words=0).layers(sentences)
    cached = Embedder(bilm, word_cache_words=1000)
    for _ in range(2):  # cold, then warm
        assert relative_difference(uncached, cached.layers(sentences[::-1])[::-1]) <= BATCH_BOUND


def test_our_own_directory_keeps_the_dictionaries(tmp_path, name):
    sentences, _ = many_langs_reference(name)
    bilm = load_bilm(model_dir(name))
    bilm.to_disk(tmp_path / "ours")
    names = {path.name for path in (tmp_path / "ours").iterdir()}
    assert {"config.json", "weights.hdf5", "chars.json"} <= names
    assert ("words.json" in names) == bool(bilm.config.word_dim)
    copy = load_bilm(tmp_path / "ours")
    assert copy.config == bilm.config and dict(copy.lexicon.chars) == dict(bilm.lexicon.chars)
    for a, b in zip(embed_layers(bilm, sentences), embed_layers(copy, sentences)):
        numpy.testing.assert_array_equal(a, b)
    bilm_bytes = load_bilm(tmp_path / "ours")
    with pytest.raises(ValueError, match="bilm-tf's format holds byte-encoded biLMs"):
        bilm_bytes.to_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5")


def test_a_byte_model_written_over_a_code_point_one_leaves_no_dictionary(tmp_path):
    from ..conftest import random_tiny_bilm

    load_bilm(model_dir("words_zip")).to_disk(tmp_path)
    random_tiny_bilm().to_disk(tmp_path)
    assert not (tmp_path / "chars.json").exists() and not (tmp_path / "words.json").exists()
    assert load_bilm(tmp_path).lexicon is None


def test_export_allennlp_refuses_a_code_point_model_before_writing(tmp_path):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    load_bilm(model_dir("words_zip")).to_disk(tmp_path / "ours")
    result = CliRunner().invoke(app, ["export-allennlp", str(tmp_path / "ours"), str(tmp_path / "out")])
    assert result.exit_code == 1 and "Traceback" not in result.output
    [line] = result.output.strip().splitlines()  # one line, naming the model
    assert line.startswith(f"Error: {tmp_path / 'ours'}: bilm-tf's format holds byte-encoded biLMs")
    assert not (tmp_path / "out").exists()
