"""The fast batch encoder (``encode_padded``) gives exactly the arrays of the per-token
reference (``encode_sentences``) on awkward input: same values, dtype, shape and BOS/EOS framing."""

import random

import numpy
import pytest

from spacy_elmo.nn.words.char_ids import BOS_CHAR_IDS, EOS_CHAR_IDS, MAX_WORD_BYTES, MAX_WORD_LENGTH, encode_sentences
from spacy_elmo.nn.words.word_batch import encode_padded

# spaCy refuses empty-string tokens in a Doc, but BiLM.embed_layers takes plain lists of strings,
# so both encoders must agree on "" as well.
AWKWARD_WORDS = [
    "",
    " ",
    "\n",
    "\x00",
    "a" * 1000,
    "é" * 1000,  # 2-byte characters: the 48-byte cut falls between characters
    "日本語" * 333,  # 3-byte characters: the cut falls inside one
    "🙂" * 1000,  # 4-byte characters
    "👩‍👩‍👧‍👦",  # ZWJ sequence: 25 bytes, one glyph
    "👍🏽",
    "x" * (MAX_WORD_BYTES - 1) + "é",  # 49 bytes: cut inside the last character
    "x" * MAX_WORD_BYTES,
    "x" * (MAX_WORD_BYTES + 1),
    "Москва",
    "القاهرة",
    "नमस्ते",
    "ภาษาไทย",
    "한국어",
    "東京",
    "e\u0301",  # combining accent
    "\ud800",  # lone surrogate
    "<S>",
    "</S>",
    "<s>",
    "<S>x",
    "The",
    ".",
]


def sentences_of(seed, n_sentences, max_len):
    rng = random.Random(seed)
    return [[rng.choice(AWKWARD_WORDS) for _ in range(rng.randint(0, max_len))] for _ in range(n_sentences)]


def assert_same_encoding(sentences, add_boundaries):
    want_ids, want_lengths = encode_sentences(sentences, add_boundaries)
    got_ids, got_lengths = encode_padded(sentences, add_boundaries)
    for want, got in ((want_ids, got_ids), (want_lengths, got_lengths)):
        assert got.dtype == want.dtype == numpy.int64
        assert got.shape == want.shape
        numpy.testing.assert_array_equal(got, want)
    return got_ids, got_lengths


BATCHES = {
    "every awkward word alone": [[word] for word in AWKWARD_WORDS],
    "all awkward words in one sentence": [AWKWARD_WORDS],
    "mixed lengths": sentences_of(1, 30, 40),
    "plain words with literal boundaries": [
        random.Random(4).choices("the bank 日本 🙂 é <S> </S>".split() + ["x" * 60], k=n) for n in (0, 3, 12, 7, 1)
    ],
    "one long sentence among short ones": [["a"], AWKWARD_WORDS * 8, [], ["🙂" * 1000, ""]],
    "only empty words": [[""], ["", ""], []],
    "only empty sentences": [[], []],
    "one empty sentence": [[]],
    "no sentences": [],
    "tuples, as segments hold them": [tuple(s) for s in sentences_of(2, 10, 12)],
}


@pytest.mark.parametrize("add_boundaries", [True, False])
@pytest.mark.parametrize("name", list(BATCHES))
def test_fast_encoder_equals_reference(name, add_boundaries):
    assert_same_encoding(BATCHES[name], add_boundaries)


@pytest.mark.parametrize("seed", range(5))
def test_fast_encoder_equals_reference_on_random_batches(seed):
    for add_boundaries in (True, False):
        assert_same_encoding(sentences_of(seed + 10, 1 + seed * 7, 1 + seed * 9), add_boundaries)


def test_boundaries_frame_each_sentence_and_padding_is_zero():
    sentences = [["日本", "", "🙂" * 100], [], ["a"]]
    ids, lengths = assert_same_encoding(sentences, add_boundaries=True)
    assert ids.shape == (3, 5, MAX_WORD_LENGTH)
    assert lengths.tolist() == [5, 2, 3]
    for row, sentence in enumerate(sentences):
        numpy.testing.assert_array_equal(ids[row, 0], BOS_CHAR_IDS)
        numpy.testing.assert_array_equal(ids[row, len(sentence) + 1], EOS_CHAR_IDS)
        assert not ids[row, len(sentence) + 2 :].any()
    ids, lengths = assert_same_encoding(sentences, add_boundaries=False)
    assert ids.shape == (3, 3, MAX_WORD_LENGTH) and lengths.tolist() == [3, 0, 1]
    assert not ids[1].any()
