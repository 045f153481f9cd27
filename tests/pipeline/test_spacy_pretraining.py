"""spaCy's own pretraining with the shipped configs: ``spacy_elmo.PretrainCharacters.v1`` works
on the tok2vec inside a ``ner`` component (where spaCy's own objective fails), is spaCy's
objective where both work, its weights are what ``init_tok2vec`` loads, and the configs'
``[pretraining]`` block changes nothing when ``init_tok2vec`` is not set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy
import pytest
from spacy.training.initialize import init_nlp
from spacy.training.pretrain import pretrain
from spacy.util import load_config
from thinc.api import NumpyOps

from spacy_elmo.models import token_rows

from .conftest import train_with_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
SENTENCES = [
    "The jury said the city bank raised its rates again .",
    "Mary saw an old boat near the river in Atlanta today .",
    "A new letter from the court reached the house by noon .",
]


@pytest.fixture(scope="module")
def raw_text(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("raw") / "text.jsonl"
    path.write_text("".join(json.dumps({"text": s}) + "\n" for s in SENTENCES * 8), encoding="utf-8")
    return path


def pretrain_config(name: str, raw_text: Path, **overrides):
    overrides = {"paths.raw_text": str(raw_text), "pretraining.max_epochs": 1, **overrides}
    return load_config(CONFIGS / name, overrides=overrides, interpolate=False).interpolate()


def test_token_rows_takes_a_list_or_one_array():
    model = token_rows()
    model.initialize()
    parts = [numpy.arange(6, dtype="f").reshape(3, 2), numpy.arange(4, dtype="f").reshape(2, 2) + 10]
    rows, backprop = model(parts, is_train=True)
    assert rows.shape == (5, 2) and rows[3, 0] == 10
    grads = backprop(rows * 2)
    assert [g.shape for g in grads] == [(3, 2), (2, 2)] and grads[1][0, 0] == 20
    same, backprop = model(rows, is_train=True)
    assert same is rows and backprop(rows) is rows
    with pytest.raises(ValueError, match="2-dimensional"):
        model(NumpyOps().alloc3f(2, 2, 2), is_train=False)


def test_spacys_own_objective_fails_on_the_ner_tok2vec(tmp_path, raw_text):
    """Why the objective exists: spaCy 3.8's characters objective cannot pretrain a ner's tok2vec."""
    config = pretrain_config(
        "ner_baseline.cfg", raw_text, **{"pretraining.objective.@architectures": "spacy.PretrainCharacters.v1"}
    )
    with pytest.raises(ValueError, match="2-dimensional"):
        pretrain(config, tmp_path, silent=True)


def test_ner_tok2vec_pretrains_and_init_tok2vec_loads_it(tmp_path, raw_text, toy_corpus):
    pretrain(pretrain_config("ner_baseline.cfg", raw_text), tmp_path, silent=True)
    weights = (tmp_path / "model-last.bin").read_bytes()
    log = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert log[-1]["nr_word"] == 8 * sum(len(s.split()) for s in SENTENCES) and log[-1]["loss"] > 0
    overrides = {"paths.train": str(toy_corpus / "train.spacy"), "paths.dev": str(toy_corpus / "dev.spacy")}
    fresh = init_nlp(load_config(CONFIGS / "ner_baseline.cfg", overrides=overrides, interpolate=False))
    loaded = init_nlp(
        load_config(
            CONFIGS / "ner_baseline.cfg",
            interpolate=False,
            overrides={**overrides, "paths.init_tok2vec": str(tmp_path / "model-last.bin")},
        )
    )
    assert loaded.get_pipe("ner").model.get_ref("tok2vec").to_bytes() == weights
    assert fresh.get_pipe("ner").model.get_ref("tok2vec").to_bytes() != weights


def test_same_objective_as_spacys_on_a_tok2vec_that_returns_a_list(tmp_path, raw_text):
    """On the tagger's tok2vec (one array per Doc) both objectives train the same weights."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    ours.mkdir()
    theirs.mkdir()
    pretrain(pretrain_config("tagger_baseline.cfg", raw_text), ours, silent=True)
    pretrain(
        pretrain_config(
            "tagger_baseline.cfg", raw_text, **{"pretraining.objective.@architectures": "spacy.PretrainCharacters.v1"}
        ),
        theirs,
        silent=True,
    )
    assert (ours / "model-last.bin").read_bytes() == (theirs / "model-last.bin").read_bytes()
    assert (ours / "log.jsonl").read_text() == (theirs / "log.jsonl").read_text()


@pytest.mark.parametrize("name", ["ner_baseline.cfg", "tagger_baseline.cfg"])
def test_the_pretraining_block_changes_nothing_without_init_tok2vec(name, tmp_path, toy_corpus):
    """The same training, to the byte, as the config without its [pretraining] block."""
    from spacy.util import load_config as load

    config = load(CONFIGS / name, interpolate=False)
    config["pretraining"] = {}
    del config["corpora"]["pretrain"]
    del config["paths"]["raw_text"]
    bare = tmp_path / "bare.cfg"
    config.to_disk(bare)
    component = name.split("_")[0]
    with_block = train_with_config(CONFIGS / name, tmp_path / "with", toy_corpus, {"training.max_steps": 4})
    without = train_with_config(bare, tmp_path / "without", toy_corpus, {"training.max_steps": 4})
    assert (with_block / component / "model").read_bytes() == (without / component / "model").read_bytes()
