"""Records to sentences: spaCy's sentencizer, limits on tokens and sentences, Docs kept as they are."""

from __future__ import annotations

import spacy

from spacy_elmo.pretrain.data.sentences import SentenceSplitter
from spacy_elmo.pretrain.settings import CorpusSettings


def split(settings, payloads):
    return [sentences for _, sentences in SentenceSplitter(settings).split(enumerate(payloads))]


def test_default_pipeline_tokenizes_and_splits_sentences():
    result = split(CorpusSettings(), ["Hello world. It's here!", "One more"])
    assert result == [[["Hello", "world", "."], ["It", "'s", "here", "!"]], [["One", "more"]]]


def test_long_tokens_are_cut_and_long_sentences_split():
    settings = CorpusSettings(max_token_chars=5, max_sentence_tokens=3)
    splitter = SentenceSplitter(settings)
    [(_, sentences)] = list(splitter.split([(0, "a " * 7 + "x" * 1000)]))
    assert sentences == [["a"] * 3, ["a"] * 3, ["a", "xxxxx"]]
    assert splitter.stats.cut_tokens == 1 and splitter.stats.split_sentences == 1


def test_pretokenized_lines_are_one_sentence_split_on_whitespace():
    result = split(CorpusSettings(pretokenized=True), ["Mr. Smith went .  It 's"])
    assert result == [[["Mr.", "Smith", "went", ".", "It", "'s"]]]


def test_docs_with_sentences_keep_their_tokens_and_boundaries():
    nlp = spacy.blank("en")
    doc = nlp.make_doc("no split here . but here")
    for token in doc:
        token.is_sent_start = token.i in (0, 3)
    result = split(CorpusSettings(), [doc, "Plain text. Two."])
    assert result[0] == [["no", "split", "here"], [".", "but", "here"]]
    assert result[1] == [["Plain", "text", "."], ["Two", "."]]


def test_whitespace_only_and_empty_records_give_no_sentences():
    assert split(CorpusSettings(), ["   \t "]) == [[]]


def test_a_pipeline_without_sentence_splitting_gives_one_sentence_per_record():
    splitter = SentenceSplitter(CorpusSettings(), nlp=spacy.blank("en"))
    [(_, sentences)] = list(splitter.split([(0, "One. Two.")]))
    assert sentences == [["One", ".", "Two", "."]]


def test_docs_without_sentences_go_through_the_sentencizer():
    doc = spacy.blank("en").make_doc("First one. Second one.")
    assert split(CorpusSettings(), [doc]) == [[["First", "one", "."], ["Second", "one", "."]]]
