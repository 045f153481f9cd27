"""``nlp.pipe`` with any batch size or process count gives the vectors ``nlp(text)`` gives,
without spaCy's warning about the vector hooks that do not travel."""

import subprocess
import sys

import numpy
import pytest

from spacy_elmo.pipeline import set_vector_hooks

TEXTS = [
    "The bank raised interest rates.",
    "They sat by the river bank.",
    "",
    "A much longer sentence that has quite a few more tokens than the others in this list.",
    "Short.",
    "   ",
    "Emoji 🙂 and 日本語 text.",
]


@pytest.fixture
def one_by_one(nlp_tiny):
    return [nlp_tiny(text) for text in TEXTS]


def assert_same(docs, expected):
    assert len(docs) == len(expected)
    for doc, ref in zip(docs, expected):
        assert [t.text for t in doc] == [t.text for t in ref]
        numpy.testing.assert_allclose(doc._.elmo_layers, ref._.elmo_layers, rtol=0, atol=1e-5)
        for token, ref_token in zip(doc, ref):
            numpy.testing.assert_allclose(token._.elmo, ref_token._.elmo, rtol=0, atol=1e-5)


@pytest.mark.parametrize("batch_size", [1, 3, 100])
def test_pipe_batch_size(nlp_tiny, one_by_one, batch_size):
    assert_same(list(nlp_tiny.pipe(TEXTS, batch_size=batch_size)), one_by_one)


def test_pipe_two_processes(nlp_tiny, one_by_one):
    docs = list(nlp_tiny.pipe(TEXTS, n_process=2, batch_size=2))
    assert_same(docs, one_by_one)
    # spaCy does not carry user hooks between processes; they can be put back.
    set_vector_hooks(docs[1])
    numpy.testing.assert_allclose(docs[1][5].vector, one_by_one[1][5].vector, rtol=0, atol=1e-5)


def test_similarity_across_processes(nlp_tiny):
    """A Doc from a worker process keeps its ELMo vectors but not its hooks: comparing it with a
    hooked Doc compares ELMo vectors (it raised "process both with the same pipeline")."""
    hooked = nlp_tiny("The bank raised interest rates .")
    (moved,) = list(nlp_tiny.pipe(["They sat by the river bank ."], n_process=2))
    assert not moved.user_token_hooks
    got = hooked[1].similarity(moved[5])
    assert hooked[0:2].similarity(moved) == pytest.approx(hooked[0:2].similarity(nlp_tiny(moved.text)), abs=1e-6)
    set_vector_hooks(moved)
    assert got == pytest.approx(moved[5].similarity(hooked[1]), abs=1e-6)
    assert got < 0.999  # two contexts of "bank", not one word compared with itself


def test_similarity_without_elmo_vectors_says_why(nlp_tiny):
    import spacy

    hooked = nlp_tiny("The river bank .")
    plain = spacy.blank("en")("The river bank .")
    with pytest.raises(ValueError, match="Token 'bank' has none: process its Doc with the pipeline that has the elmo"):
        hooked[2].similarity(plain[2])


SAVE_AND_PIPE = """
import sys
import spacy
import torch
torch.set_num_threads(1)  # as in every test (a forked worker inherits no OpenMP pool)
nlp = spacy.blank("en")
nlp.add_pipe("elmo", config={"weights": sys.argv[1]})
for text in ("The bank .", "A river bank ."):
    nlp(text).to_bytes()
list(nlp.pipe(["The bank .", "A river bank .", "Rates rose ."], n_process=2, batch_size=1))
print("done")
"""


def test_saving_docs_and_pipe_workers_print_no_hook_warning(tiny_weights):
    """spaCy's W109 ("Unable to save user hooks") would come with every saved Doc and from each
    worker: the hooks are the component's, and ``set_vector_hooks`` puts them back."""
    result = subprocess.run(
        [sys.executable, "-c", SAVE_AND_PIPE, str(tiny_weights)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr
    assert "W109" not in result.stderr
