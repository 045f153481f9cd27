"""The distillation targets: each target setting against the biLM's own layers, whitespace,
the cache (float16, reuse, budget), the lazy and frozen biLM, and errors naming the setting."""

from __future__ import annotations

import numpy
import pytest
import spacy

from spacy_elmo import Embedder, embed_layers
from spacy_elmo.models.tok2vec_objectives import ElmoTargets, compact

from ..conftest import random_tiny_bilm

TEXTS = ["The bank raised its rates .", "Mary  saw the river bank .\n\nIt was cold ."]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("distil_bilm") / "bilm"
    random_tiny_bilm().to_disk(path)
    return path


@pytest.fixture(scope="module")
def docs():
    nlp = spacy.blank("en")
    return [nlp.make_doc(text) for text in TEXTS]


def reference_layers(docs):
    """The biLM's layers per Doc, whitespace tokens left out (as the biLM never reads them)."""
    bilm = random_tiny_bilm()
    words = [[t.text for t in doc if not t.is_space] for doc in docs]
    return bilm, embed_layers(bilm, words)


def word_rows(docs):
    return numpy.asarray([not t.is_space for doc in docs for t in doc])


@pytest.mark.parametrize("target", ["average", "layers", "mix"])
def test_each_target_is_the_biLMs_layers(weights, docs, target):
    layer_weights = [0.2, 0.3, 0.5] if target == "mix" else None
    targets = ElmoTargets(weights, target, layer_weights)
    rows, token_weights = targets(docs)
    _, layers = reference_layers(docs)
    words = word_rows(docs)
    assert rows.dtype == numpy.float32 and rows.shape == (len(words), targets.width)
    assert token_weights.tolist() == words.astype("float32").tolist()
    assert not rows[~words].any()  # whitespace: a zero target (and weight 0)
    stacked = numpy.concatenate(layers, axis=1)  # (L+1, n_words, D)
    if target == "average":
        expected = stacked.mean(axis=0)
    elif target == "mix":
        expected = numpy.tensordot(numpy.asarray(layer_weights, "float32"), stacked, axes=(0, 0))
    else:
        expected = stacked.transpose(1, 0, 2).reshape(stacked.shape[1], -1)
    assert targets.n_groups == (3 if target == "layers" else 1)
    # float16 storage: each value within half a unit in the last place of float16
    assert numpy.allclose(rows[words], expected, rtol=2**-11, atol=1e-7)
    assert not numpy.array_equal(rows[words], expected)  # rounded, as documented


def test_cache_reuses_float16_targets_within_its_budget(weights, docs, monkeypatch):
    targets = ElmoTargets(weights, "layers", cache_mb=1)
    first, _ = targets(docs)
    n_tokens = sum(len(doc) for doc in docs)
    assert targets.cache_stats.misses == 2 and targets.cache_stats.memory_entries == 2
    assert targets.cache_stats.memory_bytes == n_tokens * targets.width * 2  # float16: 2 bytes a value

    def no_biLM(*args, **kwargs):
        raise AssertionError("a cached Doc must not run the biLM")

    monkeypatch.setattr(Embedder, "run", no_biLM)
    second, _ = targets(docs)
    assert numpy.array_equal(first, second) and targets.cache_stats.hits == 2


def test_a_full_cache_recomputes_the_same_targets(weights, docs):
    cached, _ = ElmoTargets(weights, "average", cache_mb=1)(docs)
    targets = ElmoTargets(weights, "average", cache_mb=0)
    assert numpy.array_equal(targets(docs)[0], cached) and numpy.array_equal(targets(docs)[0], cached)
    assert targets.cache_stats.hits == 0 and targets.cache_stats.not_stored == 4


def test_values_beyond_float16_stay_float32():
    assert compact(numpy.ones((2, 3), "float32")).dtype == numpy.float16
    assert compact(numpy.full((2, 3), 1e6, "float32")).dtype == numpy.float32


def test_the_biLM_is_read_at_first_use_and_never_trained(tmp_path, docs):
    path = tmp_path / "bilm"
    targets = ElmoTargets(path, "average")  # nothing there yet: not read
    assert not targets.loaded
    random_tiny_bilm().to_disk(path)
    targets(docs)
    assert targets.loaded
    assert not any(p.requires_grad for p in targets.bilm.parameters()) and not targets.bilm.training


def test_missing_or_mismatched_weights_name_the_setting(tmp_path, weights, docs):
    with pytest.raises(FileNotFoundError, match=r"PretrainElmo.v1 weights: No biLM weights at .*nowhere"):
        ElmoTargets(tmp_path / "nowhere").load()
    with pytest.raises(ValueError, match=r"weights is not set: .*--paths.elmo"):
        ElmoTargets(None).load()
    with pytest.raises(ValueError, match="layer_weights has 2 values but the biLM at .* has 3 layers"):
        ElmoTargets(weights, "mix", [0.5, 0.5]).load()


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"target": "top"}, "target must be one of 'average', 'layers', 'mix', not 'top'"),
        ({"target": "mix"}, 'target = "mix" needs layer_weights'),
        ({"target": "mix", "layer_weights": [0, 0, 0]}, "layer_weights must be finite and not all zero"),
        ({"target": "average", "layer_weights": [1, 0, 0]}, 'layer_weights is only used with target = "mix"'),
        ({"cache_mb": -1}, "cache_mb must be 0 or more, not -1"),
    ],
)
def test_bad_settings_name_the_setting(settings, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("+", r"\+")):
        ElmoTargets("unused", **settings)
