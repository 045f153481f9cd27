"""Fixtures for the ``elmo`` component: tiny random weights (always there), the AllenNLP
fixture weights (skipped when absent), a toy NER corpus and a pipeline trained on it.
"""

import pickle
import random
from pathlib import Path

import pytest
import spacy
import torch
from spacy.tokens import Doc, DocBin

from spacy_elmo import BiLM

from ..conftest import random_tiny_bilm

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIGS = REPO_ROOT / "configs"


def random_bilm(seed: int = 0) -> BiLM:
    """A tiny biLM with weights large enough that context visibly changes the vectors."""
    return random_tiny_bilm(seed, scale=0.2)


@pytest.fixture
def no_pickle(monkeypatch):
    """Fail any attempt to unpickle while loading (torch.load is pickle underneath)."""

    def refuse(*args, **kwargs):
        raise AssertionError("a pipeline load must not unpickle anything")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(torch, "load", refuse)


@pytest.fixture(scope="session")
def tiny_weights(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tiny_bilm")
    random_bilm().to_disk(path)
    return path


@pytest.fixture(scope="session")
def fixture_weights(allennlp_fixtures) -> Path:
    """The AllenNLP fixture's weights file; its folder holds other .hdf5 files too."""
    return allennlp_fixtures / "lm_weights.hdf5"


@pytest.fixture
def nlp_tiny(tiny_weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights)})
    return nlp


PEOPLE = ["Alice", "Bob", "Carla", "Dmitri", "Eve", "Farid"]
ORGS = ["Acme", "Globex", "Initech", "Umbrella"]
PLACES = ["Paris", "Berlin", "Lagos", "Lima", "Osaka"]
TEMPLATES = [
    "{p} works at {o} in {l} .",
    "Yesterday {p} flew to {l} for {o} .",
    "The bank near {l} hired {p} .",
]


def toy_docs(nlp, n: int, seed: int):
    """Short sentences with PERSON, ORG and GPE entities (and a tag per token)."""
    rng = random.Random(seed)
    docs = []
    for _ in range(n):
        fillers = {"p": rng.choice(PEOPLE), "o": rng.choice(ORGS), "l": rng.choice(PLACES)}
        text = rng.choice(TEMPLATES).format(**fillers)
        doc = nlp.make_doc(text)
        spans = []
        for key, label in (("p", "PERSON"), ("o", "ORG"), ("l", "GPE")):
            start = text.find(fillers[key])
            if start >= 0:
                spans.append(doc.char_span(start, start + len(fillers[key]), label=label))
        doc.ents = [span for span in spans if span is not None]
        for token in doc:
            token.tag_ = "PROPN" if token.ent_type_ else ("PUNCT" if token.is_punct else "OTHER")
        docs.append(doc)
    return docs


def write_corpus(path: Path, make_docs, n_train: int, n_dev: int) -> Path:
    """``train.spacy`` and ``dev.spacy`` in ``path`` from ``make_docs(nlp, n, seed)``."""
    nlp = spacy.blank("en")
    DocBin(docs=make_docs(nlp, n_train, seed=0)).to_disk(path / "train.spacy")
    DocBin(docs=make_docs(nlp, n_dev, seed=1)).to_disk(path / "dev.spacy")
    return path


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("toy_corpus"), toy_docs, 60, 12)


def train_with_config(config: Path, output: Path, corpus: Path, overrides: dict) -> Path:
    """``spacy train`` in this process, on the toy corpus, for a handful of steps."""
    from spacy.cli.train import train

    settings = {
        "paths.train": str(corpus / "train.spacy"),
        "paths.dev": str(corpus / "dev.spacy"),
        "training.max_steps": 12,
        "training.eval_frequency": 6,
        "training.batcher.size.start": 64,
        "training.batcher.size.stop": 64,
        "training.optimizer.learn_rate": 0.01,
        "nlp.batch_size": 32,
    }
    settings.update(overrides)
    train(config, output, overrides=settings)
    return output / "model-last"


@pytest.fixture(scope="session")
def trained_ner(tmp_path_factory, toy_corpus, tiny_weights) -> Path:
    """ner_elmo.cfg trained briefly with the tiny weights: the pipeline directory."""
    output = tmp_path_factory.mktemp("trained_ner")
    return train_with_config(CONFIGS / "ner_elmo.cfg", output, toy_corpus, {"paths.elmo": str(tiny_weights)})


@pytest.fixture(scope="session")
def train_pipeline(toy_corpus):
    """``train_pipeline("ner_elmo.cfg", output_dir, overrides)`` -> the model-last directory."""

    def train(config_name: str, output: Path, overrides: dict) -> Path:
        return train_with_config(CONFIGS / config_name, output, toy_corpus, overrides)

    return train


#: A category per template of :data:`TEMPLATES` (in order), for the text classifiers.
TEMPLATE_CATS = ("WORK", "TRAVEL", "HIRE")


def annotated_docs(nlp, n: int, seed: int):
    """:func:`toy_docs` with every annotation a trainable spaCy component learns: tags, UPOS,
    morphs, lemmas, a dependency tree (each token attached to the second), sentence starts,
    entities, ``spans["sc"]`` and one exclusive category per Doc (its template)."""
    docs = []
    for toy in toy_docs(nlp, n, seed):
        pos = ["PROPN" if t.ent_type_ else ("PUNCT" if t.is_punct else "NOUN") for t in toy]
        doc = Doc(
            nlp.vocab,
            words=[t.text for t in toy],
            spaces=[bool(t.whitespace_) for t in toy],
            tags=[t.tag_ for t in toy],
            pos=pos,
            morphs=["Number=Sing" if p == "PROPN" else "" for p in pos],
            lemmas=[t.lower_ for t in toy],
            heads=[1] * len(toy),
            deps=["dep", "ROOT"] + ["dep"] * (len(toy) - 2),
            ents=[t.ent_iob_ + ("-" + t.ent_type_ if t.ent_type_ else "") for t in toy],
        )
        doc.spans["sc"] = list(doc.ents)
        cat = "TRAVEL" if doc[0].text == "Yesterday" else ("HIRE" if doc[0].text == "The" else "WORK")
        doc.cats = {name: float(name == cat) for name in TEMPLATE_CATS}
        docs.append(doc)
    return docs


@pytest.fixture(scope="session")
def annotated_corpus(tmp_path_factory) -> Path:
    """train.spacy / dev.spacy of :func:`annotated_docs`: enough for a few steps of any component."""
    return write_corpus(tmp_path_factory.mktemp("annotated_corpus"), annotated_docs, 40, 8)
