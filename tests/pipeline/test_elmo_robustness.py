"""Inputs that break naive implementations: empty, whitespace, huge tokens, odd scripts, and
a 100,000-token Doc whose processing must not need memory in proportion to its length.
"""

import sys

import numpy
import pytest
import spacy
from spacy.tokens import Doc


@pytest.mark.parametrize("text", ["", " ", "\n\n\t ", "🙂🙂 👩‍👩‍👧 ok", "Привет мир 你好 مرحبا שלום नमस्ते"])
def test_odd_texts_process(nlp_tiny, text):
    doc = nlp_tiny(text)
    layers = doc._.elmo_layers
    assert layers.shape[:2] == (3, len(doc)) and layers.dtype == numpy.float32
    assert numpy.isfinite(layers).all()
    assert doc._.elmo.shape == (layers.shape[2],)


def test_one_huge_token(nlp_tiny):
    doc = nlp_tiny(Doc(nlp_tiny.vocab, words=["x" * 5000]))
    assert doc._.elmo_layers.shape[1] == 1 and numpy.isfinite(doc._.elmo_layers).all()


def _memory() -> dict:
    values = {}
    with open("/proc/self/status") as status:
        for line in status:
            key, value = line.split(":", 1)
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(value.split()[0]) * 1024
    return values


def _peak_growth(component, doc) -> int:
    """Peak RSS while processing ``doc``, above the RSS just before, in bytes."""
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # reset the high-water mark
    before = _memory()["VmRSS"]
    component(doc)
    return _memory()["VmHWM"] - before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for peak RSS")
def test_long_document_memory_is_bounded(tiny_weights):
    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo", config={"weights": str(tiny_weights), "model": {"batch_max_tokens": 4096}})
    vocabulary = [f"w{i}" for i in range(2000)]
    elmo(Doc(nlp.vocab, words=vocabulary[:300]))  # warm up allocators
    budget = 64 * 2**20
    for n_tokens in (10_000, 100_000):
        doc = Doc(nlp.vocab, words=[vocabulary[i % len(vocabulary)] for i in range(n_tokens)])
        try:
            growth = _peak_growth(elmo, doc)
        except OSError:
            pytest.skip("cannot reset the peak RSS counter here")
        result = doc._.elmo_layers.nbytes + doc._.elmo_vectors.nbytes
        assert doc._.elmo_layers.shape[1] == n_tokens
        # Everything beyond the result itself fits in a fixed budget, whatever the length.
        assert growth - result < budget, (n_tokens, growth, result)
