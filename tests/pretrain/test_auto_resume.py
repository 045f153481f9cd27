"""--auto-resume: the same inputs continue an interrupted run (ending where an uninterrupted run
does), other inputs start over, and a folder that is not a run is never deleted."""

from __future__ import annotations

import json
import shutil

import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.nn import BiLM
from spacy_elmo.pretrain import PretrainError, pretrain
from spacy_elmo.pretrain.output_folder import read_metrics
from spacy_elmo.pretrain.resume import content_digest, describe_inputs, resume_or_start_over

from .conftest import TINY_CONFIG, tiny_settings

FAST = {"training__checkpoint_every": 3, "training__eval_every": 3, "softmax__n_negatives": 16}
INPUTS = {"config": "a.cfg", "overrides": ["--paths.train", "t.txt"], "sha256": {"a.cfg": "00"}}


def run(corpus_dir, out, steps, inputs):
    settings, config = tiny_settings(corpus_dir, training__max_steps=steps, **FAST)
    return pretrain(settings, out, config_text=config.to_str(), progress=False, auto_resume=inputs)


def same_weights(a, b):
    left, right = BiLM.from_disk(a).state_dict(), BiLM.from_disk(b).state_dict()
    return all(torch.equal(left[name], right[name]) for name in left)


def test_same_inputs_resume_and_end_like_an_uninterrupted_run(corpus_dir, tmp_path):
    run(corpus_dir, tmp_path / "straight", 6, None)
    out = tmp_path / "out"
    run(corpus_dir, out, 3, INPUTS)  # stands for a run of these inputs stopped at its step-3 checkpoint
    assert json.loads((out / "inputs.json").read_text()) == INPUTS
    result = run(corpus_dir, out, 6, INPUTS)
    assert result.step == 6
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [3, 6]
    assert same_weights(out / "model-last", tmp_path / "straight" / "model-last")


def test_other_inputs_delete_the_old_run_and_start_over(corpus_dir, tmp_path):
    out = tmp_path / "out"
    run(corpus_dir, out, 3, INPUTS)
    (out / "stale.txt").write_text("left by the old run")
    other = {**INPUTS, "overrides": ["--paths.train", "other.txt"]}
    result = run(corpus_dir, out, 3, other)
    assert result.step == 3 and not (out / "stale.txt").exists()
    assert json.loads((out / "inputs.json").read_text()) == other
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [3]


def test_a_run_without_a_checkpoint_starts_over(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "inputs.json").write_text(json.dumps(INPUTS))
    (out / "config.cfg").write_text("[paths]\n")
    assert resume_or_start_over(out, INPUTS) is False
    assert sorted(p.name for p in out.iterdir()) == ["inputs.json"]


@pytest.mark.parametrize(
    "content", [["notes.txt"], ["config.cfg", "meta.json"]], ids=["any-folder", "a-spacy-pipeline"]
)
def test_a_folder_that_is_not_a_run_is_never_deleted(corpus_dir, tmp_path, content):
    out = tmp_path / "mine"
    out.mkdir()
    for name in content:
        (out / name).write_text("keep me")
    with pytest.raises(PretrainError, match="holds no pretraining run: not deleting it"):
        run(corpus_dir, out, 3, INPUTS)
    assert sorted(p.name for p in out.iterdir()) == sorted(content)


def test_an_empty_folder_is_used(corpus_dir, tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert run(corpus_dir, out, 3, INPUTS).step == 3


def test_the_current_folder_is_never_deleted(tmp_path, monkeypatch):
    (tmp_path / "metrics.jsonl").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PretrainError, match="holds the current folder"):
        resume_or_start_over(tmp_path, INPUTS)
    assert (tmp_path / "metrics.jsonl").exists()


def test_inputs_name_the_content_of_every_path_given(tmp_path):
    config, text, folder = tmp_path / "a.cfg", tmp_path / "t.txt", tmp_path / "dev"
    config.write_text("[paths]\n")
    text.write_text("one line\n")
    folder.mkdir()
    (folder / "x.txt").write_text("x\n")
    inputs = describe_inputs(config, ["--paths.train", str(text), f"--paths.dev={folder}", "--training.max_steps", "3"])
    assert inputs["config"] == str(config) and inputs["overrides"][-1] == "3"
    assert set(inputs["sha256"]) == {str(config), str(text), str(folder)}
    before = content_digest(folder)
    (folder / "x.txt").rename(folder / "y.txt")  # same bytes, another name: another folder
    assert content_digest(folder) != before
    text.write_text("another line\n")
    assert describe_inputs(config, ["--paths.train", str(text)])["sha256"][str(text)] != inputs["sha256"][str(text)]


def test_the_command_resumes_a_finished_run_and_starts_over_on_new_text(corpus_dir, tmp_path):
    train = tmp_path / "train.txt"
    shutil.copy(corpus_dir / "train.txt", train)
    out = tmp_path / "out"
    args = [
        "pretrain",
        str(TINY_CONFIG),
        str(out),
        "--auto-resume",
        "--quiet",
        "--paths.train",
        str(train),
        "--paths.dev",
        str(corpus_dir / "dev.txt"),
        "--training.max_steps",
        "3",
        "--training.eval_every",
        "3",
    ]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    (out / "mark.txt").write_text("gone when the run starts over")
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "Done: 3 steps" in again.output
    assert (out / "mark.txt").exists()  # resumed (already finished: nothing trained twice)
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [3]
    train.write_text(train.read_text()[: len(train.read_text()) // 2])
    changed = CliRunner().invoke(app, args)
    assert changed.exit_code == 0, changed.output
    assert not (out / "mark.txt").exists()
    recorded = json.loads((out / "inputs.json").read_text())
    assert recorded["sha256"][str(train)] == content_digest(train)
    both = CliRunner().invoke(app, args + ["--resume"])
    assert both.exit_code == 1 and "exclude each other" in both.output
