"""The code-point encoding (ELMoForManyLangs') and the char-CNN on large alphabets."""

import random

import numpy
import pytest
import torch

from spacy_elmo.config import CHAR_MARKERS, BiLMConfig, Lexicon
from spacy_elmo.nn import BiLM
from spacy_elmo.nn.words import char_tables
from spacy_elmo.nn.words.code_points import CodePointEncoding
from spacy_elmo.nn.words.word_batch import encode_padded

CHARS = {c: i for i, c in enumerate("abcdeéß北😀")}
for marker in CHAR_MARKERS:
    CHARS[marker] = len(CHARS)
WORDS = {"<oov>": 0, "<bos>": 1, "<eos>": 2, "<pad>": 3, "abc": 4, "abcdefg": 5}


def config(word_dim=0, n_chars=len(CHARS), max_chars=9, **changes):
    return BiLMConfig(
        char_embed_dim=3,
        filters=((1, 4), (2, 5), (3, 6)),
        n_highway=1,
        lstm_dim=8,
        projection_dim=4,
        n_layers=2,
        char_encoding="code_points",
        max_characters_per_token=max_chars,
        n_characters=n_chars + 1,
        word_dim=word_dim,
        n_words=len(WORDS) + 1 if word_dim else 0,
        **changes,
    )


def shifted(entry):
    return CHARS[entry] + 1


def test_a_word_is_their_marks_its_code_points_and_padding():
    ids = CodePointEncoding(config(), Lexicon(CHARS)).ids(["aß😀", "xz", ""])
    begin, end, pad, oov = shifted("<eow>"), shifted("<bow>"), shifted("<pad>"), shifted("<oov>")
    assert ids.shape == (3, 9)
    assert ids[0].tolist() == [begin, shifted("a"), shifted("ß"), shifted("😀"), end] + [pad] * 4
    assert ids[1].tolist() == [begin, oov, oov, end] + [pad] * 5  # unknown characters
    assert ids[2].tolist() == [begin, end] + [pad] * 7


def test_long_words_are_cut_and_marker_words_get_the_marks():
    encoding = CodePointEncoding(config(), Lexicon(CHARS))
    long, cut = encoding.ids(["abcdeabcdeab", "abcdeab"])
    numpy.testing.assert_array_equal(long, cut)  # cut to max_chars - 2 code points
    bos, literal = encoding.ids(["<bos>", "<eos>"])
    assert bos[:3].tolist() == [shifted("<eow>"), shifted("<bos>"), shifted("<bow>")]
    assert literal[1] == shifted("<eos>") and set(bos[3:].tolist()) == {shifted("<pad>")}


def test_word_ids_follow_the_cut_word():
    encoding = CodePointEncoding(config(word_dim=2), Lexicon(CHARS, WORDS))
    ids = encoding.ids(["abc", "abcdefgXYZ", "nope", "<bos>"])
    assert ids.shape == (4, 10)
    assert ids[:, -1].tolist() == [5, 6, 1, 2]  # ids + 1; "abcdefgXYZ" is looked up as "abcdefg"


def test_lone_surrogates_and_characters_past_the_table_are_unknown():
    ids = CodePointEncoding(config(), Lexicon(CHARS)).ids(["\ud800\U0010ffff"])
    assert ids[0, 1:3].tolist() == [shifted("<oov>")] * 2


def test_padded_batches_frame_sentences_with_their_marks():
    encoding = CodePointEncoding(config(), Lexicon(CHARS))
    ids, lengths = encode_padded([["ab"], ["a", "b", "c"]], encoding=encoding)
    assert lengths.tolist() == [3, 5] and ids.shape == (2, 5, 9)
    numpy.testing.assert_array_equal(ids[0, 0], encoding.ids(["<bos>"])[0])
    numpy.testing.assert_array_equal(ids[0, 2], encoding.ids(["<eos>"])[0])
    assert not ids[0, 3:].any()


