"""A workflow as a graph (scripts/workflow/parallel/graph.py): the graph the real project.yml
makes, and the priorities that start long chains first."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts.workflow.parallel import graph
from scripts.workflow.parallel.weasel_api import load_project

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def main_steps():
    steps = graph.workflow_steps(load_project(ROOT, {}), "all")
    return {step.name: step for step in steps}


@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("training/bilm/model-best/", "training/bilm/model-best", True),
        ("training/bilm", "training/bilm/model-best/config.json", True),
        ("training/bilm-adapted-ner/model-best", "training/bilm", False),
        ("corpus/ner/train.spacy", "corpus/pos/train.spacy", False),
    ],
)
def test_overlaps(a, b, expected):
    assert graph.overlaps(a, b) is expected and graph.overlaps(b, a) is expected


def test_every_declared_path_is_one_path():
    """Bare variables next to each other merge into one string (confection): none may be left."""
    config = load_project(ROOT, {})
    for command in config["commands"]:
        for path in command.get("deps", []) + command.get("outputs", []):
            assert ", " not in path and " " not in path.strip(), (command["name"], path)


def test_the_main_workflow_graph(main_steps):
    after = {name: step.after for name, step in main_steps.items()}
    assert after["preprocess"] == {"fetch"} and after["preprocess-conll"] == {"fetch"}
    assert after["train-conll-small-baseline"] == {"preprocess-conll"}  # beside the biLM's pretraining
    assert after["train-tagger-small-baseline"] == {"preprocess"}
    for name in ("train-conll-small-elmo", "train-tagger-small-elmo", "spacy-pretrain-ner", "distill-ner"):
        assert "pretrain" in after[name], name
    assert not {"adapt-bilms", "train-conll-small-elmo-adapted", "train-tagger-small-elmo-adapted"} & set(after)
    assert "spacy-pretrain-ner" in after["train-conll-small-spacy-pretrain"]
    assert "distill-ner" in after["train-conll-small-elmo-distilled"]
    trained = {name for name in main_steps if name.startswith("train-")}
    assert trained <= after["evaluate"] and "evaluate" in after["report"]
    # the ELMo settings at bfloat16 and int8: after their training and the test sets, before the
    # price (which wants the cores to itself) and the report
    assert after["evaluate-precision"] == {
        "preprocess",
        "preprocess-conll",
        "train-conll-small-elmo",
        "train-tagger-small-elmo",
    }
    assert {"evaluate", "evaluate-precision"} <= after["price"]
    assert {"evaluate", "price"} <= after["report"]  # the precision scores reach it through the price


def test_long_chains_come_first(main_steps):
    steps = list(main_steps.values())
    graph.set_priorities(
        steps,
        {
            "pretrain": 450,
            "spacy-pretrain-ner": 450,
            "train-conll-small-spacy-pretrain": 700,
            "train-tagger-small-baseline": 100,
        },
    )
    by_name = {step.name: step.priority for step in steps}
    assert by_name["pretrain"] > by_name["train-tagger-small-baseline"]
    assert by_name["fetch"] == max(by_name.values())
    assert by_name["spacy-pretrain-ner"] >= 450 + 700
