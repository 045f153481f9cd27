"""``mix_from = "ner"``: ``token._.elmo`` is exactly the ELMo feature the ``ner`` listener reads.

The mix parameters are set to uneven values (a trained mix stays near the even average after
a few steps), so a wrong mix, a missing layer norm or the component's own average shows.
"""

import numpy
import pytest
import spacy
from spacy.lang.en import English
from spacy.training import Example
from spacy.util import load_model_from_config
from thinc.api import Config
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.models.scalar_mix import LAYER_NORM_EPS

from .conftest import CONFIGS, toy_docs

TEXTS = ["The bank raised interest rates .", "They sat by the river bank .", "", "Alice works at Acme in Paris ."]
LEARNED_A = numpy.asarray([0.5, -1.0, 2.0], dtype="float32")
GAMMA = 1.7
# each setting spelled out: the shipped config's own choice (layer norm on for NER) must not leak in
SETTINGS = {
    "learned": {"layer_norm": False},
    "layer_norm": {"layer_norm": True},
    "fixed": {"layer_norm": False, "fixed_layer_weights": [0.2, 0.3, 0.5]},
}


def build(tiny_weights, setting: str, mix_from="ner"):
    overrides = {"paths.elmo": str(tiny_weights), "components.elmo.mix_from": mix_from}
    for key, value in SETTINGS[setting].items():
        overrides[f"components.ner.model.tok2vec.elmo.{key}"] = value
    config = Config().from_disk(CONFIGS / "ner_elmo.cfg", overrides=overrides)
    nlp = load_model_from_config(config, auto_fill=True)
    examples = [Example(nlp.make_doc(d.text), d) for d in toy_docs(nlp, 6, seed=4)]
    nlp.initialize(lambda: examples)
    mix = ner_mix(nlp)
    if mix.has_param("a"):
        mix.set_param("a", LEARNED_A.copy())
    mix.set_param("gamma", numpy.asarray([GAMMA], dtype="float32"))
    return nlp


def ner_mix(nlp):
    (mix,) = [node for node in nlp.get_pipe("ner").model.walk() if node.name == "elmo_scalar_mix"]
    return mix


def ner_elmo_features(nlp, docs):
    """What the ner's tok2vec reads from ELMo: its listener (or biLM copy) and mix, on ``docs``."""
    (tok2vec,) = [node for node in nlp.get_pipe("ner").model.walk() if node.has_ref("elmo")]
    return tok2vec.get_ref("elmo").predict(docs)


def doc_vectors(nlp):
    docs = list(nlp.pipe(TEXTS))
    return docs, [doc._.elmo_vectors for doc in docs]


def by_hand(layers, setting):
    """gamma * sum_j w_j * h_j, with the layer norm where the listener has one."""
    if setting == "layer_norm":
        centred = layers - layers.mean(axis=-1, keepdims=True)
        layers = centred / numpy.sqrt(centred.var(axis=-1, keepdims=True) + LAYER_NORM_EPS)
    if setting == "fixed":
        weights = numpy.asarray(SETTINGS["fixed"]["fixed_layer_weights"])
    else:
        weights = numpy.exp(LEARNED_A) / numpy.exp(LEARNED_A).sum()
    return GAMMA * numpy.tensordot(weights, layers, axes=(0, 0))


@pytest.fixture(scope="module", params=list(SETTINGS))
def setting_and_nlp(request, tiny_weights):
    return request.param, build(tiny_weights, request.param)


def test_token_vectors_are_the_ner_features(setting_and_nlp):
    setting, nlp = setting_and_nlp
    docs, vectors = doc_vectors(nlp)
    for got, expected in zip(vectors, ner_elmo_features(nlp, docs)):
        numpy.testing.assert_array_equal(got, expected)
    for doc, got in zip(docs, vectors):
        numpy.testing.assert_allclose(got, by_hand(doc._.elmo_layers, setting), rtol=1e-5, atol=1e-5)
        if len(doc):
            numpy.testing.assert_array_equal(doc[1]._.elmo, got[1])
    average = [doc._.elmo_layers.mean(axis=0) for doc in docs if len(doc)]
    assert max(float(numpy.abs(a - v).max()) for a, v in zip(average, [v for v in vectors if len(v)])) > 0.1


def test_survives_to_disk_and_to_bytes(setting_and_nlp, tmp_path):
    _, nlp = setting_and_nlp
    _, expected = doc_vectors(nlp)
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe("elmo").mix_from == "ner"
    restored = English.from_config(nlp.config).from_bytes(nlp.to_bytes())
    for other in (loaded, restored):
        for got, want in zip(doc_vectors(other)[1], expected):
            numpy.testing.assert_array_equal(got, want)


def test_standalone_copy_after_replace_listeners(setting_and_nlp, tmp_path):
    _, nlp = setting_and_nlp
    _, expected = doc_vectors(nlp)
    nlp.to_disk(tmp_path / "p")
    copy = spacy.load(tmp_path / "p")
    copy.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])
    docs, vectors = doc_vectors(copy)
    for got, want, feature in zip(vectors, expected, ner_elmo_features(copy, docs)):
        numpy.testing.assert_array_equal(got, want)
        numpy.testing.assert_array_equal(got, feature)
    copy.to_disk(tmp_path / "replaced")
    for got, want in zip(doc_vectors(spacy.load(tmp_path / "replaced"))[1], expected):
        numpy.testing.assert_array_equal(got, want)


def test_inspect_shows_mix_from_and_layer_norm(setting_and_nlp, tmp_path):
    setting, nlp = setting_and_nlp
    nlp.to_disk(tmp_path / "p")
    result = CliRunner().invoke(app, ["inspect", str(tmp_path / "p")])
    assert result.exit_code == 0, result.output
    assert "elmo: token._.elmo uses the mix of 'ner' (mix_from)" in result.output
    assert f"  layer_norm  {'true' if setting == 'layer_norm' else 'false'}" in result.output
    assert f"gamma    {GAMMA:.4f}" in result.output


def test_unknown_component_is_named_before_training(tiny_weights):
    with pytest.raises(ValueError, match="mix_from = 'tagger', but no component of that name follows it"):
        build(tiny_weights, "learned", mix_from="tagger")  # at nlp.initialize


def test_uninitialized_mix_is_an_error(tiny_weights):
    config = Config().from_disk(
        CONFIGS / "ner_elmo.cfg",
        overrides={"components.elmo.weights": str(tiny_weights), "components.elmo.mix_from": "ner"},
    )
    nlp = load_model_from_config(config, auto_fill=True)
    with pytest.raises(ValueError, match="'ner' component's ELMo mix is not initialized yet"):
        nlp("The bank .")


def test_removing_the_component_is_noticed(tiny_weights):
    nlp = build(tiny_weights, "learned")
    nlp.remove_pipe("ner")
    with pytest.raises(ValueError, match="no component of that name follows it"):
        nlp("The bank .")


def test_set_at_load_time_as_the_readme_shows(tiny_weights, tmp_path):
    nlp = build(tiny_weights, "learned", mix_from=None)
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p", config={"components": {"elmo": {"mix_from": "ner"}}})
    docs, vectors = doc_vectors(loaded)
    for got, feature in zip(vectors, ner_elmo_features(loaded, docs)):
        numpy.testing.assert_array_equal(got, feature)
    loaded.to_disk(tmp_path / "q")
    assert spacy.load(tmp_path / "q").get_pipe("elmo").mix_from == "ner"
