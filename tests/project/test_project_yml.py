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
    for name in ("spacy-pretrain-ner", "spacy-pretrain-tagger", "distill-ner", "distill-tagger"):
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
    for workflow, option in (("tweets", "--tweets-step-times"), ("conll-full", "--conll-full-step-times")):
        times = times_file_for(variables, workflow)
        assert times == Path(f"reports/{workflow.replace('-', '_')}_step_times.json")
        assert f"{option} {times.as_posix()}" in commands["report"]["script"][0]
    assert times_file_for(variables, "tagger") == Path("reports/tagger_step_times.json")
    assert "--step-times reports/step_times.json" in commands["report"]["script"][0]
    assert times_file_for(variables, "textcat") == Path("reports/textcat_step_times.json")
    assert "--step-times reports/textcat_step_times.json" in commands["report-textcat"]["script"][0]
    assert times_file_for(variables, "probe") == Path("reports/probe_step_times.json")


ROBUSTNESS_STEPS = [
    "pretrain-bilm-seed1",
    "pretrain-bilm-seed2",
    "train-conll-small-elmo-bilm1",
    "train-conll-small-elmo-bilm2",
    "train-tagger-small-elmo-bilm1",
    "train-tagger-small-elmo-bilm2",
    "evaluate-robustness",
    "report",
]
ELMO_SETTINGS = ("conll-small-elmo", "tagger-small-elmo")


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
    """train-conll-small-elmo and train-tagger-small-elmo, the same seeds and options, on another
    biLM and into SETTING@bilmN."""
    from scripts.workflow.report import data

    for seed in (1, 2):
        folder = f"training/bilm-seed{seed}"
        for setting in ELMO_SETTINGS:
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
    settings = [f"{setting}@bilm{seed}" for setting in ELMO_SETTINGS for seed in (1, 2)]
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
        for setting in ELMO_SETTINGS:
            assert after[f"train-{setting}-bilm{seed}"] == {f"pretrain-bilm-seed{seed}"}
    assert after["evaluate-robustness"] == set(ROBUSTNESS_STEPS[2:6])
    assert after["report"] == {"evaluate-robustness"}


def test_the_report_states_the_robustness_workflows_own_times(config, commands):
    times = times_file_for(config["vars"], "robustness")
    assert times == Path("reports/robustness_step_times.json")
    assert f"--robustness-step-times {times.as_posix()}" in commands["report"]["script"][0]
    assert f"--step-times {times_file_for(config['vars'], 'all').as_posix()}" in commands["report"]["script"][0]


DISTILL_STEPS = [
    "distill-ner",
    "distill-tagger",
    "train-conll-small-elmo-distilled",
    "train-tagger-small-elmo-distilled",
]


def test_the_distill_steps_run_after_their_inputs(config):
    """The NER's run in `all`, the tagger's in the `tagger` workflow, each before its evaluate
    step and waiting only for what it reads."""
    from scripts.workflow.parallel.graph import workflow_steps

    for workflow, task, setting, evaluate in (
        ("all", "ner", "conll-small", "evaluate"),
        ("tagger", "tagger", "tagger-small", "evaluate-tagger"),
    ):
        steps = config["workflows"][workflow]
        names = [f"spacy-pretrain-{task}", f"distill-{task}", f"train-{setting}-elmo-distilled"]
        assert all(steps.index(name) < steps.index(evaluate) for name in names), workflow
        after = {step.name: step.after for step in workflow_steps(config, workflow)}
        assert f"train-{setting}-elmo-distilled" in after[evaluate]
    after = {step.name: step.after for step in workflow_steps(config, "all")}
    # the biLM's weights and its CPU time (model-best, cpu_time.json), the text (preprocess)
    assert after["distill-ner"] == after["spacy-pretrain-ner"] | {"pretrain"} == {"preprocess", "pretrain"}
    assert after["train-conll-small-elmo-distilled"] == {"preprocess-conll", "distill-ner"}


