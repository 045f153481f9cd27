"""``spacy_elmo.BiLM.v1``: lazy construction, layers per Doc, batching budget, gradients,
and serialization that carries the biLM's own sizes (and no pickle).
"""

import numpy
import pytest
import spacy
import torch
from spacy.tokens import Doc
from spacy.util import registry

import spacy_elmo.embedding.embedder as embedder_module
import spacy_elmo.models.doc_layers as doc_layers_module
from spacy_elmo import BiLM, embed_layers
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.models import build_bilm_model, get_bilm, set_bilm
from spacy_elmo.models.doc_layers import get_embedder

TINY_SIZES = dict(
    char_embed_dim=TINY_CONFIG.char_embed_dim,
    filters=[list(f) for f in TINY_CONFIG.filters],
    n_highway=TINY_CONFIG.n_highway,
    lstm_dim=TINY_CONFIG.lstm_dim,
    projection_dim=TINY_CONFIG.projection_dim,
    n_layers=TINY_CONFIG.n_layers,
)


@pytest.fixture(scope="module")
def vocab():
    return spacy.blank("en").vocab


@pytest.fixture
def bilm():
    torch.manual_seed(0)
    return BiLM(TINY_CONFIG).eval()


def docs_of(vocab, *texts):
    return [Doc(vocab, words=text.split()) for text in texts]


def test_registered_and_lazy():
    model = registry.architectures.get("spacy_elmo.BiLM.v1")()  # original ELMo sizes
    assert get_bilm(model) is None  # nothing allocated until initialize or weights
    assert model.maybe_get_dim("nO") is None


def test_initialize_builds_the_configured_size():
    model = build_bilm_model(**TINY_SIZES)
    model.initialize()
    assert get_bilm(model).config == TINY_CONFIG
    assert (model.get_dim("nL"), model.get_dim("nO")) == (3, TINY_CONFIG.output_dim)


def test_layers_per_doc_match_embed_layers(vocab, bilm):
    model = build_bilm_model()
    set_bilm(model, bilm)
    docs = docs_of(vocab, "the river bank", "", "a much longer sentence with more words")
    outputs = model.predict(docs)
    expected = embed_layers(bilm, [[t.text for t in doc] for doc in docs])
    for out, ref in zip(outputs, expected):
        assert out.dtype == numpy.float32 and out.shape == ref.shape
        numpy.testing.assert_allclose(out, ref, rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "word_cache_words,module,spied,train",
    [
        (0, embedder_module, "run_batch", False),
        (100, embedder_module, "run_batch", False),
        (100, doc_layers_module, "encode_padded", True),
    ],
)
def test_batches_respect_the_token_budget(vocab, bilm, monkeypatch, word_cache_words, module, spied, train):
    shapes = []
    original = getattr(module, spied)

    def spy(*args, **kwargs):
        sentences = args[1] if spied == "run_batch" else args[0]
        shapes.append((len(sentences), max(len(s) for s in sentences)))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, spied, spy)
    model = build_bilm_model(max_tokens=8, batch_max_tokens=20, word_cache_words=word_cache_words)
    set_bilm(model, bilm)
    docs = [Doc(vocab, words=[f"w{i}" for i in range(n)]) for n in (50, 3, 17, 8)]
    outputs = model.begin_update(docs)[0] if train else model.predict(docs)
    assert [o.shape[1] for o in outputs] == [50, 3, 17, 8]
    assert len(shapes) >= 5  # 78 tokens in windows of at most 8, at most 20 tokens per batch
    assert all(n * longest <= 20 for n, longest in shapes)
    assert all(longest <= 8 for _, longest in shapes)


def test_word_cache_path_computes_the_char_id_path(vocab, bilm):
    """Prediction reads layer 0 from the word cache (default on); outputs do not change."""
    texts = ["the river bank", "", "the bank raised rates", "they sat by the river bank"]
    plain = build_bilm_model(word_cache_words=0)
    set_bilm(plain, bilm)
    expected = plain.predict(docs_of(vocab, *texts))
    assert get_embedder(plain).word_cache is None
    cached = build_bilm_model(word_cache_words=100)
    set_bilm(cached, bilm)
    for _ in range(2):
        for out, ref in zip(cached.predict(docs_of(vocab, *texts)), expected):
            assert out.shape == ref.shape
            numpy.testing.assert_allclose(out, ref, rtol=0, atol=1e-6)
    stats = get_embedder(cached).word_cache_stats()
    assert stats.max_words == 100 and stats.hit_rate > 0.5


def test_training_reads_layer_0_from_the_encoder(vocab, bilm):
    model = build_bilm_model(word_cache_words=100)
    set_bilm(model, bilm)
    outputs, backprop = model.begin_update(docs_of(vocab, "the river bank"))
    backprop([numpy.ones_like(o) for o in outputs])
    assert get_embedder(model).word_cache_stats().tokens == 0  # gradients flow through the char-CNN: no cache
    assert bilm.char_encoder.projection.weight.grad is not None


def test_negative_word_cache_size_is_an_error():
    with pytest.raises(ValueError, match="word_cache_words"):
        build_bilm_model(word_cache_words=-1)


def test_backprop_reaches_the_torch_parameters(vocab, bilm):
    model = build_bilm_model()
    set_bilm(model, bilm)
    docs = docs_of(vocab, "the river bank", "they sat")
    outputs, backprop = model.begin_update(docs)
    assert backprop([numpy.ones_like(o) for o in outputs]) == []
    grads = [p.grad for p in bilm.parameters()]
    assert all(g is not None for g in grads)
    assert any(float(g.abs().sum()) > 0 for g in grads)


def test_predict_builds_no_graph(vocab, bilm):
    model = build_bilm_model()
    set_bilm(model, bilm)
    model.predict(docs_of(vocab, "a b c"))
    assert all(p.grad is None for p in bilm.parameters())


def test_bytes_carry_the_sizes_and_no_pickle(vocab, bilm, monkeypatch):
    model = build_bilm_model(**TINY_SIZES)
    set_bilm(model, bilm)
    data = model.to_bytes()
    assert b"PK\x03\x04" not in data

    def refuse(*args, **kwargs):
        raise AssertionError("no torch.load")

    monkeypatch.setattr(torch, "load", refuse)
    restored = build_bilm_model().from_bytes(data)  # built with the default (huge) sizes
    assert get_bilm(restored).config == TINY_CONFIG
    docs = docs_of(vocab, "the river bank")
    numpy.testing.assert_array_equal(restored.predict(docs)[0], model.predict(docs)[0])


def test_uninitialized_model_has_a_clear_error(vocab):
    with pytest.raises(ValueError, match="no weights"):
        build_bilm_model().predict(docs_of(vocab, "a"))
