"""The frozen-feature cache: layers computed once per Doc while training with a frozen biLM,
never served for other weights or other tokens, within its budgets."""

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc
from spacy.training import Example

from spacy_elmo.pipeline.feature_cache import FeatureCache, doc_key

from .conftest import toy_docs


def _array(seed: int, shape=(3, 4, 8)) -> numpy.ndarray:
    return numpy.random.default_rng(seed).standard_normal(shape).astype("float32")


# ---------------------------------------------------------------- the cache itself
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


# ---------------------------------------------------------------- inside the component
@pytest.fixture
def elmo(nlp_tiny):
    component = nlp_tiny.get_pipe("elmo")
    component._ensure_weights()
    return component


def _docs(nlp, texts):
    return [nlp.make_doc(text) for text in texts]


TEXTS = ["The bank raised interest rates .", "They sat by the river bank .", "Short ."]


def test_cached_layers_equal_fresh_ones(nlp_tiny, elmo):
    first = elmo.compute_layers(_docs(nlp_tiny, TEXTS), use_cache=True)
    again = elmo.compute_layers(_docs(nlp_tiny, TEXTS), use_cache=True)
    fresh = elmo.compute_layers(_docs(nlp_tiny, TEXTS), use_cache=False)
    assert elmo.feature_cache.stats.hits == 3 and elmo.feature_cache.stats.misses == 3
    for a, b, c in zip(first, again, fresh):
        numpy.testing.assert_array_equal(a, b)
        numpy.testing.assert_allclose(b, c, atol=1e-5)


def test_changed_weights_miss_the_cache(nlp_tiny, elmo):
    before = elmo.compute_layers(_docs(nlp_tiny, TEXTS), use_cache=True)
    with torch.no_grad():
        next(elmo.bilm.parameters()).add_(0.5)
    after = elmo.compute_layers(_docs(nlp_tiny, TEXTS), use_cache=True)
    fresh = elmo.compute_layers(_docs(nlp_tiny, TEXTS), use_cache=False)
    assert elmo.feature_cache.stats.hits == 0
    for old, new, expected in zip(before, after, fresh):
        assert not numpy.allclose(old, new)
        numpy.testing.assert_allclose(new, expected, atol=1e-5)


def test_loading_weights_empties_the_cache(nlp_tiny, elmo, tiny_weights):
    elmo.compute_layers(_docs(nlp_tiny, TEXTS), use_cache=True)
    assert len(elmo.feature_cache) == 3
    elmo.load_weights(tiny_weights)
    assert len(elmo.feature_cache) == 0


def test_changed_tokens_miss_the_cache(nlp_tiny, elmo):
    elmo.compute_layers(_docs(nlp_tiny, ["The bank raised interest rates ."]), use_cache=True)
    changed = elmo.compute_layers(_docs(nlp_tiny, ["The bank raised interest fees ."]), use_cache=True)
    assert elmo.feature_cache.stats.hits == 0
    fresh = elmo.compute_layers(_docs(nlp_tiny, ["The bank raised interest fees ."]))
    numpy.testing.assert_allclose(changed[0], fresh[0], atol=1e-5)


def test_plain_inference_does_not_fill_the_cache(nlp_tiny, elmo):
    list(nlp_tiny.pipe(TEXTS))
    assert len(elmo.feature_cache) == 0


def test_cache_off_by_config(tiny_weights):
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo", config={"weights": str(tiny_weights), "feature_cache_mb": 0})
    assert elmo.feature_cache is None
    layers = elmo.compute_layers(_docs(nlp, TEXTS), use_cache=True)
    assert [x.shape[1] for x in layers] == [6, 7, 2]


def test_training_epochs_reuse_the_layers_and_leave_the_bilm_alone(tiny_weights):
    """Two epochs of nlp.update with a frozen biLM: every Doc is computed once."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights)})
    ner = nlp.add_pipe(
        "ner",
        config={
            "model": {
                "@architectures": "spacy.TransitionBasedParser.v2",
                "state_type": "ner",
                "extra_state_tokens": False,
                "hidden_width": 16,
                "maxout_pieces": 2,
                "use_upper": True,
                "tok2vec": {
                    "@architectures": "spacy_elmo.ElmoTok2Vec.v1",
                    "elmo": {"@architectures": "spacy_elmo.ElmoListener.v1", "upstream": "elmo"},
                    "embed": {
                        "@architectures": "spacy.MultiHashEmbed.v2",
                        "width": 16,
                        "attrs": ["NORM"],
                        "rows": [500],
                        "include_static_vectors": False,
                    },
                    "encode": {
                        "@architectures": "spacy.MaxoutWindowEncoder.v2",
                        "width": 16,
                        "depth": 1,
                        "window_size": 1,
                        "maxout_pieces": 2,
                    },
                },
            }
        },
    )
    assert ner is not None
    references = toy_docs(nlp, 12, seed=3)
    texts = {doc.text for doc in references}

    def examples():
        return [Example(nlp.make_doc(doc.text), doc) for doc in references]

    optimizer = nlp.initialize(examples)
    elmo = nlp.get_pipe("elmo")
    weights_before = [p.detach().clone() for p in elmo.bilm.parameters()]
    for _ in range(2):
        batch = examples()
        for start in range(0, len(batch), 4):
            nlp.update(batch[start : start + 4], sgd=optimizer)
    stats = elmo.feature_cache.stats
    assert stats.misses == len(texts)
    assert stats.hits == 2 * len(references) - len(texts)
    for before, after in zip(weights_before, elmo.bilm.parameters()):
        assert torch.equal(before, after)
    # Evaluations during training (predictions after an update) use the cache as well.
    hits = stats.hits
    nlp.evaluate(examples())
    assert stats.hits == hits + len(references)
