"""Per-file counts of a text classifier: summed, spaCy's cats_micro_f (the accuracy); the
paired statistics take them as task "textcat"."""

import numpy
import pytest
import spacy
from spacy.scorer import Scorer
from spacy.training import Example

from scripts.workflow.evaluation import paired_stats
from scripts.workflow.evaluation.doc_counts import GROUP_KEY, counts_of, fields_of

LABELS = ("a", "b", "c")


def example(nlp, gold: str, predicted: str, source: str) -> Example:
    reference = nlp.make_doc("some words")
    reference.cats = {label: float(label == gold) for label in LABELS}
    reference.user_data[GROUP_KEY] = source
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
