"""The embedder's ``precision``: per-layer error against float32 (a tiny model and AllenNLP's
test model), float32 unchanged, the fallback where the CPU lacks the instructions, bad values."""

import json
import logging
import pickle

import h5py
import numpy
import pytest

from spacy_elmo import BiLM, Embedder, embed, embed_layers
from spacy_elmo.loading import load_bilm
from spacy_elmo.nn import precision as precision_module

from ..conftest import MANY_LANGS_FIXTURES, MANY_LANGS_MODELS, many_langs_reference, random_tiny_bilm

SENTENCES = [
    "The bank raised interest rates again on Tuesday .".split(),
    "They sat by the river bank and watched the boats go by .".split(),
    ["One"],
    "Ünïcödé wörds , numbers like 3.14 and a veryveryverylongtokenindeed !".split(),
    [f"w{i % 13}" for i in range(40)],
]

# Per layer (0: char-CNN, 1-2: LSTMs): bounds on the largest and the mean absolute difference
# from float32, over the mean magnitude of float32's layer. Measured values in the tests' docstrings.
TINY_BOUNDS = {
    "bfloat16": [(3.0e-2, 4.5e-3), (2.5e-2, 3.5e-3), (2.0e-2, 3.5e-3)],
    "int8": [(4.5e-2, 9.0e-3), (5.5e-2, 1.15e-2), (5.5e-2, 1.15e-2)],
}
FIXTURE_BOUNDS = {
    "bfloat16": [(3.0e-2, 3.0e-3), (3.0e-2, 3.5e-3), (2.0e-2, 3.0e-3)],
    "int8": [(6.5e-2, 7.0e-3), (8.0e-2, 8.0e-3), (5.0e-2, 5.5e-3)],
}


@pytest.fixture
def cpu_with(monkeypatch):
    """Play a CPU with the given flags (the reduced paths then run on any machine: oneDNN
    computes the same products, only slower, without the instructions)."""
    monkeypatch.setattr(precision_module, "_warned", set())

    def play(*flags: str) -> None:
        monkeypatch.setattr(precision_module, "cpu_flags", lambda: frozenset(flags))

    return play


@pytest.fixture
def capable_cpu(cpu_with):
    cpu_with("avx512f", "avx512_bf16", "avx512_vnni")


def layer_errors(bilm, sentences, precision):
    reference = numpy.concatenate(embed_layers(bilm, sentences), axis=1)
    reduced = numpy.concatenate(embed_layers(bilm, sentences, precision=precision), axis=1)
    errors = []
    for want, got in zip(reference, reduced):
        difference = numpy.abs(got - want) / numpy.abs(want).mean()
        errors.append((float(difference.max()), float(difference.mean())))
    return errors


def check_bounds(errors, bounds):
    assert len(errors) == len(bounds)
    for (largest, mean), (largest_bound, mean_bound) in zip(errors, bounds):
        assert 1e-4 < mean < mean_bound  # reduced (not float32), and close
        assert largest < largest_bound


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_tiny_model_layers_are_close_to_float32(capable_cpu, precision):
    """Measured (largest, mean) per layer: bfloat16 (2.0e-2, 3.3e-3), (1.7e-2, 2.5e-3),
    (1.3e-2, 2.5e-3); int8 (3.1e-2, 6.6e-3), (3.9e-2, 8.6e-3), (3.9e-2, 8.5e-3)."""
    check_bounds(layer_errors(random_tiny_bilm(0, scale=0.2), SENTENCES, precision), TINY_BOUNDS[precision])


