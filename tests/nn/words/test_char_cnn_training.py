"""The char-CNN's training path (table lookups, sparse backward) against nn.Conv1d under autograd."""

import pytest
import torch

from spacy_elmo.config import BiLMConfig
from spacy_elmo.nn.words import char_cnn
from spacy_elmo.nn.words.char_cnn import CharEncoder
from spacy_elmo.nn.words.char_cnn_training import _without_repeated_tail, pooled_convolutions
from spacy_elmo.nn.words.char_ids import encode_word

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


def _output_and_grads(encoder: CharEncoder, ids: torch.Tensor, tables: bool, monkeypatch) -> list[torch.Tensor]:
    monkeypatch.setattr(char_cnn, "USE_TABLE_TRAINING", tables)
    encoder.zero_grad(set_to_none=True)
    output = encoder(ids)
    weights = torch.linspace(-1, 1, output.numel(), dtype=output.dtype).view_as(output)
    (output * weights).sum().backward()
    return [output.detach()] + [p.grad.clone() for p in encoder.parameters()]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("words", [WORDS, WORDS[4:5], ["a", "b"]], ids=["mixed", "longest only", "short only"])
def test_table_path_equals_convolutions_with_gradients(seed, words, monkeypatch):
    encoder = _encoder(seed)
    ids = _ids(words)
    ours = _output_and_grads(encoder, ids, True, monkeypatch)
    theirs = _output_and_grads(encoder, ids, False, monkeypatch)
    for mine, reference in zip(ours, theirs):
        torch.testing.assert_close(mine, reference, rtol=1e-10, atol=1e-12)
    assert ours[1][0].abs().sum() == 0 and ours[1][1:].abs().sum() > 0  # padding row: no gradient


def test_dropping_the_repeated_tail_changes_no_maximum():
    ids = _ids(WORDS[:4])
    short = _without_repeated_tail(ids, 4)
    # Longest word: "letter" = BOW + 6 + EOW = 8 ids, then padding from column 8 on. The all-zero row repeats from 0.
    assert short.shape[1] == 8 + 4
    encoder = _encoder(0)
    args = (
        encoder.char_embedding.weight,
        [c.weight for c in encoder.convolutions],
        [c.bias for c in encoder.convolutions],
    )
    with torch.no_grad():
        embedded = encoder.char_embedding(ids).transpose(1, 2)
        full = torch.cat([conv(embedded).amax(dim=-1) for conv in encoder.convolutions], dim=-1)
        torch.testing.assert_close(pooled_convolutions(ids, *args), full, rtol=1e-12, atol=1e-12)
    assert _without_repeated_tail(_ids(WORDS[4:5]), 4).shape[1] == 50
