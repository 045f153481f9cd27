"""--auto-resume: the same settings continue an interrupted run (ending where an uninterrupted run
does), however the command spells them; other settings start over and keep the old run aside,
saying what differs; a folder that is not a run is never touched."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.nn import BiLM
from spacy_elmo.pretrain import PretrainError, pretrain
from spacy_elmo.pretrain.output_folder import read_metrics
from spacy_elmo.pretrain.resume import content_digest, describe_run, move_aside, resume_or_start_over

from .conftest import REPO_ROOT, TINY_CONFIG, tiny_settings

FAST = {"training__checkpoint_every": 3, "training__eval_every": 3, "softmax__n_negatives": 16}


def run(corpus_dir, out, steps, auto_resume=True, **extra):
    settings, config = tiny_settings(corpus_dir, training__max_steps=steps, **FAST, **extra)
    return pretrain(settings, out, config_text=config.to_str(), progress=False, auto_resume=auto_resume)


def record(corpus_dir, steps, **extra):
    return describe_run(tiny_settings(corpus_dir, training__max_steps=steps, **FAST, **extra)[0])


def same_weights(a, b):
    left, right = BiLM.from_disk(a).state_dict(), BiLM.from_disk(b).state_dict()
    return all(torch.equal(left[name], right[name]) for name in left)


@pytest.fixture
def pretrain_warnings(caplog, monkeypatch):
    """The pretraining logger's warnings (the command's logging setup stops them propagating)."""
    monkeypatch.setattr(logging.getLogger("spacy_elmo.pretrain"), "propagate", True)
    with caplog.at_level(logging.WARNING, logger="spacy_elmo.pretrain"):
        yield caplog


def test_same_settings_resume_and_end_like_an_uninterrupted_run(corpus_dir, tmp_path):
    run(corpus_dir, tmp_path / "straight", 6, auto_resume=False)
    out = tmp_path / "out"
    run(corpus_dir, out, 3)
    # What a 6-step run stopped at its step-3 checkpoint leaves: its record says 6 steps.
    (out / "inputs.json").write_text(json.dumps(record(corpus_dir, 6)))
    result = run(corpus_dir, out, 6)
    assert result.step == 6
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [3, 6]
    assert same_weights(out / "model-last", tmp_path / "straight" / "model-last")


def test_other_settings_keep_the_old_run_aside_and_start_over(corpus_dir, tmp_path, pretrain_warnings):
    out = tmp_path / "out"
    run(corpus_dir, out, 3)
    (out / "mark.txt").write_text("the old run")
    result = run(corpus_dir, out, 3, training__learning_rate=0.1)
    assert result.step == 3 and not (out / "mark.txt").exists()
    aside = tmp_path / "out.previous-1"
    assert (aside / "mark.txt").read_text() == "the old run" and (aside / "checkpoint.pt").is_file()
    assert json.loads((out / "inputs.json").read_text()) == record(corpus_dir, 3, training__learning_rate=0.1)
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [3]
    assert f"--auto-resume: {out} holds a run of other settings, kept as {aside}" in pretrain_warnings.text
    assert "  training.learning_rate: 0.01 -> 0.1" in pretrain_warnings.messages
    assert len([m for m in pretrain_warnings.messages if m.startswith("  ")]) == 1  # one line per setting


def test_a_run_aside_is_never_overwritten(tmp_path):
    out = tmp_path / "out"
    for number in (1, 2):
        (tmp_path / f"out.previous-{number}").mkdir()
        (tmp_path / f"out.previous-{number}" / "keep.txt").write_text(str(number))
    (tmp_path / "out.previous-3").symlink_to(tmp_path / "elsewhere")  # a dangling link is taken too
    out.mkdir()
    (out / "metrics.jsonl").write_text("")
    assert move_aside(out) == tmp_path / "out.previous-4"
    assert (tmp_path / "out.previous-4" / "metrics.jsonl").exists() and not out.exists()
    assert [(tmp_path / f"out.previous-{n}" / "keep.txt").read_text() for n in (1, 2)] == ["1", "2"]
    assert not (tmp_path / "elsewhere").exists()


def test_a_changed_training_file_is_named(corpus_dir, tmp_path, pretrain_warnings):
    train = tmp_path / "train.txt"
    shutil.copy(corpus_dir / "train.txt", train)
    out = tmp_path / "out"
    run(corpus_dir, out, 3, paths__train=str(train))
    train.write_text(train.read_text()[: len(train.read_text()) // 2])
    run(corpus_dir, out, 3, paths__train=str(train))
    assert (tmp_path / "out.previous-1" / "checkpoint.pt").is_file()
    assert f"  paths.train: other content ({train})" in pretrain_warnings.messages


def test_a_run_of_an_older_record_or_of_no_record_is_kept_aside(tmp_path, pretrain_warnings):
    out = tmp_path / "out"
    out.mkdir()
    (out / "checkpoint.pt").write_bytes(b"a run started without --auto-resume")
    current = {"format": 2, "settings": {"system.seed": 0}, "files": {}}
    assert resume_or_start_over(out, current) is False
    assert (tmp_path / "out.previous-1" / "checkpoint.pt").exists()
    assert "it has no readable inputs.json" in pretrain_warnings.text
    (out / "checkpoint.pt").write_bytes(b"a run of an older release")
    (out / "inputs.json").write_text(json.dumps({"config": "a.cfg", "overrides": [], "sha256": {}}))
    assert resume_or_start_over(out, current) is False
    assert (tmp_path / "out.previous-2" / "checkpoint.pt").exists()
    assert "written by an older spacy-elmo" in pretrain_warnings.text


def test_a_run_of_the_same_settings_without_a_checkpoint_starts_over(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    current = {"format": 2, "settings": {"system.seed": 0}, "files": {}}
    (out / "inputs.json").write_text(json.dumps(current))
    (out / "config.cfg").write_text("[paths]\n")
    assert resume_or_start_over(out, current) is False
    assert sorted(p.name for p in out.iterdir()) == ["inputs.json"]
    assert not (tmp_path / "out.previous-1").exists()  # nothing of value: the same run begins again


@pytest.mark.parametrize(
    "content", [["notes.txt"], ["config.cfg", "meta.json"]], ids=["any-folder", "a-spacy-pipeline"]
)
def test_a_folder_that_is_not_a_run_is_never_touched(corpus_dir, tmp_path, content):
    out = tmp_path / "mine"
    out.mkdir()
    for name in content:
        (out / name).write_text("keep me")
    with pytest.raises(PretrainError, match="holds no pretraining run: not touching it"):
        run(corpus_dir, out, 3)
    assert sorted(p.name for p in out.iterdir()) == sorted(content)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_an_empty_folder_is_used(corpus_dir, tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    assert run(corpus_dir, out, 3).step == 3


def test_the_current_folder_is_never_moved(tmp_path, monkeypatch):
    (tmp_path / "metrics.jsonl").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PretrainError, match="holds the current folder"):
        resume_or_start_over(tmp_path, {"format": 2, "settings": {}, "files": {}})
    assert (tmp_path / "metrics.jsonl").exists()


def test_files_are_compared_by_content_and_settings_as_parsed(corpus_dir, tmp_path, monkeypatch):
    folder = tmp_path / "dev"
    folder.mkdir()
    (folder / "x.txt").write_text("x\n")
    before = content_digest(folder)
    (folder / "x.txt").rename(folder / "y.txt")  # same bytes, another name: another folder
    assert content_digest(folder) != before
    shutil.copy(corpus_dir / "train.txt", tmp_path / "train.txt")
    monkeypatch.chdir(tmp_path)
    relative, absolute = record(corpus_dir, 3, paths__train="train.txt"), record(corpus_dir, 3)
    assert relative["settings"] == absolute["settings"] and "paths.train" not in relative["settings"]
    assert relative["files"]["paths.train"]["sha256"] == absolute["files"]["paths.train"]["sha256"]
    assert relative["settings"]["training.max_steps"] == 3 and relative["settings"]["model.lstm_dim"] > 0


def command(out, *overrides, config=str(TINY_CONFIG)):
    return ["pretrain", config, str(out), "--auto-resume", "--quiet", *overrides]


def test_the_same_command_spelled_differently_resumes(corpus_dir, tmp_path, monkeypatch):
    """The paths swapped, --key=value for --key value, the config by its
    absolute or relative path, a training file by a relative path: the same run each time."""
    train = tmp_path / "train.txt"
    shutil.copy(corpus_dir / "train.txt", train)
    dev = str(corpus_dir / "dev.txt")
    out = tmp_path / "out"
    monkeypatch.chdir(REPO_ROOT)
    relative_config = str(TINY_CONFIG.relative_to(REPO_ROOT))
    first = ["--paths.train", str(train), "--paths.dev", dev, "--training.max_steps", "3", "--training.eval_every", "3"]
    result = CliRunner().invoke(app, command(out, *first, config=relative_config))
    assert result.exit_code == 0, result.output
    (out / "mark.txt").write_text("gone if the run starts over")
    spellings = {
        "paths swapped": ["--paths.dev", dev, "--paths.train", str(train), *first[4:]],
        "key=value": [
            f"--paths.train={train}",
            f"--paths.dev={dev}",
            "--training.max_steps=3",
            "--training.eval_every=3",
        ],
        "config by its absolute path": first,
        "a relative training path": ["--paths.train", "../" * len(REPO_ROOT.parts) + str(train)[1:], *first[2:]],
    }
    for name, overrides in spellings.items():
        config = str(TINY_CONFIG) if name == "config by its absolute path" else relative_config
        again = CliRunner().invoke(app, command(out, *overrides, config=config))
        assert again.exit_code == 0 and "Done: 3 steps" in again.output, (name, again.output)
        assert (out / "mark.txt").exists(), f"{name}: the run started over"
        assert not (tmp_path / "out.previous-1").exists(), name
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [3]


def test_the_command_starts_over_on_new_text_and_refuses_both_options(corpus_dir, tmp_path):
    train = tmp_path / "train.txt"
    shutil.copy(corpus_dir / "train.txt", train)
    out = tmp_path / "out"
    args = command(out, "--paths.train", str(train), "--training.max_steps", "3", "--training.eval_every", "3")
    assert CliRunner().invoke(app, args).exit_code == 0
    (out / "mark.txt").write_text("kept aside when the run starts over")
    train.write_text(train.read_text()[: len(train.read_text()) // 2])
    changed = CliRunner().invoke(app, args)
    assert changed.exit_code == 0, changed.output
    assert not (out / "mark.txt").exists() and (tmp_path / "out.previous-1" / "mark.txt").exists()
    recorded = json.loads((out / "inputs.json").read_text())
    assert recorded["files"]["paths.train"]["sha256"] == content_digest(train)
    both = CliRunner().invoke(app, args + ["--resume"])
    assert both.exit_code == 1 and "exclude each other" in both.output
