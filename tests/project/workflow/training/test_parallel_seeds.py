"""Seeds trained side by side, each in its own process, give the very weights and scores of
the same seeds trained one after another in one process (with ELMo features: the biLM runs in
every process)."""
from __future__ import annotations

import json
from pathlib import Path

import spacy
from spacy.tokens import DocBin

from scripts.workflow.training.runs import train_seeds

from ....conftest import random_tiny_bilm
from ....pipeline.conftest import toy_docs

CONFIGS = Path(__file__).resolve().parents[4] / "configs"


def test_parallel_seeds_equal_sequential_seeds(tmp_path):
    nlp = spacy.blank("en")
    DocBin(docs=toy_docs(nlp, 40, seed=0)).to_disk(tmp_path / "train.spacy")
    DocBin(docs=toy_docs(nlp, 10, seed=1)).to_disk(tmp_path / "dev.spacy")
    random_tiny_bilm(0).to_disk(tmp_path / "bilm")
    overrides = {"paths.train": str(tmp_path / "train.spacy"), "paths.dev": str(tmp_path / "dev.spacy"),
                 "paths.elmo": str(tmp_path / "bilm"), "training.max_steps": 6, "training.eval_frequency": 3,
                 "training.batcher.size.start": 64, "training.batcher.size.stop": 64, "nlp.batch_size": 32}
    train_seeds(CONFIGS / "ner_elmo.cfg", tmp_path / "one-process", [0, 1], overrides, jobs=1)
    train_seeds(CONFIGS / "ner_elmo.cfg", tmp_path / "side-by-side", [0, 1], overrides, jobs=2)
    for seed in (0, 1):
        a, b = (tmp_path / name / f"seed{seed}" / "model-best" for name in ("one-process", "side-by-side"))
        assert (a / "ner" / "model").read_bytes() == (b / "ner" / "model").read_bytes(), seed
        assert json.loads((a / "meta.json").read_text())["performance"] == \
            json.loads((b / "meta.json").read_text())["performance"]
    # the seeds differ from each other, so the comparison above can fail
    first, second = (tmp_path / "one-process" / f"seed{s}" / "model-best" / "ner" / "model" for s in (0, 1))
    assert first.read_bytes() != second.read_bytes()