@pytest.mark.parametrize("precision", ["bfloat16", "int8"])
def test_allennlp_test_model_layers_are_close_to_float32(capable_cpu, allennlp_fixtures, precision):
    """AllenNLP's test model on its 30 reference sentences. Measured (largest, mean) per layer:
    bfloat16 (2.2e-2, 2.0e-3), (2.3e-2, 2.4e-3), (1.4e-2, 1.9e-3); int8 (4.6e-2, 4.9e-3),
    (6.1e-2, 5.7e-3), (3.6e-2, 3.9e-3)."""
    bilm = BiLM.from_allennlp(allennlp_fixtures / "options.json", allennlp_fixtures / "lm_weights.hdf5")
    with h5py.File(allennlp_fixtures / "expected_allennlp_stateless.hdf5", "r") as handle:
        sentences = json.loads(handle.attrs["sentences_json"])
    check_bounds(layer_errors(bilm, sentences, precision), FIXTURE_BOUNDS[precision])


def test_float32_is_the_default_bit_for_bit():
    bilm = random_tiny_bilm(1, scale=0.2)
    default = embed_layers(bilm, SENTENCES)
    for options in ({"precision": "float32"}, {"precision": "float32", "word_cache_words": 100}):
        for want, got in zip(default, embed_layers(bilm, SENTENCES, **options)):
            assert numpy.array_equal(want, got)
    assert Embedder(bilm).settings["precision"] == "float32"


def test_without_the_instructions_float32_runs_and_one_line_says_so(cpu_with, caplog):
    cpu_with("avx2")
    bilm = random_tiny_bilm(2, scale=0.2)
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        fallback = [embed_layers(bilm, SENTENCES, precision="int8") for _ in range(2)]
    assert len(caplog.records) == 1
    assert "int8" in caplog.records[0].getMessage() and "float32" in caplog.records[0].getMessage()
    for want, got, again in zip(embed_layers(bilm, SENTENCES), *fallback):
        assert numpy.array_equal(want, got) and numpy.array_equal(want, again)
    assert Embedder(bilm, precision="int8").running_precision() == "float32"


def test_int8_vectors_do_not_depend_on_the_word_cache(capable_cpu):
    """Per-row scales and exact integer sums: a word's int8 layer 0 is the same whichever words
    it is computed with, so the cache serves what the uncached path computes."""
    bilm = random_tiny_bilm(3, scale=0.2)
    uncached = embed_layers(bilm, SENTENCES, precision="int8")
    embedder = Embedder(bilm, precision="int8", word_cache_words=100)
    for _ in range(2):  # cold, then warm
        for want, got in zip(uncached, embedder.layers(SENTENCES)):
            assert numpy.array_equal(want, got)


def test_the_setting_travels_with_copies_and_bad_values_are_refused(capable_cpu):
    bilm = random_tiny_bilm(4, scale=0.2)
    embedder = Embedder(bilm, precision="bfloat16")
    assert embedder.settings["precision"] == "bfloat16"
    assert pickle.loads(pickle.dumps(embedder)).precision == "bfloat16"
    mixed = embed(SENTENCES, bilm, precision="int8")
    assert not numpy.array_equal(mixed, embed(SENTENCES, bilm))
    for call in (lambda: Embedder(bilm, precision="fp8"), lambda: embed_layers(bilm, SENTENCES, precision="half")):
        with pytest.raises(ValueError, match="precision must be one of 'float32', 'bfloat16', 'int8'"):
            call()


@pytest.mark.parametrize("name", MANY_LANGS_MODELS)
def test_code_point_models_with_and_without_a_word_table(capable_cpu, name):
    """ELMoForManyLangs models (``words_zip`` puts word vectors before the char features, and
    its projection reads both) take the same reduced paths, with larger errors: measured (largest, mean) over the layers at most (9.8e-2, 7.1e-3) in
    bfloat16 and (1.7e-1, 1.6e-2) in int8."""
    bilm = load_bilm(MANY_LANGS_FIXTURES / f"{name}.model")
    sentences, _ = many_langs_reference(name)
    for precision, (largest_bound, mean_bound) in (("bfloat16", (0.14, 1.0e-2)), ("int8", (0.24, 2.2e-2))):
        for largest, mean in layer_errors(bilm, sentences, precision):
            assert 1e-4 < mean < mean_bound and largest < largest_bound
