"""Counts per source document: a text classifier's per Brown file (summed, spaCy's cats_micro_f,
the accuracy; the paired statistics take them as task "textcat"), and NER's per CoNLL-2003
document (summed, spaCy's ents_f)."""

import numpy
import pytest
import spacy
from spacy.scorer import Scorer
from spacy.training import Example

from scripts.workflow.evaluation import paired_stats
from scripts.workflow.evaluation.doc_counts import GROUP_KEYS, counts_of, fields_of

LABELS = ("a", "b", "c")


def example(nlp, gold: str, predicted: str, source: str) -> Example:
    reference = nlp.make_doc("some words")
    reference.cats = {label: float(label == gold) for label in LABELS}
    reference.user_data[GROUP_KEYS[0]] = source
    doc = nlp.make_doc("some words")
    doc.cats = {label: (0.8 if label == predicted else 0.1) for label in LABELS}
    return Example(doc, reference)


def test_counts_per_file_sum_to_spacys_accuracy():
    nlp = spacy.blank("en")
    pairs = [("a", "a", "f1"), ("b", "a", "f1"), ("c", "c", "f2"), ("a", "a", "f3"), ("b", "b", "f2")]
    examples = [example(nlp, *pair) for pair in pairs]
    counts = counts_of("textcat", examples)
    assert fields_of("textcat") == ("correct", "total")
    assert counts == [(1, 2), (2, 2), (1, 1)]  # f1, f2, f3 in order of appearance
    spacy_score = Scorer.score_cats(examples, "cats", labels=LABELS, multi_label=False)["cats_micro_f"]
    assert float(paired_stats.SCORES["textcat"](numpy.asarray(counts).sum(axis=0))) == pytest.approx(
        spacy_score, abs=1e-9
    )


def test_paired_comparison_of_textcat_counts():
    baseline = {seed: numpy.array([[5, 10]] * 30) for seed in range(2)}
    other = {seed: numpy.array([[7, 10]] * 30) for seed in range(2)}
    result = paired_stats.compare("textcat", baseline, other, resamples=200, rounds=200)
    assert result.difference == pytest.approx(0.2) and result.verdict == "gain"


def test_ner_counts_per_conll_document_sum_to_spacys_f1():
    """Sentences of one CoNLL-2003 document count as one row (the paired tests resample
    documents); a sentence that names no document counts alone; the sums give spaCy's F1."""
    from spacy.tokens import Doc

    nlp = spacy.blank("en")
    rows = [  # (document, gold tags, predicted tags)
        ("test-0000", ["B-PER", "O", "B-LOC"], ["B-PER", "O", "O"]),
        ("test-0001", ["B-ORG", "I-ORG", "O"], ["B-ORG", "I-ORG", "B-MISC"]),
        ("test-0000", ["O", "B-LOC", "O"], ["O", "B-LOC", "O"]),
        (None, ["B-PER", "O", "O"], ["B-ORG", "O", "O"]),
    ]
    examples = []
    for document, gold, predicted in rows:
        reference = Doc(nlp.vocab, words=["a", "b", "c"], ents=gold)
        if document:
            reference.user_data[GROUP_KEYS[1]] = document
        examples.append(Example(Doc(nlp.vocab, words=["a", "b", "c"], ents=predicted), reference))
    counts = counts_of("ner", examples)
    # test-0000: tp 2 (PER, LOC of its second sentence), fn 1; test-0001: tp 1, fp 1; alone: fp 1, fn 1
    assert counts == [(2, 0, 1), (1, 1, 0), (0, 1, 1)]
    spacy_f = Scorer.score_spans(examples, "ents")["ents_f"]
    assert float(paired_stats.SCORES["ner"](numpy.asarray(counts).sum(axis=0))) == pytest.approx(spacy_f, abs=1e-9)
