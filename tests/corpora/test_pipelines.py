"""The spaCy pipelines that tokenize and split sentences, and the spans a Doc gives."""

from __future__ import annotations

import spacy

from spacy_elmo.corpora.pipelines import blank_with_sentencizer, load_pipeline, sentence_spans, splits_sentences


def test_a_language_code_gives_a_blank_pipeline_that_splits_sentences():
    nlp = load_pipeline("en")
    assert nlp.pipe_names == ["sentencizer"] and splits_sentences(nlp)
    assert [span.text for span in sentence_spans(nlp("One here. Two there."))] == ["One here.", "Two there."]


def test_a_pipeline_path_without_a_splitter_gets_a_sentencizer(tmp_path):
    spacy.blank("en").to_disk(tmp_path / "plain")
    nlp = load_pipeline(str(tmp_path / "plain"))
    assert "sentencizer" in nlp.pipe_names
    kept = blank_with_sentencizer("en")
    kept.to_disk(tmp_path / "with")
    assert load_pipeline(str(tmp_path / "with")).pipe_names == ["sentencizer"]


def test_a_doc_without_boundaries_is_one_span():
    doc = spacy.blank("en")("One here. Two there.")
    assert not splits_sentences(spacy.blank("en"))
    assert [span.text for span in sentence_spans(doc)] == ["One here. Two there."]