def test_distilling_is_the_spacy_pretrain_step_with_the_elmo_objective(config, commands):
    """Same command, text and CPU-second budget as spaCy's pretraining; the distill config, its own
    folder, the workflow's biLM and the objective's target and loss as overrides."""
    for task in ("ner", "tagger"):
        (spacy_line,) = commands[f"spacy-pretrain-{task}"]["script"]
        (line,) = commands[f"distill-{task}"]["script"]
        expected = spacy_line.replace(f"configs/{task}_baseline.cfg", f"configs/{task}_distill.cfg")
        expected = expected.replace(f"training/spacy-pretrain-{task}", f"training/distill-{task}")
        expected += (
            " --paths.elmo training/bilm/model-best --pretraining.objective.target average"
            " --pretraining.objective.loss cosine"
        )
        assert line == expected
        spacy_deps = commands[f"spacy-pretrain-{task}"]["deps"]
        deps = [dep.replace("_baseline", "_distill") for dep in spacy_deps] + ["training/bilm/model-best/"]
        assert sorted(commands[f"distill-{task}"]["deps"]) == sorted(deps)
        assert commands[f"distill-{task}"]["outputs"] == [
            f"training/distill-{task}/model-last.bin",
            f"training/distill-{task}/run.json",
        ]


def test_the_distilled_settings_train_as_the_spacy_pretrain_settings(commands):
    """The baseline config, seeds and options of the spacy-pretrain settings, with init_tok2vec
    from the distill step's weights (model-last.bin, as there): each task's own, since the NER's
    tok2vec (the parser's, with its projection) is not the tagger's."""
    for setting, folder in (("conll-small", "distill-ner"), ("tagger-small", "distill-tagger")):
        (line,) = commands[f"train-{setting}-spacy-pretrain"]["script"]
        spacy_folder = folder.replace("distill", "spacy-pretrain")
        expected = line.replace(f"training/{setting}-spacy-pretrain ", f"training/{setting}-elmo-distilled ")
        expected = expected.replace(f"{spacy_folder}/model-last.bin", f"{folder}/model-last.bin")
        assert expected != line and commands[f"train-{setting}-elmo-distilled"]["script"] == [expected]
        assert commands[f"train-{setting}-elmo-distilled"]["deps"] == [
            dep.replace(spacy_folder, folder) for dep in commands[f"train-{setting}-spacy-pretrain"]["deps"]
        ]
        assert commands[f"train-{setting}-elmo-distilled"]["outputs"] == [f"training/{setting}-elmo-distilled"]


def test_evaluate_scores_the_distilled_settings(commands):
    for step, setting in (
        ("evaluate", "conll-small-elmo-distilled"),
        ("evaluate-tagger", "tagger-small-elmo-distilled"),
    ):
        line = commands[step]["script"][0]
        assert f" --setting {setting}" in line and f"training/{setting}" in commands[step]["deps"]
    report = commands["report"]["script"][0]
    assert "--spacy-pretrain-dir training/distill-ner --spacy-pretrain-dir training/distill-tagger" in report


def _distill_config(commands: dict, task: str):
    """The distill step's config as spacy pretrain gets it: the step's overrides applied."""
    import shlex

    from spacy.util import load_config

    from scripts.workflow.training.runs import parse_overrides

    (line,) = commands[f"distill-{task}"]["script"]
    words = shlex.split(line)
    start = words.index("spacy-pretrain")
    config_path, rest = words[start + 1], words[start + 3 :]
    for option in ("--text", "--cpu-seconds-from"):  # the command's own options
        at = rest.index(option)
        del rest[at : at + 2]
    overrides = {**parse_overrides(rest), "paths.raw_text": "text.jsonl"}
    return load_config(ROOT / config_path, overrides=overrides, interpolate=True)


@pytest.mark.parametrize("target, loss", [(None, None), ("layers", "l2"), ("mix", "cosine+l2")])
def test_the_distill_overrides_resolve(target, loss):
    """`--vars.distill_target` / `distill_loss` reach the objective; the block resolves (the biLM
    is read only when spacy pretrain builds the objective)."""
    from spacy.schemas import ConfigSchemaPretrain
    from spacy.util import registry

    overrides = {"vars.distill_target": target, "vars.distill_loss": loss} if target else {}
    project = load_project(ROOT, overrides)
    commands = {command["name"]: command for command in project["commands"]}
    for task in ("ner", "tagger"):
        config = _distill_config(commands, task)
        objective = config["pretraining"]["objective"]
        assert objective["@architectures"] == "spacy_elmo.PretrainElmo.v1"
        assert objective["weights"] == "training/bilm/model-best" == project["vars"]["bilm_model"]
        assert (objective["target"], objective["loss"]) == (target or "average", loss or "cosine")
        if target == "mix":  # "mix" needs layer weights: the objective says so
            with pytest.raises(ValueError, match="layer_weights"):
                registry.resolve(config["pretraining"], schema=ConfigSchemaPretrain)
            continue
        resolved = registry.resolve(config["pretraining"], schema=ConfigSchemaPretrain)
        assert callable(resolved["objective"]) and resolved["component"] == task


