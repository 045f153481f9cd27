"""One pipeline shared by several threads gives every Doc the vectors a single thread gives it
(within the exactness contract's bound): the word cache, the derived weight tables and the
feature cache are shared state, and a race would hand one word another's vector."""

import random
import subprocess
import sys
import threading
import time

import pytest
import spacy
import torch

from spacy_elmo.embedding.word_cache import WordVectorCache
from spacy_elmo.models.doc_layers import get_embedder

from ..conftest import BATCH_BOUND, relative_difference

N_THREADS = 2
N_DOCS = 60  # per thread
SWITCH_INTERVAL = 1e-5


@pytest.fixture(autouse=True)
def frequent_thread_switches():
    """Switch threads every microsecond instead of every 5 ms, so that races show up quickly."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    yield
    sys.setswitchinterval(previous)


def texts(n: int, seed: int) -> list[str]:
    """Many distinct made-up words, so a small word cache evicts and reuses rows all the time."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghklmnoprstu") for _ in range(rng.randint(1, 8))) for _ in range(400)]
    return [" ".join(rng.choices(words, k=rng.randint(1, 8))) for _ in range(n)]


def run_threads(work, n_threads: int = N_THREADS) -> list:
    barrier = threading.Barrier(n_threads)
    results: list = [None] * n_threads
    errors: list = []

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


INPUTS = [texts(N_DOCS, seed=thread) for thread in range(N_THREADS)]


@pytest.fixture(scope="module")
def expected(tiny_weights) -> list:
    """Every Doc's layers from one thread."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights)})
    return [[nlp(text)._.elmo_layers.copy() for text in batch] for batch in INPUTS]


@pytest.mark.parametrize("word_cache_words", [24, 50_000])
def test_two_threads_on_one_pipeline_give_the_single_thread_vectors(tiny_weights, expected, word_cache_words):
    """A small cache evicts all the time, a large one keeps growing: neither may hand one
    thread's vectors to another's words."""
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo", config={"weights": str(tiny_weights)})
    elmo.model.attrs["word_cache_words"] = word_cache_words
    inputs = INPUTS
    nlp("warm up")  # loads the weights before the threads start, as a server would

    def work(index: int) -> list:
        return [nlp(text)._.elmo_layers.copy() for text in inputs[index]]

    outputs = run_threads(work)
    wrong = sum(
        relative_difference([want], [got]) > BATCH_BOUND
        for batch_got, batch_want in zip(outputs, expected)
        for got, want in zip(batch_got, batch_want)
    )
    assert wrong == 0, f"{wrong} of {sum(map(len, inputs))} Docs differ from the single-thread run"
    stats = get_embedder(elmo.model).word_cache_stats()
    assert stats is not None and stats.computed > 0
    if word_cache_words == 24:
        assert stats.evictions > 0  # the race this test is about needs entries to be replaced
    else:
        assert stats.evictions == 0 and stats.size > 100


def test_word_cache_under_threads_never_maps_two_words_to_one_row():
    cache = WordVectorCache(8)

    def vector_of(words):
        time.sleep(0)  # let another thread run between the lookup and the store
        return torch.tensor([[float(hash(word) % 1000), float(len(word))] for word in words])

    def lookup(batch):
        return cache.vectors(batch, len(batch), "weights", lambda positions: vector_of([batch[p] for p in positions]))

    words = [f"w{i}" for i in range(40)]

    def work(index: int) -> int:
        rng = random.Random(index)
        bad = 0
        for _ in range(400):
            batch = rng.sample(words, 5)
            got = lookup(batch)
            bad += int(not torch.equal(got, vector_of(batch)))
        return bad

    assert run_threads(work, 4) == [0, 0, 0, 0]
    assert len(cache) <= 8


def test_pipe_with_workers_after_a_call_on_several_threads(tiny_weights, tmp_path):
    """``nlp.pipe(n_process=2)`` after the parent has run torch on two threads: forked workers
    used to hang at their first parallel op (GNU OpenMP is not fork-safe)."""
    script = tmp_path / "pipe.py"
    script.write_text(
        "import spacy, torch\n"
        "torch.set_num_threads(2)\n"
        "nlp = spacy.blank('en')\n"
        f"nlp.add_pipe('elmo', config={{'weights': {str(tiny_weights)!r}}})\n"
        "nlp('warm up with a few words ' * 20)\n"
        "docs = list(nlp.pipe(['text %d with some words' % i for i in range(60)], n_process=2, batch_size=10))\n"
        "assert all(doc._.elmo_layers.shape[1] == len(doc) for doc in docs)\n"
        "print(len(docs))\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["60"]
