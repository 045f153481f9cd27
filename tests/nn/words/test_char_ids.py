import numpy
import pytest

from spacy_elmo.nn.words.char_ids import (
    BOS_CHAR_IDS,
    EOS_CHAR_IDS,
    MAX_WORD_LENGTH,
    encode_sentences,
    encode_word,
)


def test_ascii_word_is_framed_shifted_and_padded():
    ids = encode_word("ab")
    expected = [258, ord("a"), ord("b"), 259] + [260] * (MAX_WORD_LENGTH - 4)
    assert ids.tolist() == [i + 1 for i in expected]


def test_sentence_markers_match_the_reference_ids():
    assert BOS_CHAR_IDS[:4].tolist() == [259, 257, 260, 261]
    assert EOS_CHAR_IDS[:4].tolist() == [259, 258, 260, 261]
    assert encode_word("<S>").tolist() == BOS_CHAR_IDS.tolist()
    assert encode_word("</S>").tolist() == EOS_CHAR_IDS.tolist()


def test_long_words_are_truncated_to_48_bytes():
    ids = encode_word("x" * 1000)
    assert ids.shape == (MAX_WORD_LENGTH,)
    assert ids[49] == 259 + 1
    assert (ids[1:49] == ord("x") + 1).all()


@pytest.mark.parametrize("word", ["日本語", "🙂", "e\u0301", "\x00\x07", "\ud800", "  "])
def test_any_string_encodes_to_valid_ids(word):
    ids = encode_word(word)
    assert ids.shape == (MAX_WORD_LENGTH,)
    assert ids.min() >= 1 and ids.max() <= 261


def test_multibyte_words_use_utf8_bytes():
    raw = "é".encode("utf-8")
    assert encode_word("é")[1:3].tolist() == [raw[0] + 1, raw[1] + 1]


def test_batch_encoding_adds_boundaries_and_zero_padding():
    ids, lengths = encode_sentences([["a", "b", "c"], ["d"], []])
    assert lengths.tolist() == [5, 3, 2]
    assert ids.shape == (3, 5, MAX_WORD_LENGTH)
    assert (ids[1, 0] == BOS_CHAR_IDS).all() and (ids[1, 2] == EOS_CHAR_IDS).all()
    assert (ids[1, 3:] == 0).all()
    assert (ids[2, 0] == BOS_CHAR_IDS).all() and (ids[2, 1] == EOS_CHAR_IDS).all()


def test_empty_batch():
    ids, lengths = encode_sentences([])
    assert ids.shape[0] == 0 and lengths.shape == (0,)
    assert numpy.asarray(lengths).dtype == numpy.int64
