"""The evaluate command (scripts/workflow/evaluation/scoring.py): its per-document counts,
summed, give spaCy's own scores back.

A small NER + tagger pipeline (spaCy's default CPU models, trained a few steps so that it
makes mistakes) is scored on a test file that also holds the awkward cases of spaCy's
scorers: gold tokens the tokenizer splits, tokens without a gold tag, gold tokens without
entity annotation, and a document without entity annotation at all.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy
import pytest
import spacy
from spacy.cli.evaluate import evaluate as spacy_evaluate
from spacy.scorer import PRFScore
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import fix_random_seed

from scripts.workflow.evaluation import paired_stats

NAMES = [["Mary"], ["John", "Smith"], ["Paris"], ["New", "York"], ["Google"]]
LABELS = {"Mary": "PER", "John": "PER", "Paris": "LOC", "New": "LOC", "Google": "ORG"}
FILLER = [
    ("I", "PRON"),
    ("saw", "VERB"),
    ("the", "DET"),
    ("big", "ADJ"),
    ("dog", "NOUN"),
    ("in", "ADP"),
    ("today", "NOUN"),
    ("and", "CCONJ"),
    ("ran", "VERB"),
    ("!", "PUNCT"),
]


def make_doc(vocab, rng: random.Random) -> Doc:
    words, tags, ents = [], [], []
    for _ in range(rng.randint(2, 5)):
        word, tag = rng.choice(FILLER)
        words.append(word), tags.append(tag), ents.append("O")
    name = rng.choice(NAMES)
    position = rng.randint(0, len(words))
    for k, word in enumerate(name):
        words.insert(position + k, word)
        tags.insert(position + k, "PROPN")
        ents.insert(position + k, ("B-" if k == 0 else "I-") + LABELS[name[0]])
    return Doc(vocab, words=words, tags=tags, ents=ents)


def awkward_docs(vocab) -> list:
    return [
        # "don't" is one gold token, two predicted ones
        Doc(
            vocab,
            words=["Mary", "don't", "run", "!"],
            tags=["PROPN", "AUX", "VERB", "PUNCT"],
            ents=["B-PER", "O", "O", "O"],
        ),
        # a token without a gold tag, and gold tokens without entity annotation
        Doc(
            vocab,
            words=["John", "Smith", "saw", "Paris", "today"],
            tags=["PROPN", "PROPN", "", "PROPN", "NOUN"],
            ents=["B-PER", "I-PER", "O", "", ""],
        ),
        # no entity annotation at all
        Doc(vocab, words=["Google", "ran", "the", "dog"], tags=["PROPN", "VERB", "DET", "NOUN"]),
    ]


@pytest.fixture(scope="module")
def scored(tmp_path_factory, run_command):
    """The evaluate command run on an NER and a tagger setting; returns the metrics folder and files."""
    base = tmp_path_factory.mktemp("evaluate")
    fix_random_seed(0)
    rng = random.Random(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("tagger")
    nlp.add_pipe("ner")
    train = [Example(nlp.make_doc(doc.text), doc) for doc in (make_doc(nlp.vocab, rng) for _ in range(40))]
    optimizer = nlp.initialize(lambda: train)
    for _ in range(6):
        for start in range(0, len(train), 8):
            nlp.update(train[start : start + 8], sgd=optimizer, drop=0.1)
    test_docs = [make_doc(nlp.vocab, rng) for _ in range(30)] + awkward_docs(nlp.vocab)
    test_path = base / "test.spacy"
    DocBin(docs=test_docs).to_disk(test_path)
    training = base / "training"
    (training / "ner-small-x").mkdir(parents=True)
    nlp.to_disk(training / "ner-small-x" / "model-best")
    shutil.copytree(training / "ner-small-x" / "model-best", training / "tagger-x" / "seed3" / "model-best")
    metrics = base / "metrics"
    assert (
        run_command(
            [
                "evaluate",
                str(training),
                str(metrics),
                "--ner-test",
                str(test_path),
                "--tagger-test",
                str(test_path),
                "--setting",
                "ner-small-x",
                "--setting",
                "tagger-x",
            ]
        )
        == 0
    )
    return {"metrics": metrics, "training": training, "test": test_path, "n_docs": len(test_docs)}


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_ner_counts_give_spacy_ents_f(scored):
    scores = read(scored["metrics"] / "ner-small-x.json")
    docs = read(scored["metrics"] / "ner-small-x.docs.json")
    assert docs["task"] == "ner" and docs["fields"] == ["tp", "fp", "fn"]
    assert len(docs["counts"]) == scored["n_docs"]
    assert docs["model_sha256"] == scores["model_sha256"] and docs["test_data"] == scores["test_data"]
    tp, fp, fn = (sum(row[k] for row in docs["counts"]) for k in range(3))
    assert tp > 0 and fp + fn > 0  # the pipeline makes mistakes: the test is not trivial
    assert docs["counts"][-1] == [0, 0, 0]  # the document without entity annotation
    totals = PRFScore(tp=tp, fp=fp, fn=fn)
    assert (totals.precision, totals.recall, totals.fscore) == (scores["ents_p"], scores["ents_r"], scores["ents_f"])
    assert float(paired_stats.ner_f1(paired_stats.numpy.array([tp, fp, fn]))) == pytest.approx(
        scores["ents_f"], abs=1e-12
    )
    # the same as `spacy evaluate` itself reports
    reference = spacy_evaluate(str(scored["training"] / "ner-small-x" / "model-best"), scored["test"], silent=True)
    assert reference["ents_f"] == scores["ents_f"]


def test_tagger_counts_give_spacy_tag_acc(scored):
    scores = read(scored["metrics"] / "tagger-x.seed3.json")
    docs = read(scored["metrics"] / "tagger-x.seed3.docs.json")
    assert docs["task"] == "tagger" and docs["fields"] == ["correct", "total", "predicted"]
    correct, total, predicted = (sum(row[k] for row in docs["counts"]) for k in range(3))
    assert 0 < correct < total
    # "do" and "n't" both align to the gold "don't": one scored pair each, or one for both if
    # their tags agree (spaCy scores sets); the untagged gold token is not scored
    assert docs["counts"][-3][1] == 4 and docs["counts"][-3][2] in (4, 5)
    assert docs["counts"][-2][1:] == [4, 4]
    assert PRFScore(tp=correct, fp=predicted - correct, fn=total - correct).fscore == scores["tag_acc"]
    assert float(paired_stats.tagger_accuracy(paired_stats.numpy.array([correct, total, predicted]))) == pytest.approx(
        scores["tag_acc"], abs=1e-12
    )
    reference = spacy_evaluate(
        str(scored["training"] / "tagger-x" / "seed3" / "model-best"), scored["test"], silent=True
    )
    assert reference["tag_acc"] == scores["tag_acc"]


def test_rerun_skips_and_missing_counts_rescore(scored, capsys, run_command):
    args = [
        str(scored["training"]),
        str(scored["metrics"]),
        "--ner-test",
        str(scored["test"]),
        "--tagger-test",
        str(scored["test"]),
        "--setting",
        "ner-small-x",
    ]
    docs_file = scored["metrics"] / "ner-small-x.docs.json"
    before = docs_file.read_text()
    assert run_command(["evaluate", *args]) == 0
    assert "scored earlier" in capsys.readouterr().out
    docs_file.unlink()  # scores from before per-document counts existed: scored again
    assert run_command(["evaluate", *args]) == 0
    assert "scored earlier" not in capsys.readouterr().out
    assert docs_file.read_text() == before


def test_optional_setting_is_scored_only_if_trained(scored, capsys, run_command):
    stale = scored["metrics"] / "ner-gone.seed0.json"
    stale.write_text("{}")
    (scored["metrics"] / "ner-gone.seed0.docs.json").write_text("{}")
    args = [
        str(scored["training"]),
        str(scored["metrics"]),
        "--ner-test",
        str(scored["test"]),
        "--tagger-test",
        str(scored["test"]),
        "--optional-setting",
        "ner-gone",
        "--optional-setting",
        "tagger-x",
    ]
    assert run_command(["evaluate", *args]) == 0
    out = capsys.readouterr().out
    assert "'ner-gone' was not trained" in out and "tagger-x.seed3: scored earlier" in out
    assert not stale.exists() and not (scored["metrics"] / "ner-gone.seed0.docs.json").exists()
    with pytest.raises(SystemExit):  # a required setting without a pipeline is an error
        run_command(["evaluate", *args[:6], "--setting", "ner-gone"])


def test_pipelines_scored_side_by_side_give_the_serial_files(scored, tmp_path, run_command):
    """--jobs 2 scores the pipelines in two processes at once; every file equals that of --jobs 1
    but for spaCy's ``speed`` (words per wall-clock second, which varies from run to run)."""
    training = tmp_path / "training"
    shutil.copytree(scored["training"], training)
    # a second seed that differs from the first: the pool must not mix up which file is whose
    other = spacy.load(training / "tagger-x" / "seed3" / "model-best")
    softmax = next(node for node in other.get_pipe("tagger").model.walk() if node.name == "softmax")
    weights = softmax.get_param("W")
    softmax.set_param("W", weights + numpy.random.default_rng(0).normal(0.0, 1.0, weights.shape).astype(weights.dtype))
    (training / "tagger-x" / "seed4").mkdir()
    other.to_disk(training / "tagger-x" / "seed4" / "model-best")
    outputs = {}
    for jobs in ("1", "2"):
        metrics = tmp_path / f"metrics-{jobs}"
        args = ["evaluate", str(training), str(metrics), "--ner-test", str(scored["test"])]
        args += ["--tagger-test", str(scored["test"]), "--setting", "ner-small-x", "--setting", "tagger-x"]
        assert run_command(args + ["--jobs", jobs]) == 0
        outputs[jobs] = {path.name: read(path) for path in sorted(metrics.glob("*.json"))}
    for files in outputs.values():
        for content in files.values():
            content.pop("speed", None)
    assert len(outputs["1"]) == 6 and outputs["1"] == outputs["2"]
    seed3, seed4 = (outputs["2"][f"tagger-x.seed{s}.json"] for s in (3, 4))
    assert seed3["tag_acc"] != seed4["tag_acc"]


