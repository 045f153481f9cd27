"""The elmo component's frozen-feature cache: layers computed once per Doc while training with a
frozen biLM, never served for other weights or other tokens."""

import numpy
import pytest
import spacy
import torch
from spacy.training import Example

from .conftest import toy_docs


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
