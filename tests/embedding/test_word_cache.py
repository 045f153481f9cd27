"""The word cache changes speed only: outputs agree with the uncached path's within the exactness
contract's bound, stale vectors are never served after a weight change, and the LRU bound and
counters hold."""

import copy
import pickle
import random

import pytest
import torch

from spacy_elmo import Embedder, embed_layers
from spacy_elmo.embedding.word_cache import WordVectorCache
from spacy_elmo.nn import TINY_CONFIG, BiLM

from ..conftest import BATCH_BOUND, relative_difference

VOCAB = "the bank raised interest rates they sat by river a of to in and 日本 🙂 é x <S>".split()


def random_bilm(seed=0, dtype=torch.float32):
    torch.manual_seed(seed)
    model = BiLM(TINY_CONFIG)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)
    return model.to(dtype).eval()


def running_text(seed, n_sentences):
    """Zipf-like word choice with some rare made-up words, like real text."""
    rng = random.Random(seed)
    rare = ["".join(rng.choice("qwrtzpsdfghk") for _ in range(rng.randint(2, 9))) for _ in range(60)]
    words = VOCAB + rare
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    return [rng.choices(words, weights, k=rng.randint(1, 30)) for _ in range(n_sentences)]


def assert_agree(actual, expected):
    assert len(actual) == len(expected)
    assert relative_difference(expected, actual) <= BATCH_BOUND


@pytest.mark.parametrize("max_words", [1, 16, 10_000])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_cached_outputs_agree_with_uncached(max_words, dtype):
    model = random_bilm(seed=1, dtype=dtype)
    batches = [running_text(seed, 12) for seed in range(4)]
    expected = [embed_layers(model, batch, batch_sentences=5) for batch in batches]
    embedder = Embedder(model, batch_sentences=5, word_cache_words=max_words)
    for _ in range(2):  # cold, then warm
        for batch, want in zip(batches, expected):
            assert_agree(embedder.layers(batch), want)
    stats = embedder.word_cache_stats()
    assert len(embedder.word_cache) <= max_words
    assert stats.size == len(embedder.word_cache)
    if max_words == 10_000:
        assert stats.evictions == 0
        assert stats.hit_rate > 0.5


def test_hit_rate_counts_tokens_served_without_the_encoder():
    model = random_bilm()
    embedder = Embedder(model, word_cache_words=100)
    cache = embedder.word_cache
    embedder.layers([["a", "b", "a"]])
    # 3 tokens + BOS + EOS served; the encoder ran on BOS, EOS, "a", "b".
    assert (cache.stats.tokens, cache.stats.computed) == (5, 4)
    assert cache.stats.hit_rate == pytest.approx(1 / 5)
    embedder.layers([["b", "a", "c"]])
    assert (cache.stats.tokens, cache.stats.computed) == (10, 5)
    cache.reset_stats()
    embedder.layers([["a"]])
    assert cache.stats.hit_rate == 1.0
    assert embedder.word_cache_stats() is cache.stats
    embedder = Embedder(model)  # without a cache
    assert embedder.word_cache_stats() is None


def change_the_char_encoder(model):
    with torch.no_grad():
        model.char_encoder.highway.layers[0].bias.add_(0.3)  # in place: only the version changes


def change_an_lstm(model):
    with torch.no_grad():
        model.backward_lstm.layers[1].recurrent_weight.mul_(0.5)


def change_the_dtype(model):
    model.double()


@pytest.mark.parametrize(
    "change,model_seed,text_seed,n_sentences,invalidations",
    [
        pytest.param(change_the_char_encoder, 2, 3, 10, 1, id="char-encoder-change-is-never-served-stale"),
        # Layer 0 does not depend on the LSTMs: the cache is kept, and the outputs are still right.
        pytest.param(change_an_lstm, 7, 8, 8, 0, id="lstm-change-keeps-the-cache"),
        pytest.param(change_the_dtype, 9, 10, 6, None, id="dtype-change-clears-the-cache"),
    ],
)
def test_after_a_change_cached_outputs_equal_uncached(change, model_seed, text_seed, n_sentences, invalidations):
    model = random_bilm(seed=model_seed)
    text = running_text(text_seed, n_sentences)
    embedder = Embedder(model, word_cache_words=1000)
    cache = embedder.word_cache
    embedder.layers(text)
    change(model)
    cached = embedder.layers(text)
    if invalidations is not None:
        assert cache.stats.invalidations == invalidations
    assert_agree(cached, embed_layers(model, text))