def test_precision_scores_each_seed_as_setting_at_precision(pipelines, run_command, capsys, monkeypatch):
    """evaluate --precision int8: every seed's pipeline loaded with the elmo component's precision
    set to int8 (seen on the loaded component), its files named SETTING@int8[.seedN] with the
    precision asked for and the one that ran; paired by the report with the float32 files."""
    import spacy
    import torch

    from scripts.workflow.report import data as report_data
    from scripts.workflow.report import low_precision
    from spacy_elmo.nn.precision import running_precision

    loaded = []
    load_model = spacy.util.load_model

    def spy(*args, **kwargs):
        nlp = load_model(*args, **kwargs)
        loaded.append(nlp.get_pipe("elmo").precision if "elmo" in nlp.pipe_names else None)
        return nlp

    monkeypatch.setattr(spacy.util, "load_model", spy)
    training, test = pipelines["training"], pipelines["test"]
    float32, low = pipelines["base"] / "metrics", pipelines["base"] / "metrics_precision"
    args = ["evaluate", str(training), "--ner-test", str(test), "--setting", "ner-elmo", "--jobs", "1"]
    assert run_command(args[:2] + [str(float32)] + args[2:]) == 0
    assert loaded == ["float32", "float32"]
    assert run_command(args[:2] + [str(low)] + args[2:] + ["--precision", "int8"]) == 0
    assert loaded[2:] == ["int8", "int8"]
    assert sorted(p.name for p in low.iterdir()) == [
        f"ner-elmo@int8.seed{seed}{suffix}" for seed in (0, 1) for suffix in (".docs.json", ".json")
    ]
    ran = running_precision("int8", torch.device("cpu"))
    for seed in (0, 1):
        for name in (f"ner-elmo@int8.seed{seed}.json", f"ner-elmo@int8.seed{seed}.docs.json"):
            stored = read(low / name)
            assert stored["precision"] == "int8" and stored["elmo_precision"] == ran, name
            assert stored["model"].endswith(f"seed{seed}/model-best")
        assert "precision" not in read(float32 / f"ner-elmo.seed{seed}.json")
    capsys.readouterr()
    assert run_command(args[:2] + [str(low)] + args[2:] + ["--precision", "int8"]) == 0
    assert capsys.readouterr().out.count("scored earlier") == 2 and len(loaded) == 4
    settings = {**report_data.load_settings(float32), **report_data.load_settings(low)}
    (row,) = low_precision.precision_rows(settings, {}, resamples=200, rounds=200)
    assert row["name"] == "ner-elmo@int8" and row["ran_as"] == [ran]
    assert row["test"].seeds == ((0, 0), (1, 1)) and row["test"].n_docs == len(pipelines["docs"])


def test_precision_needs_an_elmo_component_and_a_known_value(pipelines, run_command, capsys, tmp_path):
    import typer

    args = ["evaluate", str(pipelines["training"]), str(tmp_path), "--ner-test", str(pipelines["test"])]
    with pytest.raises(SystemExit):
        run_command(args + ["--setting", "ner-baseline", "--precision", "int8"])
    assert "--precision needs an 'elmo' component" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())  # nothing scored
    with pytest.raises(typer.BadParameter, match="fp16"):
        run_command(args + ["--setting", "ner-elmo", "--precision", "fp16"])