def test_a_code_point_model_needs_dictionaries_that_fit():
    with pytest.raises(ValueError, match="needs its char dictionary"):
        BiLM(config())
    with pytest.raises(ValueError, match="lacks <pad>"):
        BiLM(config(), lexicon=Lexicon({k: v for k, v in CHARS.items() if k != "<pad>"}))
    with pytest.raises(ValueError, match="no char dictionary"):
        BiLM(BiLMConfig(), lexicon=Lexicon(CHARS))
    with pytest.raises(ValueError, match="at least 7"):
        config(max_chars=6)


def random_model(n_chars: int, word_dim: int = 0, seed: int = 0) -> tuple[BiLM, list[str]]:
    rng = random.Random(seed)
    letters = [chr(0x4E00 + i) for i in range(n_chars - len(CHAR_MARKERS))]
    chars = {c: i for i, c in enumerate(letters + list(CHAR_MARKERS))}
    words = {**WORDS, **{w: 6 + i for i, w in enumerate(letters[:20])}} if word_dim else None
    cfg = config(word_dim=word_dim, n_chars=len(chars)).replace(n_words=len(words) + 1 if words else 0)
    torch.manual_seed(seed)
    bilm = BiLM(cfg, lexicon=Lexicon(chars, words))
    with torch.no_grad():
        for parameter in bilm.parameters():
            parameter.normal_(0.0, 0.5)
    vocabulary = ["".join(rng.choice(letters) for _ in range(rng.randint(1, 9))) for _ in range(300)]
    return bilm.eval(), vocabulary + letters[:20]


@pytest.mark.parametrize("word_dim", [0, 3])
def test_large_alphabets_use_tables_of_the_characters_in_use(monkeypatch, word_dim):
    """Only the used rows are computed; the results equal the full tables' and the convolutions',
    with and without autograd, and the padding row gets no gradient."""
    bilm, words = random_model(200, word_dim)
    ids = torch.from_numpy(bilm.token_ids(words))
    with torch.no_grad():
        full = bilm.encode_words(ids)
        convolved = bilm.char_encoder(ids, use_tables=False)
    numpy.testing.assert_allclose(convolved.numpy(), full.numpy(), atol=1e-5, rtol=0)
    monkeypatch.setattr(char_tables, "FULL_TABLE_FLOATS", 0)
    assert not char_tables.uses_full_table(bilm.config.n_characters, bilm.config.filters)
    with torch.no_grad():
        compact = bilm.encode_words(ids)
        alone = bilm.encode_words(ids[37:42])
    numpy.testing.assert_allclose(compact.numpy(), full.numpy(), atol=1e-5, rtol=0)
    numpy.testing.assert_allclose(alone.numpy(), compact[37:42].numpy(), atol=1e-5, rtol=0)
    bilm.train()
    with torch.enable_grad():
        trained = bilm.char_encoder(ids)
        trained.sum().backward()
    numpy.testing.assert_allclose(trained.detach().numpy(), full.numpy(), atol=1e-5, rtol=0)
    used = torch.unique(ids[:, : bilm.config.max_characters_per_token])
    grad = bilm.char_encoder.char_embedding.weight.grad
    assert grad[0].abs().sum() == 0 and grad[used[1:]].abs().sum() > 0


def test_the_compact_training_path_has_the_convolutions_gradient(monkeypatch):
    bilm, words = random_model(60)
    ids = torch.from_numpy(bilm.token_ids(words[:40]))
    bilm.train()
    grads = []
    for use_tables, limit in ((False, char_tables.FULL_TABLE_FLOATS), (True, 0)):
        monkeypatch.setattr(char_tables, "FULL_TABLE_FLOATS", limit)
        bilm.zero_grad()
        (bilm.char_encoder(ids, use_tables=use_tables) ** 2).sum().backward()
        grads.append([p.grad.clone() for p in bilm.char_encoder.parameters()])
    for reference, compact in zip(*grads):
        numpy.testing.assert_allclose(compact.numpy(), reference.numpy(), atol=1e-4, rtol=1e-4)
