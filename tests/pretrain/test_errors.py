"""One hierarchy: every error pretraining raises for the user is a PretrainError (which is all
``spacy-elmo pretrain`` catches), keeps its built-in type, and names the file at fault."""

from __future__ import annotations

import errno
import inspect

import pytest
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.pretrain import errors
from spacy_elmo.pretrain.errors import OutputFolderError, PretrainError, reading, writing

from ..conftest import full_disk_for
from .conftest import TINY_CONFIG


def test_every_error_class_is_a_pretrain_error_and_keeps_its_builtin_type():
    classes = [value for _, value in inspect.getmembers(errors, inspect.isclass) if issubclass(value, BaseException)]
    assert len(classes) >= 9
    assert all(issubclass(cls, PretrainError) for cls in classes)
    assert issubclass(errors.CheckpointError, OSError) and issubclass(errors.InputNotFoundError, FileNotFoundError)
    for cls in (errors.ConfigError, errors.EmptyCorpusError, errors.ResumeSettingsError, errors.ForeignCheckpointError):
        assert issubclass(cls, ValueError)


def test_an_os_error_keeps_its_message_and_gains_the_file_name(tmp_path):
    target = tmp_path / "metrics.jsonl"
    with pytest.raises(OutputFolderError) as caught, writing(target):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert str(caught.value) == f"[Errno 28] No space left on device: '{target}'"
    with pytest.raises(errors.InputNotFoundError) as missing, reading(tmp_path / "gone.txt"):
        raise FileNotFoundError(f"Corpus path not found: {tmp_path / 'gone.txt'}")
    assert str(missing.value) == f"Corpus path not found: {tmp_path / 'gone.txt'}"


def run(tmp_path, *args):
    command = ["pretrain", str(TINY_CONFIG), str(tmp_path / "out"), "--quiet", *args]
    return CliRunner().invoke(app, command)


def test_a_full_disk_while_logging_metrics_is_one_line_naming_the_file(tmp_path, corpus_dir, monkeypatch):
    with full_disk_for(monkeypatch, "metrics.jsonl"):
        result = run(
            tmp_path,
            "--paths.train",
            str(corpus_dir / "train.txt"),
            "--paths.dev",
            str(corpus_dir / "dev.txt"),
            "--training.max_steps",
            "2",
            "--training.eval_every",
            "1",
        )
    assert result.exit_code == 1 and result.exception is not None and isinstance(result.exception, SystemExit)
    metrics = tmp_path / "out" / "metrics.jsonl"
    assert f"Error: [Errno 28] No space left on device: '{metrics}'" in result.output


@pytest.mark.parametrize("device", ["gpu", "tpu:0"])
def test_a_device_that_is_not_one_is_an_error_line(tmp_path, corpus_dir, device):
    result = run(tmp_path, "--paths.train", str(corpus_dir / "train.txt"), "--device", device)
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert f"Error: Unsupported device {device!r}" in result.output


def test_a_config_that_is_not_one_is_an_error_line_naming_it(tmp_path):
    config = tmp_path / "broken.cfg"
    config.write_text("no section header here\n")
    result = CliRunner().invoke(app, ["pretrain", str(config), str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
    assert f"Error: {config}:" in result.output
