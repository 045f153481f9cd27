"""Invariants of the biLM's forward pass that hold for any weights (the layers read through
``embed_layers`` are tested in tests/embedding/test_embed_layers.py)."""

import random

import pytest
import torch

from spacy_elmo import BiLM
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.nn.words.char_ids import encode_sentences

WORDS = "the bank raised interest rates they sat by river a of to in and 日本 🙂 é x".split()


@pytest.fixture(scope="module")
def bilm() -> BiLM:
    torch.manual_seed(0)
    model = BiLM(TINY_CONFIG)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)  # larger than the default init, so every path matters
    return model.eval()


def random_sentence(rng: random.Random, length: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(length)]


def test_skipping_the_final_boundary_step_changes_only_the_boundaries(bilm):
    rng = random.Random(7)
    sentences = [random_sentence(rng, n) for n in (5, 1, 9, 3)]
    ids, lengths = encode_sentences(sentences)
    ids_t, lengths_t = torch.from_numpy(ids), torch.from_numpy(lengths)
    with torch.no_grad():
        full = bilm.contextualize(ids_t, lengths_t)
        short = bilm.contextualize(ids_t, lengths_t, final_boundary=False)
    for row, sentence in enumerate(sentences):
        eos = len(sentence) + 1
        for f_full, f_short, b_full, b_short in zip(full.forward, short.forward, full.backward, short.backward):
            torch.testing.assert_close(f_short[row, :eos], f_full[row, :eos], atol=1e-6, rtol=0)
            torch.testing.assert_close(b_short[row, 1 : eos + 1], b_full[row, 1 : eos + 1], atol=1e-6, rtol=0)
            assert (f_short[row, eos] == 0).all() and (f_full[row, eos] != 0).any()
            assert (b_short[row, 0] == 0).all() and (b_full[row, 0] != 0).any()
