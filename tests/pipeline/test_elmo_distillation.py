"""ELMo distilled into a pipeline's own tok2vec with ``spacy pretrain`` and
``spacy_elmo.PretrainElmo.v1``: the shipped distillation configs are the baselines but for
their ``[pretraining]`` block; the objective pretrains the tok2vec inside a ``ner`` and a
standalone ``tok2vec`` component, reuses each text's targets in later epochs, resumes with
``--resume-path``, and writes only the tok2vec, which ``init_tok2vec`` loads; the pipeline
trained from it has no ``elmo`` component and loads and runs with the biLM deleted."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import spacy
from spacy.training.initialize import init_nlp
from spacy.training.pretrain import pretrain
from spacy.util import load_config

import spacy_elmo.models.tok2vec_objectives as objectives_module
from spacy_elmo.models.tok2vec_objectives import ElmoTargets

from .conftest import CONFIGS, random_bilm, train_with_config

SUBJECTS = ["The jury", "Mary", "A letter from the court", "The old boat", "Our bank", "The river"]
ENDINGS = ["reached the house by noon .", "saw the city bank again .", "raised its rates today ."]
#: 18 different texts (each a key of its own in the target cache), 5 tokens or more each.
TEXTS = [f"{subject} {ending}" for subject in SUBJECTS for ending in ENDINGS]


@pytest.fixture(scope="module")
def raw_text(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("distil_raw") / "text.jsonl"
    path.write_text("".join(json.dumps({"text": text}) + "\n" for text in TEXTS), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def bilm_weights(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("distil_bilm") / "bilm"
    random_bilm().to_disk(path)
    return path


@pytest.fixture
def targets_made(monkeypatch) -> list:
    """The target makers each objective builds in this test, to read their cache counters."""
    made = []

    class Recorded(ElmoTargets):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(objectives_module, "ElmoTargets", Recorded)
    return made


def distil_config(name: str, raw_text: Path, weights: Path, **overrides):
    settings = {
        "paths.raw_text": str(raw_text),
        "paths.elmo": str(weights),
        "pretraining.max_epochs": 2,
        "pretraining.batcher.size": 40,
        **overrides,
    }
    return load_config(CONFIGS / name, overrides=settings, interpolate=False).interpolate()


def read_log(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "log.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("task", ["ner", "tagger"])
def test_distill_configs_differ_from_the_baselines_only_in_pretraining(task):
    distil = load_config(CONFIGS / f"{task}_distill.cfg", interpolate=False)
    baseline = load_config(CONFIGS / f"{task}_baseline.cfg", interpolate=False)
    objective = distil["pretraining"].pop("objective")
    del baseline["pretraining"]["objective"]
    assert distil["pretraining"] == baseline["pretraining"]
    assert objective["@architectures"] == "spacy_elmo.PretrainElmo.v1" and objective["weights"] == "${paths.elmo}"
    for config in (distil, baseline):
        del config["pretraining"]
        del config["paths"]["elmo"]
    assert distil == baseline


@pytest.fixture(scope="module")
def distilled_ner(tmp_path_factory, raw_text, bilm_weights) -> Path:
    """Two epochs of ``spacy pretrain configs/ner_distill.cfg``: the output folder."""
    output = tmp_path_factory.mktemp("distilled_ner")
    pretrain(distil_config("ner_distill.cfg", raw_text, bilm_weights), output, silent=True)
    return output


def test_pretrain_caches_each_text_once_and_resumes(tmp_path, raw_text, bilm_weights, targets_made):
    first = tmp_path / "first"
    first.mkdir()
    pretrain(distil_config("ner_distill.cfg", raw_text, bilm_weights), first, silent=True)
    (targets,) = targets_made
    # epoch 0 computed every text's targets, epoch 1 read them all from the cache
    assert (targets.cache_stats.misses, targets.cache_stats.hits) == (len(TEXTS), len(TEXTS))
    log = read_log(first)
    assert [entry["epoch"] for entry in log] == [0, 1, 2] and log[1]["epoch_loss"] < log[0]["epoch_loss"]
    assert {"model0.bin", "model1.bin", "model-last.bin"} <= {p.name for p in first.iterdir()}

    resumed = tmp_path / "resumed"
    resumed.mkdir()
    config = distil_config("ner_distill.cfg", raw_text, bilm_weights, **{"pretraining.max_epochs": 3})
    pretrain(config, resumed, resume_path=first / "model1.bin", silent=True)
    log = read_log(resumed)
    assert [entry["epoch"] for entry in log] == [2, 3] and (resumed / "model2.bin").is_file()
    # the resumed tok2vec starts where model1.bin ended, not from scratch (epoch 0 of the first run,
    # with the same seed); only the heads start afresh, as for spaCy's own objectives
    assert log[0]["epoch_loss"] < 0.5 * read_log(first)[0]["epoch_loss"]


def test_the_weights_file_holds_the_tok2vec_only(distilled_ner, raw_text, bilm_weights):
    """What ``init_tok2vec`` loads: the ner's tok2vec, byte for byte, and nothing of the biLM."""
    config = distil_config("ner_distill.cfg", raw_text, bilm_weights)
    config["initialize"]["init_tok2vec"] = None
    nlp = spacy.util.load_model_from_config(config)
    with nlp.select_pipes(enable=[]):
        nlp.initialize()
    tok2vec = nlp.get_pipe("ner").model.get_ref("tok2vec")
    tok2vec.initialize(X=[nlp.make_doc("Give it a doc to infer shapes")])  # as spacy pretrain does
    weights = (distilled_ner / "model-last.bin").read_bytes()
    fresh = tok2vec.to_bytes()
    assert len(weights) == len(fresh) and weights != fresh
    assert tok2vec.from_bytes(weights).to_bytes() == weights


