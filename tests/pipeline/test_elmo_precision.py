"""The ``elmo`` component's ``precision``: in ``nlp.config``, saved and restored with the
pipeline, overridable at load time, float32 where the CPU lacks the instructions, checked;
the precision that runs is logged once and shown on the component and in ``nlp.meta``."""

import json
import logging

import numpy
import pytest
import spacy

from spacy_elmo.nn import precision as precision_module

TEXTS = ["They sat by the river bank .", "The bank raised interest rates on Tuesday .", "One"]


@pytest.fixture
def cpu_with(monkeypatch):
    monkeypatch.setattr(precision_module, "_warned", set())

    def play(*flags: str) -> None:
        monkeypatch.setattr(precision_module, "cpu_flags", lambda: frozenset(flags))

    play("avx512f", "avx512_bf16", "avx512_vnni")  # the reduced paths run on any machine
    return play


def pipeline(weights, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights), **config})
    return nlp


def layers(nlp):
    return [doc._.elmo_layers for doc in nlp.pipe(TEXTS)]


def test_float32_is_the_default_and_shown_in_the_config(tiny_weights):
    nlp = pipeline(tiny_weights)
    assert nlp.config["components"]["elmo"]["precision"] == "float32"
    assert nlp.get_pipe("elmo").precision == "float32"
    explicit = pipeline(tiny_weights, precision="float32")
    for a, b in zip(layers(nlp), layers(explicit)):
        numpy.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_reduced_precision_is_close_to_float32_and_differs(cpu_with, tiny_weights, precision):
    nlp = pipeline(tiny_weights, precision=precision)
    assert nlp.config["components"]["elmo"]["precision"] == precision
    for want, got in zip(layers(pipeline(tiny_weights)), layers(nlp)):
        error = numpy.abs(got - want).mean() / numpy.abs(want).mean()
        assert 1e-4 < error < 1.5e-2


def test_the_setting_is_saved_restored_and_overridable(cpu_with, tiny_weights, tmp_path):
    nlp = pipeline(tiny_weights, precision="int8")
    before = layers(nlp)
    nlp.to_disk(tmp_path / "int8")
    loaded = spacy.load(tmp_path / "int8")
    assert loaded.config["components"]["elmo"]["precision"] == "int8"
    assert loaded.get_pipe("elmo").precision == "int8"
    for a, b in zip(before, layers(loaded)):
        numpy.testing.assert_array_equal(a, b)
    # the saved model's own attrs hold int8; the config given at load time wins
    as_float32 = spacy.load(tmp_path / "int8", config={"components": {"elmo": {"precision": "float32"}}})
    assert as_float32.config["components"]["elmo"]["precision"] == "float32"
    for a, b in zip(layers(pipeline(tiny_weights)), layers(as_float32)):
        numpy.testing.assert_array_equal(a, b)
    as_bfloat16 = spacy.load(tmp_path / "int8", config={"components": {"elmo": {"precision": "bfloat16"}}})
    assert as_bfloat16.get_pipe("elmo").precision == "bfloat16"
    for a, b in zip(layers(pipeline(tiny_weights, precision="bfloat16")), layers(as_bfloat16)):
        numpy.testing.assert_array_equal(a, b)


def test_without_the_instructions_the_pipeline_runs_float32(cpu_with, tiny_weights, caplog):
    cpu_with("avx2")
    nlp = pipeline(tiny_weights, precision="bfloat16")
    for a, b in zip(layers(pipeline(tiny_weights)), layers(nlp)):
        numpy.testing.assert_array_equal(a, b)
    assert sum("bfloat16" in record.getMessage() for record in caplog.records) == 1


def test_a_bad_value_is_a_clear_error(tiny_weights):
    with pytest.raises(
        ValueError, match=r"the 'elmo' component's precision must be one of 'float32', 'bfloat16', 'int8'"
    ):
        pipeline(tiny_weights, precision="fp16")


def test_the_frozen_feature_cache_keeps_one_precisions_features(cpu_with, tiny_weights):
    from spacy_elmo.models.doc_layers import set_precision

    nlp = pipeline(tiny_weights, precision="int8")
    elmo = nlp.get_pipe("elmo")
    docs = lambda: [nlp.make_doc(text) for text in TEXTS]  # noqa: E731
    int8 = elmo.compute_layers(docs(), use_cache=True)
    set_precision(elmo.model, "float32")
    float32 = elmo.compute_layers(docs(), use_cache=True)
    assert elmo.feature_cache.stats.hits == 0  # another precision: nothing served from the cache
    for cached, fresh, reduced in zip(float32, layers(pipeline(tiny_weights)), int8):
        numpy.testing.assert_array_equal(cached, fresh)
        assert not numpy.array_equal(cached, reduced)


def test_the_precision_that_runs_is_logged_once_and_shown(cpu_with, tiny_weights, tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="spacy_elmo")
    nlp = pipeline(tiny_weights, precision="int8")
    layers(nlp), layers(nlp)
    assert nlp.get_pipe("elmo").running_precision == "int8"
    assert nlp.meta["elmo_precision"] == {"elmo": "int8"}
    said = [record.getMessage() for record in caplog.records if "runs the biLM" in record.getMessage()]
    assert said == ["The 'elmo' component runs the biLM in int8"]
    nlp.to_disk(tmp_path / "int8")
    assert json.loads((tmp_path / "int8" / "meta.json").read_text())["elmo_precision"] == {"elmo": "int8"}
    cpu_with("avx2")  # another machine: the saved meta says int8, this one runs float32
    caplog.clear()
    loaded = spacy.load(tmp_path / "int8")
    assert loaded.get_pipe("elmo").precision == "int8"
    assert loaded.get_pipe("elmo").running_precision == "float32"
    assert loaded.meta["elmo_precision"] == {"elmo": "float32"}
    assert any(
        "runs the biLM in float32 (precision = 'int8' cannot run here)" in r.getMessage() for r in caplog.records
    )
