"""The plan of batches depends on the lengths and settings only, keeps the budget, and reads
a long sentence as windows of its own; windows join back into the one-shot layers of each."""

import random

import numpy
import pytest

from spacy_elmo import Embedder, embed_layers
from spacy_elmo.embedding.plan import Window, cut, plan_groups, stitch

from ..conftest import BATCH_BOUND, random_tiny_bilm, relative_difference


def random_lengths(seed, n=60, longest=40):
    rng = random.Random(seed)
    return [
        rng.choice([0, rng.randint(1, longest)]) if rng.random() < 0.1 else rng.randint(1, longest) for _ in range(n)
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_plan_depends_on_lengths_and_settings_only(seed):
    lengths = random_lengths(seed)
    first = plan_groups(lengths, max_tokens=16, batch_tokens=64, batch_sentences=5)
    assert plan_groups(list(lengths), max_tokens=16, batch_tokens=64, batch_sentences=5) == first
    embedder = Embedder(random_tiny_bilm(seed), max_tokens=16, batch_tokens=64, batch_sentences=5)
    assert embedder.plan(lengths) == first


@pytest.mark.parametrize("seed", [3, 4])
def test_every_token_is_planned_once_and_batches_keep_the_budget(seed):
    lengths = random_lengths(seed)
    groups = plan_groups(lengths, max_tokens=16, batch_tokens=64, batch_sentences=5)
    assert sorted(i for group in groups for i in group.sentences) == list(range(len(lengths)))
    for index, n in enumerate(lengths):
        windows = [w for g in groups for b in g.batches for w in b if w.sentence == index]
        assert [(w.start, w.end) for w in windows] == [(s, min(s + 16, n)) for s in range(0, n, 16)]
    for group in groups:
        for batch in group.batches:
            sizes = [len(w) for w in batch]
            assert sizes == sorted(sizes, reverse=True) and len(batch) <= 5
            assert len(batch) * sizes[0] <= 64
        if len(group.sentences) > 1:  # a batch of short sentences: one batch, no windows
            assert len(group.batches) <= 1 and all(lengths[i] <= 16 for i in group.sentences)


def test_a_long_sentence_is_a_group_of_its_own_with_budget_sized_batches():
    groups = plan_groups([3, 50, 2], max_tokens=10, batch_tokens=25, batch_sentences=512)
    assert [g.sentences for g in groups] == [(0, 2), (1,)]
    assert [[len(w) for w in b] for b in groups[1].batches] == [[10, 10], [10, 10], [10]]
    unbounded = plan_groups([3, 50, 2], max_tokens=10, batch_tokens=None, batch_sentences=512)
    assert len(unbounded[1].batches) == 1


def test_empty_sentences_belong_to_a_group_but_to_no_batch():
    (group,) = plan_groups([0, 2, 0], max_tokens=10, batch_tokens=100, batch_sentences=10)
    assert group.sentences == (1, 0, 2) and group.batches == ((Window(1, 0, 2),),)
    assert group.only({0, 2}).batches == () and group.only({0, 2}).sentences == (0, 2)


def test_cut_and_stitch():
    assert cut(7, 5, 2) == [Window(7, 0, 2), Window(7, 2, 4), Window(7, 4, 5)]
    assert cut(0, 0, 3) == [] and cut(0, 3, 3) == [Window(0, 0, 3)]
    with pytest.raises(ValueError):
        cut(0, 3, 0)
    pieces = [numpy.ones((3, 2, 4)), numpy.zeros((3, 1, 4))]
    assert stitch(pieces).shape == (3, 3, 4)
    assert stitch(pieces[:1]) is pieces[0]


@pytest.mark.parametrize("batch_tokens", [8192, 9, None])
def test_windows_join_into_the_one_shot_layers_of_each_window(batch_tokens):
    bilm = random_tiny_bilm(5, scale=0.5)
    rng = random.Random(6)
    words = [rng.choice(["a", "bank", "river", "rates", "x", "é"]) for _ in range(23)]
    short = ["a", "short", "one"]
    long_layers, short_layers = Embedder(bilm, max_tokens=4, batch_tokens=batch_tokens).layers([words, short])
    windows = [words[start : start + 4] for start in range(0, 23, 4)]
    one_shot = numpy.concatenate(embed_layers(bilm, windows), axis=1)
    assert relative_difference([one_shot], [long_layers]) <= BATCH_BOUND
    assert relative_difference(embed_layers(bilm, [short]), [short_layers]) <= BATCH_BOUND