def test_a_bad_distill_setting_is_named():
    from spacy.schemas import ConfigSchemaPretrain
    from spacy.util import registry

    commands = {c["name"]: c for c in load_project(ROOT, {"vars.distill_loss": "hinge"})["commands"]}
    with pytest.raises(ValueError, match="loss must be one of .*not 'hinge'"):
        registry.resolve(_distill_config(commands, "ner")["pretraining"], schema=ConfigSchemaPretrain)


PRECISION_SETTINGS = ("conll-small-elmo", "tagger-small-elmo")


def test_the_precision_step_scores_alls_elmo_settings_at_each_precision(config, commands):
    """evaluate-precision: the evaluate step's command for the ELMo settings of `all` with
    --precision bfloat16 --precision int8, into its own folder, which price and report read."""
    steps = config["workflows"]["all"]
    assert steps.index("evaluate") < steps.index("evaluate-precision") < steps.index("report")
    (line,) = commands["evaluate-precision"]["script"]
    (evaluate,) = commands["evaluate"]["script"]
    assert line.startswith("python -m scripts --threads 1 evaluate training metrics_precision ")
    assert "--precision bfloat16 --precision int8" in line and "--conll-test corpus/conll/test.spacy" in line
    assert evaluate.split(" --setting ")[0].replace(" metrics ", " metrics_precision ") in line
    assert line.split(" --setting ")[1:] == [
        "conll-small-elmo",
        "tagger-small-elmo --precision bfloat16 --precision int8 --jobs 0",
    ]
    assert sorted(commands["evaluate-precision"]["deps"]) == sorted(
        ["corpus/conll/test.spacy/", "corpus/pos/test.spacy/"] + [f"training/{name}" for name in PRECISION_SETTINGS]
    )
    assert commands["evaluate-precision"]["outputs"] == ["metrics_precision/"]
    assert "--precision-metrics-dir metrics_precision " in commands["report"]["script"][0]
    # the price of each precision, after the precision scores (the cores to itself)
    first, second = commands["price"]["script"]
    assert second.startswith(first.split(" --setting ")[0] + " --precision bfloat16 --precision int8 ")
    assert second.split(" --setting ")[1:] == list(PRECISION_SETTINGS)
    assert "metrics_precision/" in commands["price"]["deps"]


def test_all_holds_the_headline_settings_named_as_the_report_reads_them(config, commands):
    """`all`: CoNLL-2003 low-resource NER (the baseline, ELMo, spaCy's pretraining, the distilled
    tok2vec) and the small tagger (the baseline, ELMo), every one evaluated and priced, every name
    TASK[-small]-VARIANT; the tagger's other settings and the tweets are workflows of their own."""
    from scripts.workflow.report import data

    steps = config["workflows"]["all"]
    (evaluate,) = commands["evaluate"]["script"]
    (price, _) = commands["price"]["script"]
    for task, variants in (
        ("conll-small", ("baseline", "elmo", "spacy-pretrain", "elmo-distilled")),
        ("tagger-small", ("baseline", "elmo")),
    ):
        for variant in variants:
            setting = f"{task}-{variant}"
            assert f"train-{setting}" in steps and data.parse_setting(setting) is not None, setting
            assert f"--setting {setting} " in evaluate + " " and f"--setting {setting} " in price + " ", setting
            assert commands[f"train-{setting}"]["outputs"] == [f"training/{setting}"]
    trained = [step for step in steps if step.startswith("train-")]
    assert not [step for step in trained if step.startswith(("train-ner", "train-tweets"))]
    assert not {"train-tagger-baseline", "train-tagger-elmo", "train-tagger-small-spacy-pretrain"} & set(steps)
    for step in ("train-conll-small-baseline", "train-conll-small-elmo"):
        (line,) = commands[step]["script"]
        assert "--seeds 0,1,2,3,4 " in line and "--paths.train corpus/conll/train_small.spacy " in line
        assert "--paths.dev corpus/conll/dev.spacy " in line


