"""A listener that finds no ELMo layers at prediction time warns once per component.

With the ``elmo`` component disabled, excluded or removed, ``ner`` and ``tagger`` would run on
all-zero ELMo features without a word; training already raises for this.
"""

import copy
import warnings

import pytest
import spacy
from spacy.training import Example
from spacy.util import load_model_from_config
from thinc.api import Config

from ..conftest import TINY_TAGGER_MODEL
from .conftest import CONFIGS, toy_docs

TEXTS = ["Alice works at Acme in Paris .", "Eve met Farid in Osaka ."]


def elmo_warnings(run) -> list[str]:
    """The messages of the listener warnings that ``run()`` issued (every one, not deduplicated)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if "found no elmo layers" in str(w.message)]


def run_texts(nlp):
    return lambda: list(nlp.pipe(TEXTS))


@pytest.fixture(scope="module")
def ner_and_tagger(tiny_weights, tmp_path_factory):
    """elmo, ner and tagger (both listening), initialized: the pipeline directory."""
    config = Config().from_disk(CONFIGS / "ner_elmo.cfg", overrides={"paths.elmo": str(tiny_weights)})
    nlp = load_model_from_config(config, auto_fill=True)
    nlp.add_pipe("tagger", config={"model": copy.deepcopy(TINY_TAGGER_MODEL)})
    examples = [Example(nlp.make_doc(doc.text), doc) for doc in toy_docs(nlp, 8, seed=5)]
    init_warnings = elmo_warnings(lambda: nlp.initialize(lambda: examples))
    assert init_warnings == []  # sample Docs at initialization carry no layers: expected, silent
    path = tmp_path_factory.mktemp("ner_tagger")
    nlp.to_disk(path)
    return path


def test_no_warning_when_elmo_runs(ner_and_tagger):
    nlp = spacy.load(ner_and_tagger)
    assert elmo_warnings(run_texts(nlp)) == []


def test_disabled_elmo_warns_once_per_component(ner_and_tagger):
    nlp = spacy.load(ner_and_tagger)
    with nlp.select_pipes(disable=["elmo"]):
        first = elmo_warnings(run_texts(nlp))
        again = elmo_warnings(run_texts(nlp))
    assert len(first) == 2, first
    assert any("of 'ner'" in m for m in first) and any("of 'tagger'" in m for m in first)
    assert all("2 of 2 Docs" in m and "all-zero" in m for m in first)
    assert again == []


def test_disable_pipe_and_remove_pipe_warn(ner_and_tagger):
    nlp = spacy.load(ner_and_tagger)
    nlp.disable_pipe("elmo")
    assert len(elmo_warnings(run_texts(nlp))) == 2
    nlp = spacy.load(ner_and_tagger)
    nlp.remove_pipe("elmo")
    assert len(elmo_warnings(run_texts(nlp))) == 2


def test_excluded_elmo_warns(ner_and_tagger):
    nlp = spacy.load(ner_and_tagger, exclude=["elmo"])
    messages = elmo_warnings(run_texts(nlp))
    assert len(messages) == 2  # one per listener; no elmo component ever told them their names
    assert all("upstream 'elmo'" in m for m in messages)
