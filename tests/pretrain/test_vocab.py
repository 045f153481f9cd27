"""The output vocabulary: specials first, then by frequency, built in one bounded pass."""

from __future__ import annotations

import json

import pytest

from spacy_elmo.pretrain.vocab import SPECIALS, Vocabulary, WordCounter, build_vocabulary, with_counts


def count_sentences(sentences):
    counter = WordCounter()
    for sentence in sentences:
        counter.add(sentence)
    return counter


def test_most_frequent_words_after_the_specials():
    counter = count_sentences([["b", "a", "b"], ["c", "b", "a"], ["d"]])
    vocab = build_vocabulary(counter, size=6)
    assert vocab.words == list(SPECIALS) + ["b", "a", "c"]  # c and d tie; alphabetical order
    assert vocab.counts == [3, 3, 1, 3, 2, 1]  # <S>, </S> once per sentence; d is unknown
    assert vocab.framed_ids(["a", "zzz"]) == [vocab.bos_id, 4, vocab.unk_id, vocab.eos_id]


def test_min_count_and_specials_in_the_text():
    counter = count_sentences([["x", "x", "<UNK>", "y"]])
    vocab = build_vocabulary(counter, size=10, min_count=2)
    assert vocab.words == list(SPECIALS) + ["x"]


def test_counter_memory_is_bounded():
    counter = WordCounter(max_types=100)
    for i in range(1000):
        counter.add(["common", f"rare{i}"])
    assert len(counter.counts) <= 100
    assert counter.counts["common"] == 1000


def test_round_trip_and_bilm_tf_text_format(tmp_path):
    vocab = build_vocabulary(count_sentences([["é", "b"]]), size=10)
    vocab.to_disk(tmp_path / "vocab.json")
    assert json.loads((tmp_path / "vocab.json").read_text("utf8")) == vocab.words
    assert Vocabulary.from_disk(tmp_path / "vocab.json").words == vocab.words
    (tmp_path / "vocab.txt").write_text("<S>\n</S>\nthe\t100\ncat\n", encoding="utf8")
    assert Vocabulary.from_disk(tmp_path / "vocab.txt").words == ["<UNK>", "<S>", "</S>", "the", "cat"]


def test_a_vocabulary_needs_the_specials():
    with pytest.raises(ValueError, match="missing"):
        Vocabulary(["a", "b"])
    with pytest.raises(ValueError, match="larger"):
        build_vocabulary(count_sentences([["a"]]), size=3)


def test_a_given_word_list_trains_exactly_like_the_built_vocabulary(corpus_dir, tmp_path):
    """--paths.vocab with the very words a run built: same counts, so the same output-layer
    start and the same run (before, the given list started from zero biases and lagged)."""
    from spacy_elmo.pretrain import pretrain
    from spacy_elmo.pretrain.output_folder import read_metrics

    from .conftest import tiny_settings

    fast = {"training__max_steps": 3, "training__eval_every": 1, "softmax__n_negatives": 16}
    settings, _ = tiny_settings(corpus_dir, **fast)
    pretrain(settings, tmp_path / "built", progress=False)
    settings, _ = tiny_settings(corpus_dir, paths__vocab=str(tmp_path / "built" / "vocab.json"), **fast)
    pretrain(settings, tmp_path / "given", progress=False)
    built, given = (read_metrics(tmp_path / name / "metrics.jsonl") for name in ("built", "given"))
    assert [r["train_loss"] for r in given] == [r["train_loss"] for r in built]
    assert [r["dev_perplexity"] for r in given] == [r["dev_perplexity"] for r in built]


def test_with_counts_counts_the_specials_as_build_vocabulary_does():
    counter = count_sentences([["a", "b", "a"], ["c", "<S>"]])
    built = build_vocabulary(counter, size=5)
    assert with_counts(Vocabulary(built.words), counter).counts == built.counts
    # words the text lacks count zero; what the list lacks is unknown
    listed = with_counts(Vocabulary(["<S>", "</S>", "<UNK>", "a", "zebra"]), counter)
    assert listed.counts == [2, 2, 3, 2, 0]


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("vocab.json", '["the", "cat", "the"]', r"vocab.json lists 'the' twice \(entries 1 and 3\)"),
        ("vocab.txt", "the\t10\ncat\t5\nthe\t1\n", r"vocab.txt lists 'the' twice \(word lines 1 and 3\)"),
        ("vocab.json", "[" * 100_000 + "]" * 100_000, r"vocab.json: the word list is nested more than 16 deep"),
        ("vocab.json", '["the", ', r"vocab.json: the word list is not valid JSON"),
    ],
)
def test_a_bad_word_list_names_the_file_and_the_word(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf8")
    with pytest.raises(ValueError, match=message):
        Vocabulary.from_disk(path)
