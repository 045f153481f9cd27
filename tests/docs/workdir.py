"""The folder the docs' code blocks run in: tiny weights, texts and corpora at the paths the
blocks name, so that a page's blocks run as a reader would run them in their own folder."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import spacy
from spacy.tokens import DocBin, Span

from ..conftest import MANY_LANGS_FIXTURES, REPO_ROOT, random_tiny_bilm

PEOPLE = ["Alice", "Bob", "Carla", "Dmitri", "Eve"]
PLACES = ["Paris", "Berlin", "Lagos", "Lima"]
SENTENCES = [
    "{p} sat by the river bank in {l} .",
    "The bank in {l} raised interest rates .",
    "Yesterday {p} flew to {l} .",
    "{p} and {q} met at the bank .",
]


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        rng.choice(SENTENCES).format(p=rng.choice(PEOPLE), q=rng.choice(PEOPLE), l=rng.choice(PLACES)) for _ in range(n)
    ]


def labelled_docs(nlp, n: int, seed: int) -> list:
    """Sentences with PERSON and GPE entities and a tag on every token (for ner and tagger)."""
    docs = []
    for text in sentences(n, seed):
        doc = nlp.make_doc(text)
        labels = {name: "PERSON" for name in PEOPLE} | {name: "GPE" for name in PLACES}
        doc.ents = [Span(doc, token.i, token.i + 1, label=labels[token.text]) for token in doc if token.text in labels]
        for token in doc:
            token.tag_ = "PROPN" if token.text in labels else ("PUNCT" if token.is_punct else "X")
        docs.append(doc)
    return docs


def build_assets(root: Path) -> Path:
    """Everything the pages name, built once; :func:`page_workdir` copies it per page."""
    bilm = random_tiny_bilm()
    bilm.to_allennlp(root / "options.json", root / "weights.hdf5")
    (root / "path" / "to" / "weights").mkdir(parents=True)
    bilm.to_allennlp(root / "path/to/weights/options.json", root / "path/to/weights/weights.hdf5")
    bilm.to_disk(root / "my_model")
    shutil.copytree(MANY_LANGS_FIXTURES / "char_legacy.model", root / "de.model")

    (root / "corpus.txt").write_text("\n".join(sentences(12, seed=3)) + "\n", encoding="utf-8")
    (root / "train.txt").write_text("\n".join(sentences(300, seed=4)) + "\n", encoding="utf-8")
    (root / "dev.txt").write_text("\n".join(sentences(20, seed=5)) + "\n", encoding="utf-8")
    (root / "text.jsonl").write_text(
        "".join(json.dumps({"text": text}) + "\n" for text in sentences(40, seed=6)), encoding="utf-8"
    )

    nlp = spacy.blank("en")
    DocBin(docs=labelled_docs(nlp, 40, seed=0)).to_disk(root / "train.spacy")
    DocBin(docs=labelled_docs(nlp, 10, seed=1)).to_disk(root / "dev.spacy")
    _train_ner_elmo(root)
    return root


def _train_ner_elmo(root: Path) -> None:
    """``training/ner_elmo/model-best``: the shipped NER config trained for two steps."""
    from spacy.cli.train import train

    train(
        REPO_ROOT / "configs" / "ner_elmo.cfg",
        root / "training" / "ner_elmo",
        overrides={
            "paths.train": str(root / "train.spacy"),
            "paths.dev": str(root / "dev.spacy"),
            "paths.elmo": str(root / "path" / "to" / "weights"),
            "training.max_steps": 2,
            "training.eval_frequency": 1,
        },
    )


def page_workdir(assets: Path, workdir: Path) -> Path:
    """A fresh copy of the assets, with the repository's configs beside them (read only)."""
    shutil.copytree(assets, workdir, dirs_exist_ok=True)
    (workdir / "configs").symlink_to(REPO_ROOT / "configs", target_is_directory=True)
    return workdir
