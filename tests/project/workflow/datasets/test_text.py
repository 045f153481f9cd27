"""Sentence splitting and line cutting of the pretraining text (scripts/workflow/datasets/text.py)."""

from scripts.workflow.datasets import text as text_corpus


def test_sentence_splitting_and_length_limit():
    split = list(text_corpus.split_sentences('A b . " C d ! ? E'.split()))
    assert split == [["A", "b", ".", '"'], ["C", "d", "!", "?"], ["E"]]
    pieces = list(text_corpus.limit_length(["x"] * 6 + [";"] + ["y"] * 5, 8))
    assert pieces == [["x"] * 6 + [";"], ["y"] * 5]
    assert list(text_corpus.limit_length(["x"] * 9, 4)) == [["x"] * 4, ["x"] * 4, ["x"]]
