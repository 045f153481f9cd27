"""Shared by the evaluation tests: a training folder of tiny trained-once pipelines (an ELMo NER
pipeline with two seeds, a baseline trained once) and a small test file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.training import Example
from spacy.util import load_model_from_config
from thinc.api import Config

from ....conftest import random_tiny_bilm
from ....pipeline.conftest import toy_docs

CONFIGS = Path(__file__).resolve().parents[4] / "configs"


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory) -> dict:
    """A training folder with ner-elmo (seed0, seed1) and ner-baseline (once), and a test file of
    12 documents."""
    base = tmp_path_factory.mktemp("price")
    random_tiny_bilm(0).to_disk(base / "bilm")
    training = base / "training"
    for name, config_name, overrides in (
        ("ner-elmo", "ner_elmo.cfg", {"paths.elmo": str(base / "bilm")}),
        ("ner-baseline", "ner_baseline.cfg", {}),
    ):
        nlp = load_model_from_config(Config().from_disk(CONFIGS / config_name, overrides=overrides), auto_fill=True)
        examples = [Example(nlp.make_doc(doc.text), doc) for doc in toy_docs(nlp, 8, seed=5)]
        nlp.initialize(lambda examples=examples: examples)
        target = training / name / ("seed0/model-best" if name == "ner-elmo" else "model-best")
        target.parent.mkdir(parents=True)
        nlp.to_disk(target)
    shutil.copytree(training / "ner-elmo" / "seed0", training / "ner-elmo" / "seed1")
    test_docs = toy_docs(spacy.blank("en"), 12, seed=2)
    DocBin(docs=test_docs).to_disk(base / "test.spacy")
    return {"base": base, "training": training, "test": base / "test.spacy", "docs": test_docs}
