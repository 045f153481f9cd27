"""The ``elmo`` component on Docs: reference layers, the configured mix, spans, hooks, bank."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo import embed_layers, mix_layers
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.pipeline.weights import load_bilm_weights

TEXT = "The bank raised interest rates. They sat by the river bank. A third one follows here."


def sentences_of(doc):
    return [[t.text for t in sent] for sent in doc.sents]


def test_factory_needs_no_import():
    # The factory and architectures come from entry points: a fresh interpreter proves it.
    import subprocess
    import sys

    code = "import spacy; nlp = spacy.blank('en'); nlp.add_pipe('elmo'); print(nlp.pipe_names)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "elmo" in result.stdout


def test_layers_equal_embed_layers_per_sentence(fixture_weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("elmo", config={"weights": str(fixture_weights)})
    doc = nlp(TEXT)
    bilm = load_bilm_weights(fixture_weights)
    expected = embed_layers(bilm, sentences_of(doc))
    layers = doc._.elmo_layers
    assert layers.dtype == numpy.float32
    assert layers.shape == (bilm.config.n_output_layers, len(doc), bilm.config.output_dim)
    for sent, reference in zip(doc.sents, expected):
        numpy.testing.assert_allclose(layers[:, sent.start : sent.end], reference, rtol=0, atol=1e-5)


def test_token_elmo_is_the_configured_mix(fixture_weights):
    nlp = spacy.blank("en")
    config = {"weights": str(fixture_weights), "layer_weights": [0.2, 0.3, 0.5], "gamma": 0.7}
    nlp.add_pipe("elmo", config=config)
    doc = nlp("They sat by the river bank .")
    expected = mix_layers(doc._.elmo_layers, [0.2, 0.3, 0.5], 0.7)
    for token in doc:
        numpy.testing.assert_allclose(token._.elmo, expected[token.i], rtol=0, atol=1e-5)
    numpy.testing.assert_allclose(doc[1:4]._.elmo, expected[1:4].mean(axis=0), rtol=0, atol=1e-5)


def test_default_mix_is_the_average(nlp_tiny):
    doc = nlp_tiny("The bank raised interest rates .")
    numpy.testing.assert_allclose(doc._.elmo_vectors, mix_layers(doc._.elmo_layers), rtol=0, atol=1e-5)
    numpy.testing.assert_allclose(doc._.elmo, doc._.elmo_vectors.mean(axis=0), rtol=0, atol=1e-5)


def test_windows_without_sentence_boundaries(tiny_weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights), "model": {"max_tokens": 4}})
    words = "one two three four five six seven eight nine ten".split()
    doc = nlp(Doc(nlp.vocab, words=words))
    windows = [words[0:4], words[4:8], words[8:10]]
    expected = numpy.concatenate(embed_layers(load_bilm_weights(tiny_weights), windows), axis=1)
    numpy.testing.assert_allclose(doc._.elmo_layers, expected, rtol=0, atol=1e-5)


def test_whitespace_tokens_are_skipped_and_zero(nlp_tiny, tiny_weights):
    doc = nlp_tiny("river  bank\n\nis wet")
    spaces = [t.i for t in doc if t.is_space]
    assert spaces
    assert not doc._.elmo_layers[:, spaces].any()
    words = [t.text for t in doc if not t.is_space]
    expected = embed_layers(load_bilm_weights(tiny_weights), [words])[0]
    kept = [t.i for t in doc if not t.is_space]
    numpy.testing.assert_allclose(doc._.elmo_layers[:, kept], expected, rtol=0, atol=1e-5)


def bank_cosines(nlp):
    d1 = nlp("The bank raised interest rates.")
    d2 = nlp("They sat by the river bank.")
    assert d1[1].text == d2[5].text == "bank"
    static1, static2 = d1._.elmo_layers[0, 1], d2._.elmo_layers[0, 5]
    assert numpy.array_equal(static1, static2)
    static = float(static1 @ static2) / float(numpy.linalg.norm(static1) * numpy.linalg.norm(static2))
    return d1[1].similarity(d2[5]), static


@pytest.mark.parametrize("which", ["tiny", "fixture"])
def test_bank_example(which, request):
    weights = request.getfixturevalue("tiny_weights" if which == "tiny" else "fixture_weights")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    contextual, static = bank_cosines(nlp)
    assert contextual < 0.99
    assert static == pytest.approx(1.0, abs=1e-6)


def test_vector_hooks(nlp_tiny):
    doc = nlp_tiny("The river bank .")
    assert doc[1].has_vector and doc.has_vector and doc[0:2].has_vector
    numpy.testing.assert_array_equal(doc[1].vector, doc[1]._.elmo)
    numpy.testing.assert_array_equal(doc[1:3].vector, doc[1:3]._.elmo)
    numpy.testing.assert_array_equal(doc.vector, doc._.elmo)
    assert doc[1].similarity(doc[1]) == pytest.approx(1.0, abs=1e-6)
    assert -1.0 <= doc[0:2].similarity(doc) <= 1.0


def test_hooks_can_be_switched_off(tiny_weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights), "set_vector_hooks": False})
    doc = nlp("The river bank .")
    assert not doc.user_token_hooks
    assert doc[1]._.elmo is not None


def test_initialize_loads_weights_named_in_config(tiny_weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.config["initialize"]["components"]["elmo"] = {"weights": str(tiny_weights)}
    nlp.initialize()
    doc = nlp("The bank .")
    expected = embed_layers(load_bilm_weights(tiny_weights), [["The", "bank", "."]])[0]
    numpy.testing.assert_allclose(doc._.elmo_layers, expected, rtol=0, atol=1e-5)


def test_without_weights_use_before_initialize_is_an_error():
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    with pytest.raises(ValueError, match="no biLM weights"):
        nlp("text")


def test_initialize_without_weights_is_an_error():
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    with pytest.raises(ValueError, match=r"no biLM weights: set \[initialize.components.elmo\] weights.*\"random\""):
        nlp.initialize()


@pytest.mark.parametrize("where", ["factory", "initialize"])
def test_random_weights_only_when_asked_for(where):
    nlp = spacy.blank("en")
    sizes = {"char_embed_dim": 4, "filters": [[1, 4], [2, 8]], "lstm_dim": 16, "projection_dim": 4, "n_layers": 1}
    nlp.add_pipe("elmo", config={"model": sizes, **({"weights": "random"} if where == "factory" else {})})
    if where == "initialize":
        nlp.config["initialize"]["components"]["elmo"] = {"weights": "random"}
    nlp.initialize()
    assert nlp("a b c")._.elmo_layers.shape == (2, 3, 8)


def test_loaded_weights_override_config_sizes(nlp_tiny):
    # The default model config describes the original ELMo (D = 1024); the weights are tiny.
    assert nlp_tiny.get_pipe("elmo").bilm is None  # read lazily, on first use
    doc = nlp_tiny("a b")
    config = nlp_tiny.get_pipe("elmo").bilm.config
    assert config == TINY_CONFIG
    assert doc._.elmo_layers.shape == (config.n_output_layers, 2, config.output_dim)