def test_leaving_conll_out_reaches_its_steps():
    """--vars.leave_out=conll2003: the fetch step and preprocess-conll are told; the training
    steps read the left-out corpus (its marker), the evaluation and price steps the training
    folders (tested in their own modules)."""
    commands = {c["name"]: c for c in load_project(ROOT, {"vars.leave_out": "conll2003"})["commands"]}
    assert "--leave-out=conll2003" in commands["fetch"]["script"][0]
    assert "--leave-out=conll2003" in commands["preprocess-conll"]["script"][0]


def test_the_tweets_workflow_cross_validates(config, commands):
    """preprocess-tweets writes tweets_folds folds; every tweets step trains once per fold and seed
    on the fold's files ({fold}); evaluate-tweets scores each on its fold's test split into its own
    folder, which the report reads."""
    steps = config["workflows"]["tweets"]
    assert steps[0] == "preprocess-tweets" and steps[-2:] == ["evaluate-tweets", "report"]
    assert "--folds 5" in commands["preprocess-tweets"]["script"][0]
    names = ["tweets-baseline", "tweets-elmo", "tweets-elmo@bilm1", "tweets-elmo@bilm2"]
    for name in names:
        step = "train-" + name.replace("@", "-")
        assert step in steps
        (line,) = commands[step]["script"]
        assert f"training/{name} --seeds 0,1,2 --folds 5 " in line
        assert (
            "--paths.train corpus/tweets/fold{fold}/train.spacy --paths.dev corpus/tweets/fold{fold}/dev.spacy" in line
        )
    (evaluate,) = commands["evaluate-tweets"]["script"]
    assert "metrics/tweets --tweets-test corpus/tweets/fold{fold}/test.spacy" in evaluate
    assert evaluate.split(" --setting ")[1:] == names[:-1] + [names[-1] + " --jobs 0"]
    assert "--tweets-metrics-dir metrics/tweets" in commands["report"]["script"][0]
    assert not set(steps[:-1]) & set(config["workflows"]["all"])


def test_conll_full_trains_on_the_whole_training_split(config, commands):
    assert config["workflows"]["conll-full"] == [
        "train-conll-baseline",
        "train-conll-elmo",
        "evaluate-conll-full",
        "report",
    ]
    for step in ("train-conll-baseline", "train-conll-elmo"):
        (line,) = commands[step]["script"]
        assert "--paths.train corpus/conll/train.spacy --paths.dev corpus/conll/dev.spacy" in line
    (evaluate,) = commands["evaluate-conll-full"]["script"]
    assert "--conll-test corpus/conll/test.spacy --setting conll-baseline --setting conll-elmo" in evaluate


def test_the_silver_steps_read_nothing_of_dev_or_test_and_only_students_read_silver(config, commands):
    """A teacher labels training text only (never a dev or test file); the silver reaches the
    students' training reader (paths.silver) and nothing else; a student and its self-training
    control differ only in whose silver they read."""
    variables = config["vars"]
    held_out = {value for name, value in variables.items() if name.endswith(("_dev", "_test")) and value}
    silver_dir = variables["silver_dir"]
    labelling = {name: command for name, command in commands.items() if name.startswith("label-silver-")}
    assert labelling
    for name, command in labelling.items():
        named = " ".join(command["script"] + command["deps"])
        assert not [path for path in held_out if path in named], name
        assert all(path.startswith(silver_dir) for path in command["outputs"]), name
    students = [name for name in commands if name.endswith(("-elmo-silver", "-self-training"))]
    for name, command in commands.items():
        reads_silver = any(silver_dir in line for line in command["script"])
        if name in students:
            (line,) = command["script"]
            assert re.findall(rf"(--\S+) {re.escape(silver_dir)}", line) == ["--paths.silver"], name
        elif name != "report" and not name.startswith("label-silver-"):
            assert not reads_silver, name
    for student in (name for name in students if name.endswith("-elmo-silver")):
        control = student.replace("-elmo-silver", "-self-training")
        teacher_line, control_line = commands[student]["script"][0], commands[control]["script"][0]
        setting = student.removeprefix("train-")
        assert control_line == teacher_line.replace(setting, setting.replace("-elmo-silver", "-self-training")).replace(
            f"{silver_dir}/{setting.replace('-elmo-silver', '-elmo')}/",
            f"{silver_dir}/{setting.replace('-elmo-silver', '-baseline')}/",
        ), student
