"""project.yml's own rules: the runner times the steps (no clock lines), one threads setting,
and spaCy's pretraining reads its budget from a file the steps declare."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import srsly

from scripts.workflow.parallel.step_times import times_file_for
from scripts.workflow.parallel.weasel_api import load_project

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def config() -> dict:
    return load_project(ROOT, {})


@pytest.fixture(scope="module")
def commands(config) -> dict:
    return {command["name"]: command for command in config["commands"]}


def test_no_step_times_itself(commands):
    for name, command in commands.items():
        for line in command["script"]:
            assert "step_clock" not in line, (name, line)


def test_threads_come_from_one_variable():
    raw = srsly.read_yaml(ROOT / "project.yml")
    assert [name for name in raw["vars"] if "thread" in name] == ["threads"]
    lines = [line for command in raw["commands"] for line in command["script"]]
    settings = re.findall(r"--(?:system\.)?threads (\S+)", " ".join(lines))
    assert settings and set(settings) == {"${vars.threads}"}
    torch_steps = {"train-seeds", "train-probes", "spacy-pretrain", "evaluate", "report", "report-textcat"}
    for line in lines:  # every step that runs torch gets the setting
        app_command = re.match(r"python -m scripts (?:--threads \S+ )?(\S+)", line)
        if "spacy_elmo pretrain" in line or (app_command and app_command.group(1) in torch_steps):
            assert "threads ${vars.threads}" in line, line


def test_the_spacy_pretraining_budget_is_a_declared_file(config, commands):
    budget = config["vars"]["bilm_cpu_time"]
    assert budget == "training/bilm/cpu_time.json"
    pretrain = commands["pretrain"]
    assert [
        line
        for line in pretrain["script"]
        if line.startswith(f"python -m scripts timed {budget} -m spacy_elmo pretrain ")
    ]
    assert f"{budget}/" in pretrain["outputs"]
    for name in ("spacy-pretrain-ner", "spacy-pretrain-tagger"):
        (line,) = commands[name]["script"]
        assert f"--cpu-seconds-from {budget}" in line, name
        assert f"{budget}/" in commands[name]["deps"], name
    assert f"{budget}/" in commands["report"]["deps"]
    assert f"--bilm-cpu-time {budget}" in commands["report"]["script"][0]


def test_each_report_reads_the_times_its_workflows_record(config, commands):
    variables = config["vars"]
    for workflow in ("all", "ner-small", "published"):
        assert times_file_for(variables, workflow) == Path("reports/step_times.json")
    assert "--step-times reports/step_times.json" in commands["report"]["script"][0]
    assert times_file_for(variables, "textcat") == Path("reports/textcat_step_times.json")
    assert "--step-times reports/textcat_step_times.json" in commands["report-textcat"]["script"][0]
    assert times_file_for(variables, "probe") == Path("reports/probe_step_times.json")
