"""The frozen-feature cache on its own: copies in and out, its budgets in memory and on disk,
and the key of a Doc (its tokens and sentences)."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo.models.feature_cache import FeatureCache, doc_key


def _array(seed: int, shape=(3, 4, 8)) -> numpy.ndarray:
    return numpy.random.default_rng(seed).standard_normal(shape).astype("float32")


def test_values_are_copied_in_and_out():
    cache = FeatureCache(max_memory_mb=1)
    value = _array(0)
    cache.put(b"a", value)
    value[:] = 0
    first = cache.get(b"a")
    first[:] = 1
    numpy.testing.assert_array_equal(cache.get(b"a"), _array(0))
    assert cache.get(b"b") is None
    assert (cache.stats.hits, cache.stats.misses) == (2, 1)


def test_memory_budget_is_respected_without_a_disk():
    value = _array(0, shape=(64, 64, 64))  # 1 MB
    cache = FeatureCache(max_memory_mb=2.5)
    stored = [cache.put(bytes([i]), value) for i in range(4)]
    assert stored == [True, True, False, False]
    assert cache.stats.memory_bytes <= 2.5 * 1024 * 1024
    assert cache.get(bytes([0])) is not None and cache.get(bytes([3])) is None
    assert cache.stats.not_stored == 2


def test_what_does_not_fit_spills_to_a_private_folder(tmp_path):
    cache = FeatureCache(max_memory_mb=0.0005, disk_dir=tmp_path, max_disk_mb=1)  # one 384-byte entry
    values = [_array(i) for i in range(3)]
    for i, value in enumerate(values):
        assert cache.put(bytes([i]), value)
    assert cache.stats.memory_entries >= 1 and cache.stats.disk_entries >= 1
    for i, value in enumerate(values):
        numpy.testing.assert_array_equal(cache.get(bytes([i])), value)
    (spill,) = list(tmp_path.iterdir())
    assert len(list(spill.glob("*.npy"))) == cache.stats.disk_entries
    cache.clear()
    assert not spill.exists() and len(cache) == 0
    assert cache.get(bytes([0])) is None


def test_spill_folder_is_removed_with_the_cache(tmp_path):
    cache = FeatureCache(max_memory_mb=0, disk_dir=tmp_path)
    cache.put(b"a", _array(0))
    assert list(tmp_path.iterdir())
    del cache
    assert not list(tmp_path.iterdir())


def test_a_new_fingerprint_empties_the_cache():
    cache = FeatureCache(max_memory_mb=1)
    cache.bind(("weights", 1))
    cache.put(b"a", _array(0))
    cache.bind(("weights", 1))
    assert cache.get(b"a") is not None
    cache.bind(("weights", 2))
    assert cache.get(b"a") is None


def test_negative_budgets_are_refused():
    with pytest.raises(ValueError, match="negative"):
        FeatureCache(max_memory_mb=-1)


def test_doc_key_follows_tokens_and_sentences():
    nlp = spacy.blank("en")
    doc = nlp.make_doc("The bank raised rates . They sat .")
    same = nlp.make_doc("The bank raised rates . They sat .")
    assert doc_key(doc) == doc_key(same)
    assert doc_key(doc) != doc_key(nlp.make_doc("The bank raised rates . They stood ."))
    # the biLM sees tokens, not whitespace: same tokens, same key; a different split, another key
    assert doc_key(doc) == doc_key(nlp.make_doc("The bank raised rates. They sat."))
    assert doc_key(Doc(nlp.vocab, words=["rates."])) != doc_key(Doc(nlp.vocab, words=["rates", "."]))
    assert doc_key(doc) != doc_key(doc, extra=b"256")
    split = nlp.make_doc("The bank raised rates . They sat .")
    for token in split:
        token.is_sent_start = token.i in (0, 5)
    assert doc_key(split) != doc_key(doc)
