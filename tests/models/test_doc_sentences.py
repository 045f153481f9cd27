"""How Docs are cut into biLM sequences: sentences, windows, and no whitespace tokens."""

import numpy
import pytest
import spacy
from spacy.tokens import Doc

from spacy_elmo.embedding.plan import cut
from spacy_elmo.models.doc_layers import doc_sentences


@pytest.fixture(scope="module")
def vocab():
    return spacy.blank("en").vocab


def windows_of(docs, max_tokens):
    """The word tuples the biLM reads: each Doc sentence cut as the embedder cuts it."""
    return [
        sentence.words[window.start : window.end]
        for sentence in doc_sentences(docs)
        for window in cut(0, len(sentence.words), max_tokens)
    ]


def test_sentences_when_the_doc_has_them(vocab):
    doc = Doc(vocab, words="a b c d e".split(), sent_starts=[True, False, True, False, False])
    segments = list(doc_sentences([doc]))
    assert [s.words for s in segments] == [("a", "b"), ("c", "d", "e")]
    assert [s.positions.tolist() for s in segments] == [[0, 1], [2, 3, 4]]


def test_windows_without_sentences_and_for_long_sentences(vocab):
    plain = Doc(vocab, words=list("abcdefg"))
    assert windows_of([plain], max_tokens=3) == [tuple("abc"), tuple("def"), ("g",)]
    long_sentence = Doc(vocab, words=list("abcde"), sent_starts=[True, False, False, False, True])
    assert windows_of([long_sentence], max_tokens=2) == [("a", "b"), ("c", "d"), ("e",)]


def test_whitespace_tokens_are_left_out(vocab):
    doc = Doc(vocab, words=["a", "\n\n", "b", " ", "c"], spaces=[False] * 5)
    (segment,) = doc_sentences([doc])
    assert segment.words == ("a", "b", "c")
    numpy.testing.assert_array_equal(segment.positions, [0, 2, 4])


def test_doc_indices_and_empty_docs(vocab):
    docs = [Doc(vocab, words=[]), Doc(vocab, words=[" "], spaces=[False]), Doc(vocab, words=["x"])]
    (segment,) = doc_sentences(docs)
    assert segment.doc_index == 2


def test_max_tokens_must_be_positive(vocab):
    with pytest.raises(ValueError):
        windows_of([Doc(vocab, words=["x"])], max_tokens=0)
