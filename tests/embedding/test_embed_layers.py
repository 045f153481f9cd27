"""Invariants of the layers ``embed_layers`` gives for any weights: no leak, batch invariance,
precision, empty inputs, and the mix of ``embed``."""

import random

import numpy
import pytest
import torch

from spacy_elmo import BiLM, embed, embed_layers, mix_layers
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.nn.words.char_ids import encode_sentences

from ..conftest import BATCH_BOUND, relative_difference

P = TINY_CONFIG.projection_dim
WORDS = "the bank raised interest rates they sat by river a of to in and 日本 🙂 é x".split()


def random_bilm(seed: int = 0, dtype=torch.float32) -> BiLM:
    torch.manual_seed(seed)
    model = BiLM(TINY_CONFIG)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)  # larger than the default init, so every path matters
    return model.to(dtype).eval()


def random_sentence(rng: random.Random, length: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(length)]


def same(a, b) -> bool:
    """Equal within the exactness contract's bound for one sentence in different batches."""
    return float(numpy.abs(a - b).max()) <= BATCH_BOUND * max(1.0, float(numpy.abs(a).max()))


@pytest.fixture(scope="module")
def bilm() -> BiLM:
    return random_bilm()


def test_output_shapes_and_dtype(bilm):
    out = embed_layers(bilm, [["a", "b", "c"], ["d"]])
    assert [o.shape for o in out] == [(3, 3, 2 * P), (3, 1, 2 * P)]
    assert all(o.dtype == numpy.float32 for o in out)


@pytest.mark.parametrize("k", [0, 3, 7])
def test_forward_direction_never_sees_later_tokens(bilm, k):
    rng = random.Random(k)
    sentence = random_sentence(rng, 9)
    changed = sentence[: k + 1] + [w + "z" for w in sentence[k + 1 :]]
    before, after = embed_layers(bilm, [sentence, changed])
    # Forward halves at positions <= k agree to rounding; positions after k do change.
    assert same(before[1:, : k + 1, :P], after[1:, : k + 1, :P])
    assert same(before[0, : k + 1], after[0, : k + 1])
    assert not same(before[1:, k + 1 :, :P], after[1:, k + 1 :, :P])
    # The backward halves at <= k do see the change, so the test could fail.
    assert not same(before[1:, : k + 1, P:], after[1:, : k + 1, P:])


@pytest.mark.parametrize("k", [1, 4, 8])
def test_backward_direction_never_sees_earlier_tokens(bilm, k):
    rng = random.Random(100 + k)
    sentence = random_sentence(rng, 9)
    changed = [w + "z" for w in sentence[:k]] + sentence[k:]
    before, after = embed_layers(bilm, [sentence, changed])
    assert same(before[1:, k:, P:], after[1:, k:, P:])
    assert not same(before[1:, :k, P:], after[1:, :k, P:])
    assert not same(before[1:, k:, :P], after[1:, k:, :P])


def test_no_leak_when_the_sentence_grows(bilm):
    """Appending tokens changes only backward states (to float rounding, as shapes change)."""
    sentence = random_sentence(random.Random(7), 6)
    short, longer = embed_layers(bilm, [sentence, sentence + ["river", "bank"]])
    assert same(short[1:, :, :P], longer[1:, :6, :P])


def test_batch_invariance_against_a_mixed_batch_of_32(bilm):
    rng = random.Random(3)
    batch = [random_sentence(rng, rng.randint(0, 40)) for _ in range(32)]
    together = embed_layers(bilm, batch, batch_sentences=32)
    for sentence, layers in zip(batch, together):
        alone = embed_layers(bilm, [sentence])[0]
        assert alone.shape == layers.shape
        assert relative_difference([alone], [layers]) <= BATCH_BOUND


def test_batching_options_do_not_change_results(bilm):
    rng = random.Random(11)
    batch = [random_sentence(rng, rng.randint(1, 25)) for _ in range(20)]
    reference = embed_layers(bilm, batch, batch_sentences=64)
    for options in ({"batch_sentences": 1}, {"batch_sentences": 3}, {"batch_tokens": 30}):
        assert relative_difference(reference, embed_layers(bilm, batch, **options)) <= BATCH_BOUND


def test_float64_agrees_with_float32():
    rng = random.Random(5)
    batch = [random_sentence(rng, rng.randint(1, 30)) for _ in range(8)]
    single = embed_layers(random_bilm(seed=2), batch)
    double_model = random_bilm(seed=2, dtype=torch.float64)
    double = embed_layers(double_model, batch)
    assert all(d.dtype == numpy.float32 for d in double)  # embed_layers always returns float32
    with torch.inference_mode():
        ids, lengths = encode_sentences(batch)
        exact = double_model(torch.from_numpy(ids), torch.from_numpy(lengths)).numpy()
    for row, (s, sentence) in enumerate(zip(single, batch)):
        numpy.testing.assert_allclose(s, exact[:, row, : len(sentence)], atol=1e-4, rtol=0)


def test_states_are_fresh_per_call(bilm):
    sentence = ["the", "bank", "raised", "rates"]
    first = embed_layers(bilm, [sentence])[0]
    embed_layers(bilm, [random_sentence(random.Random(1), 30)])
    numpy.testing.assert_array_equal(first, embed_layers(bilm, [sentence])[0])


def test_empty_inputs(bilm):
    assert embed_layers(bilm, []) == []
    out = embed_layers(bilm, [[], ["a"], []])
    assert out[0].shape == (3, 0, 2 * P) and out[2].shape == (3, 0, 2 * P)
    assert out[1].shape == (3, 1, 2 * P)


def test_odd_tokens_embed_without_error(bilm):
    odd = ["x" * 1000, "🙂👍🏽", "e\u0301\u0302", "日本語の文", "\x00\x1b\x7f", " ", "\t", "Ω≈ç√", "\ud800"]
    out = embed_layers(bilm, [odd])[0]
    assert out.shape == (3, len(odd), 2 * P)
    assert numpy.isfinite(out).all()


def test_embed_mixes_and_pads(bilm):
    sentences = [["a", "b", "c"], [], ["d"]]
    mixed = embed(sentences, bilm)
    assert mixed.shape == (3, 3, 2 * P)
    layers = embed_layers(bilm, sentences)
    numpy.testing.assert_allclose(mixed[0], layers[0].mean(axis=0), atol=1e-6)
    assert (mixed[1] == 0).all() and (mixed[2, 1:] == 0).all()
    top = embed(sentences, bilm, layer_weights=[0, 0, 1], gamma=2.0)
    numpy.testing.assert_allclose(top[2, 0], 2.0 * layers[2][2, 0], atol=1e-6)


def test_mix_layers_checks_the_weight_count():
    with pytest.raises(ValueError, match="3 layers"):
        mix_layers(numpy.zeros((3, 2, 4), dtype=numpy.float32), [0.5, 0.5])