def test_pipeline_from_the_distilled_tok2vec_needs_no_biLM(tmp_path, distilled_ner, toy_corpus, bilm_weights):
    gone = tmp_path / "deleted_bilm"
    shutil.copytree(bilm_weights, gone)
    shutil.rmtree(gone)  # training resolves [pretraining] with this path: it must never be read
    weights_file = distilled_ner / "model-last.bin"
    overrides = {
        "paths.train": str(toy_corpus / "train.spacy"),
        "paths.dev": str(toy_corpus / "dev.spacy"),
        "paths.elmo": str(gone),
        "paths.init_tok2vec": str(weights_file),
    }
    initialised = init_nlp(load_config(CONFIGS / "ner_distill.cfg", overrides=overrides, interpolate=False))
    assert initialised.get_pipe("ner").model.get_ref("tok2vec").to_bytes() == weights_file.read_bytes()

    trained = train_with_config(
        CONFIGS / "ner_distill.cfg",
        tmp_path / "trained",
        toy_corpus,
        {"paths.elmo": str(gone), "paths.init_tok2vec": str(weights_file)},
    )
    nlp = spacy.load(trained)
    assert nlp.pipe_names == ["ner"] and "elmo" not in nlp.component_names
    doc = nlp("Alice works at Acme in Paris .")
    assert len(doc) == 7 and not gone.exists()


def test_a_standalone_tok2vec_component(tmp_path, raw_text, bilm_weights, toy_corpus):
    """The tagger listens to a ``tok2vec`` component; ``[pretraining] component = "tok2vec"``."""
    config = load_config(CONFIGS / "tagger_distill.cfg", interpolate=False)
    config["nlp"]["pipeline"] = ["tok2vec", "tagger"]
    model = config["components"]["tagger"]["model"]["tok2vec"]
    model["embed"]["width"] = "${components.tok2vec.model.encode.width}"
    config["components"]["tok2vec"] = {"factory": "tok2vec", "model": model}
    config["components"]["tagger"]["model"]["tok2vec"] = {
        "@architectures": "spacy.Tok2VecListener.v1",
        "width": 96,
        "upstream": "tok2vec",
    }
    config["pretraining"]["component"] = "tok2vec"
    config["pretraining"]["layer"] = ""
    path = tmp_path / "tok2vec_distill.cfg"
    config.to_disk(path)
    output = tmp_path / "pretrained"
    output.mkdir()
    overrides = {"paths.raw_text": str(raw_text), "paths.elmo": str(bilm_weights), "pretraining.max_epochs": 1}
    pretrain(load_config(path, overrides=overrides, interpolate=False).interpolate(), output, silent=True)
    assert read_log(output)[0]["loss"] > 0
    weights = (output / "model-last.bin").read_bytes()
    overrides = {
        "paths.train": str(toy_corpus / "train.spacy"),
        "paths.dev": str(toy_corpus / "dev.spacy"),
        "paths.init_tok2vec": str(output / "model-last.bin"),
    }
    nlp = init_nlp(load_config(path, overrides=overrides, interpolate=False))
    assert nlp.get_pipe("tok2vec").model.to_bytes() == weights


def test_a_bad_setting_stops_spacy_pretrain_naming_it(tmp_path, raw_text, bilm_weights):
    config = distil_config("tagger_distill.cfg", raw_text, bilm_weights, **{"pretraining.objective.loss": "L1"})
    with pytest.raises(
        ValueError, match="PretrainElmo.v1: loss must be one of 'cosine', 'l2', 'cosine\\+l2', not 'L1'"
    ):
        pretrain(config, tmp_path, silent=True)


def test_an_empty_corpus_stops_spacy_pretrain_before_it_saves(tmp_path, bilm_weights):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    output = tmp_path / "pretrained"
    output.mkdir()
    with pytest.raises(ValueError, match="PretrainElmo.v1: no text has reached the objective"):
        pretrain(distil_config("ner_distill.cfg", empty, bilm_weights), output, silent=True)
    assert list(output.iterdir()) == []  # no untrained model0.bin or model-last.bin
