"""Steps side by side (scripts/workflow/parallel, scripts/run_workflow.py): the graph the real
project.yml makes, and the runner on a small project whose steps record when they ran."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import srsly
from weasel.util import load_project_config

from scripts.workflow.parallel import steps as graph

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def main_steps():
    steps = graph.workflow_steps(load_project_config(ROOT, overrides={}), "all")
    return {step.name: step for step in steps}


@pytest.mark.parametrize("a, b, expected", [("training/bilm/model-best/", "training/bilm/model-best", True),
                                            ("training/bilm", "training/bilm/model-best/config.json", True),
                                            ("training/bilm-adapted-ner/model-best", "training/bilm", False),
                                            ("corpus/ner/train.spacy", "corpus/pos/train.spacy", False)])
def test_overlaps(a, b, expected):
    assert graph.overlaps(a, b) is expected and graph.overlaps(b, a) is expected


def test_every_declared_path_is_one_path():
    """Bare variables next to each other merge into one string (confection): none may be left."""
    config = load_project_config(ROOT, overrides={})
    for command in config["commands"]:
        for path in command.get("deps", []) + command.get("outputs", []):
            assert ", " not in path and " " not in path.strip(), (command["name"], path)


def test_the_main_workflow_graph(main_steps):
    after = {name: step.after for name, step in main_steps.items()}
    assert after["preprocess"] == {"fetch"}
    for name in ("train-ner-baseline", "train-tagger-baseline", "train-tagger-small-baseline"):
        assert after[name] == {"preprocess"}, name  # beside the biLM's pretraining
    for name in ("adapt", "train-ner-elmo", "train-tagger-elmo", "spacy-pretrain-ner", "spacy-pretrain-tagger"):
        assert "pretrain" in after[name], name
    assert "adapt" in after["train-ner-elmo-adapted"] and "adapt" in after["train-tagger-small-elmo-adapted"]
    assert "spacy-pretrain-ner" in after["train-ner-spacy-pretrain"]
    assert "spacy-pretrain-tagger" in after["train-tagger-small-spacy-pretrain"]
    trained = {name for name in main_steps if name.startswith("train-")}
    assert trained <= after["evaluate"] and "evaluate" in after["report"]


def test_long_chains_come_first(main_steps):
    steps = list(main_steps.values())
    graph.set_priorities(steps, {"pretrain": 450, "spacy-pretrain-ner": 450, "train-ner-spacy-pretrain": 700,
                                 "train-tagger-small-baseline": 100})
    by_name = {step.name: step.priority for step in steps}
    assert by_name["pretrain"] > by_name["train-tagger-small-baseline"]
    assert by_name["fetch"] == max(by_name.values())
    assert by_name["spacy-pretrain-ner"] >= 450 + 700


STEP = ("import json, sys, time; from pathlib import Path; name, wait, fail = sys.argv[1], float(sys.argv[2]), "
        "sys.argv[3] == '1'; start = time.time(); time.sleep(wait); Path('out').mkdir(exist_ok=True); "
        "Path('out', name + '.json').write_text(json.dumps([start, time.time()])); sys.exit(3 if fail else 0)")


def write_project(folder: Path, fail: str = "") -> None:
    """a -> (b, c side by side) -> d; each step sleeps, then records when it ran."""
    def command(name: str, wait: float, deps=()):
        return {"name": name, "script": [f"python -c \"{STEP}\" {name} {wait} {int(name == fail)}"],
                "deps": list(deps), "outputs": [f"out/{name}.json"]}
    commands = [command("a", 0.1), command("b", 2.0, ["out/a.json"]), command("c", 2.0, ["out/a.json"]),
                command("d", 0.1, ["out/b.json", "out/c.json"])]
    srsly.write_yaml(folder / "project.yml", {"title": "t", "workflows": {"all": ["a", "b", "c", "d"]},
                                              "commands": commands})


def run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts.run_workflow", "all", str(folder), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def spans(folder: Path) -> dict:
    return {p.stem: json.loads(p.read_text()) for p in (folder / "out").glob("*.json")}


def test_independent_steps_run_side_by_side_and_reruns_skip(tmp_path):
    write_project(tmp_path)
    proc = run(tmp_path, "--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    t = spans(tmp_path)
    assert t["a"][1] <= min(t["b"][0], t["c"][0]) and max(t["b"][1], t["c"][1]) <= t["d"][0]
    assert max(t["b"][0], t["c"][0]) < min(t["b"][1], t["c"][1])  # b and c overlapped
    assert "b | Running command:" in proc.stdout  # each step's lines carry its name
    assert set(srsly.read_yaml(tmp_path / "project.lock")) == {"a", "b", "c", "d"}
    again = run(tmp_path, "--jobs", "2")
    assert again.returncode == 0 and all(f"Skipping '{s}': nothing changed" in again.stdout for s in "abcd")


def test_one_job_runs_the_steps_one_after_another(tmp_path):
    write_project(tmp_path)
    assert run(tmp_path, "--jobs", "1").returncode == 0
    t = spans(tmp_path)
    first, second = sorted((t["b"], t["c"]))
    assert first[1] <= second[0]


def test_a_failed_step_stops_new_steps_and_keeps_finished_ones(tmp_path):
    write_project(tmp_path, fail="b")
    proc = run(tmp_path, "--jobs", "2")
    assert proc.returncode == 1
    assert "step b (exit code 3) failed" in " ".join(proc.stdout.split())
    assert set(srsly.read_yaml(tmp_path / "project.lock")) == {"a", "c"}  # c ran beside b and finished
    assert not (tmp_path / "out" / "d.json").exists()
