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
    assert times_file_for(variables, "robustness") == Path("reports/robustness_step_times.json")
    assert "--step-times reports/step_times.json" in commands["report"]["script"][0]
    assert times_file_for(variables, "textcat") == Path("reports/textcat_step_times.json")
    assert "--step-times reports/textcat_step_times.json" in commands["report-textcat"]["script"][0]
    assert times_file_for(variables, "probe") == Path("reports/probe_step_times.json")


ROBUSTNESS_STEPS = [
    "pretrain-bilm-seed1",
    "pretrain-bilm-seed2",
    "train-ner-elmo-bilm1",
    "train-ner-elmo-bilm2",
    "train-tagger-small-elmo-bilm1",
    "train-tagger-small-elmo-bilm2",
    "evaluate-robustness",
    "report",
]


def test_the_robustness_workflow_stays_out_of_all(config):
    workflows = config["workflows"]
    assert workflows["robustness"] == ROBUSTNESS_STEPS
    assert not set(ROBUSTNESS_STEPS[:-1]) & set(workflows["all"])


def test_each_extra_biLM_is_the_pretrain_step_with_another_seed(config, commands):
    """Same config, text, token budget and options as `all`'s biLM; only the folder and the seed
    differ (the config's own seed, 0, is `all`'s)."""
    pretrain = commands["pretrain"]
    (line,) = pretrain["script"]
    assert "--system.seed" not in line and config["vars"]["bilm_dir"] == "training/bilm"
    for seed in (1, 2):
        folder = f"training/bilm-seed{seed}"
        step = commands[f"pretrain-bilm-seed{seed}"]
        expected = line.replace("training/bilm/cpu_time.json", f"{folder}/cpu_time.json")
        expected = expected.replace(" training/bilm ", f" {folder} ") + f" --system.seed {seed}"
        assert step["script"] == [expected]
        assert step["deps"] == pretrain["deps"]
        assert {f"{folder}/model-best", f"{folder}/metrics.jsonl", f"{folder}/cpu_time.json"} <= set(step["outputs"])


def test_each_extra_biLM_trains_alls_elmo_settings(commands):
    """train-ner-elmo and train-tagger-small-elmo, the same seeds and options, on another biLM
    and into SETTING@bilmN."""
    from scripts.workflow.report import data

    for seed in (1, 2):
        folder = f"training/bilm-seed{seed}"
        for setting in ("ner-elmo", "tagger-small-elmo"):
            original, step = commands[f"train-{setting}"], commands[f"train-{setting}-bilm{seed}"]
            name = data.bilm_setting_name(setting, seed)
            assert data.split_bilm(name) == (setting, seed) and data.parse_setting(name) is None
            (line,) = original["script"]
            expected = line.replace(f" training/{setting} ", f" training/{name} ")
            expected = expected.replace("--paths.elmo training/bilm/model-best", f"--paths.elmo {folder}/model-best")
            assert expected != line and step["script"] == [expected]
            assert step["deps"] == [
                f"{folder}/model-best" if dep.rstrip("/") == "training/bilm/model-best" else dep
                for dep in original["deps"]
            ]
            assert step["outputs"] == [f"training/{name}"]


def test_the_robustness_settings_are_scored_as_alls(commands):
    (line,) = commands["evaluate"]["script"]
    (robust,) = commands["evaluate-robustness"]["script"]
    settings = ["ner-elmo@bilm1", "ner-elmo@bilm2", "tagger-small-elmo@bilm1", "tagger-small-elmo@bilm2"]
    assert robust == line.split(" --setting ")[0] + "".join(f" --setting {name}" for name in settings)
    assert commands["evaluate-robustness"]["deps"] == commands["evaluate"]["deps"][:2] + [
        f"training/{name}" for name in settings
    ]
    assert commands["evaluate-robustness"]["outputs"] == commands["evaluate"]["outputs"]


def test_the_robustness_steps_wait_for_their_own_biLM(config):
    from scripts.workflow.parallel.graph import workflow_steps

    after = {step.name: step.after for step in workflow_steps(config, "robustness")}
    assert after["pretrain-bilm-seed1"] == after["pretrain-bilm-seed2"] == set()
    for seed in (1, 2):
        for setting in ("ner-elmo", "tagger-small-elmo"):
            assert after[f"train-{setting}-bilm{seed}"] == {f"pretrain-bilm-seed{seed}"}
    assert after["evaluate-robustness"] == set(ROBUSTNESS_STEPS[2:6])
    assert after["report"] == {"evaluate-robustness"}


def test_the_report_states_the_robustness_workflows_own_times(config, commands):
    times = times_file_for(config["vars"], "robustness")
    assert times == Path("reports/robustness_step_times.json")
    assert f"--robustness-step-times {times.as_posix()}" in commands["report"]["script"][0]
    assert f"--step-times {times_file_for(config['vars'], 'all').as_posix()}" in commands["report"]["script"][0]