def test_loading_other_weights_clears_the_cache():
    model, other = random_bilm(seed=4), random_bilm(seed=5)
    text = running_text(6, 8)
    embedder = Embedder(model, word_cache_words=1000)
    embedder.layers(text)
    model.load_state_dict(other.state_dict())
    assert_agree(embedder.layers(text), embed_layers(other, text))


def test_weights_without_version_counters_are_never_cached():
    with torch.inference_mode():
        model = random_bilm(seed=11)  # inference tensors: in-place changes are undetectable
    text = running_text(12, 5)
    embedder = Embedder(model, word_cache_words=1000)
    cache = embedder.word_cache
    first = embedder.layers(text)
    assert len(cache) == 0
    assert_agree(first, embed_layers(model, text))


def test_lru_keeps_the_most_recently_used_words():
    calls = []

    def lookup(cache, words, n_tokens, fingerprint):
        def compute(positions):
            missing = [words[p] for p in positions]
            calls.append(missing)
            return torch.tensor([[float(len(w)), float(ord(w[0]))] for w in missing])

        return cache.vectors(words, n_tokens, fingerprint, compute)

    cache = WordVectorCache(max_words=3)
    fingerprint = ("weights", 1)
    lookup(cache, ["a", "bb", "ccc"], 3, fingerprint)
    lookup(cache, ["a"], 1, fingerprint)  # "a" becomes the most recent
    out = lookup(cache, ["dddd", "bb"], 2, fingerprint)  # "bb" is a hit, "ccc" is evicted
    assert calls == [["a", "bb", "ccc"], ["dddd"]]
    assert out.tolist() == [[4.0, 100.0], [2.0, 98.0]]
    assert "ccc" not in cache and {"a", "bb", "dddd"} == {w for w in ["a", "bb", "dddd"] if w in cache}
    assert cache.stats.evictions == 1
    lookup(cache, ["a", "ccc"], 2, ("weights", 2))  # new fingerprint: everything recomputed
    assert calls[-1] == ["a", "ccc"]
    assert cache.stats.invalidations == 1 and len(cache) == 2
    with pytest.raises(ValueError):
        WordVectorCache(0)


def test_more_new_words_than_the_cache_holds():
    cache = WordVectorCache(max_words=2)
    words = ["w%d" % i for i in range(5)]
    out = cache.vectors(words, 5, "fp", lambda ps: torch.tensor(ps, dtype=torch.float32)[:, None].repeat(1, 3))
    assert out[:, 0].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert len(cache) == 2 and "w4" in cache and "w3" in cache


def test_copies_and_pickles_start_with_an_empty_cache():
    model = random_bilm()
    embedder = Embedder(model, word_cache_words=123)
    embedder.layers(running_text(0, 4))
    for clone in (copy.deepcopy(embedder), pickle.loads(pickle.dumps(embedder))):
        assert clone.word_cache is not None and clone.word_cache.max_words == 123
        assert len(clone.word_cache) == 0
        assert_agree(clone.layers([["a", "b"]]), embedder.layers([["a", "b"]]))


def test_moving_the_model_frees_what_inference_derived():
    model = random_bilm(seed=13)
    embedder = Embedder(model, word_cache_words=100)
    text = running_text(14, 4)
    embedder.layers(text)
    converted = model.forward_lstm.__dict__["_inference_weight_cache"]
    assert any(cache.value is not None for cache in converted.values())
    assert model.char_encoder._tables.value is not None
    model.double()
    assert all(cache.value is None for cache in converted.values())
    assert model.char_encoder._tables.value is None
    assert len(embedder.word_cache) == 0
    assert all(layers.dtype.name == "float32" for layers in embedder.layers(text))
