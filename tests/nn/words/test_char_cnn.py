"""The char-CNN's table path (CPU: summed lookups, sparse backward) against nn.Conv1d, the yardstick."""

import pytest
import torch

from spacy_elmo.config import BiLMConfig
from spacy_elmo.nn.words.char_cnn import CharEncoder
from spacy_elmo.nn.words.char_ids import encode_word
from spacy_elmo.nn.words.char_tables import _without_repeated_tail

CONFIG = BiLMConfig(
    char_embed_dim=4, filters=((1, 6), (2, 6), (3, 8), (4, 5)), n_highway=1, lstm_dim=16, projection_dim=8
)
# Repeated letters and n-grams (ties inside a word), a 48-byte word (no tail), a padding row (all ids 0).
WORDS = ["letter", "aaaa", "abab", "the", "x" * 48, "mississippi", "é", "a"]


def _ids(words: list[str]) -> torch.Tensor:
    rows = [torch.from_numpy(encode_word(w)).long() for w in words]
    return torch.stack(rows + [torch.zeros(50, dtype=torch.long)])


def _encoder(seed: int) -> CharEncoder:
    torch.manual_seed(seed)
    encoder = CharEncoder(CONFIG).double()
    with torch.no_grad():
        encoder.char_embedding.weight[0].normal_()  # a non-zero padding row must still get no gradient
    return encoder


def _output_and_grads(encoder: CharEncoder, ids: torch.Tensor, tables: bool) -> list[torch.Tensor]:
    encoder.zero_grad(set_to_none=True)
    output = encoder(ids, use_tables=tables)
    weights = torch.linspace(-1, 1, output.numel(), dtype=output.dtype).view_as(output)
    (output * weights).sum().backward()
    return [output.detach()] + [p.grad.clone() for p in encoder.parameters()]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("words", [WORDS, WORDS[4:5], ["a", "b"]], ids=["mixed", "longest only", "short only"])
def test_table_path_equals_convolutions_with_gradients(seed, words):
    encoder = _encoder(seed)
    ids = _ids(words)
    ours = _output_and_grads(encoder, ids, True)
    theirs = _output_and_grads(encoder, ids, False)
    for mine, reference in zip(ours, theirs):
        torch.testing.assert_close(mine, reference, rtol=1e-10, atol=1e-12)
    assert ours[1][0].abs().sum() == 0 and ours[1][1:].abs().sum() > 0  # padding row: no gradient
    with torch.no_grad():  # the cached tables without autograd
        torch.testing.assert_close(encoder(ids, use_tables=True), ours[0], rtol=0, atol=1e-12)


def test_dropping_the_repeated_tail_keeps_every_window_that_differs():
    ids = _ids(WORDS[:4])
    # Longest word: "letter" = BOW + 6 + EOW = 8 ids, then padding from column 8 on. The all-zero row repeats from 0.
    assert _without_repeated_tail(ids, 4).shape[1] == 8 + 4
    assert _without_repeated_tail(_ids(WORDS[4:5]), 4).shape[1] == 50


def test_cached_tables_follow_weight_changes():
    encoder = _encoder(0).eval()
    ids = _ids(WORDS)
    with torch.no_grad():
        before = encoder(ids)
        encoder.convolutions[2].weight.mul_(2.0)
        after = encoder(ids)
        expected = encoder(ids, use_tables=False)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("precision,bound", [("bfloat16", 0.02), ("int8", 0.05)])
def test_reduced_precision_dense_products_stay_close(precision, bound):
    encoder = CharEncoder(CONFIG).eval()
    ids = _ids(WORDS)
    with torch.no_grad():
        full = encoder(ids)
        reduced = encoder(ids, precision)
    error = float((reduced - full).abs().mean() / full.abs().mean())
    assert 0 < error < bound
