"""``spacy-elmo`` reads like spaCy's CLI: plain help, ``--version``, one ``Error:`` line for
every failure (export-allennlp's out of a trained pipeline: tests/pipeline/test_export_from_pipeline.py)."""

import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from spacy_elmo import __version__
from spacy_elmo.cli import app

COMMANDS = ["embed", "export-allennlp", "init-config", "inspect", "perplexity", "plot-training", "pretrain"]


def run(*args):
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("command", [[], *[[name] for name in COMMANDS]])
def test_help_is_plain_text(command):
    result = run(*command, "--help")
    assert result.exit_code == 0, result.output
    assert not re.search("[\u2500-\u257f]", result.output), "box-drawing characters"
    assert "<bool>" not in result.output
    assert "\x1b[" not in result.output


def test_help_keeps_brackets_and_has_room():
    help_text = run("init-config", "--help").output
    assert "([paths] elmo)" in help_text
    option_lines = [line for line in run("embed", "--help").output.splitlines() if line.startswith("  -w, --weights")]
    assert len(option_lines[0]) >= 70  # the help column starts near the middle, not at column 65


def test_version():
    for flag in ("--version", "-V"):
        result = run(flag)
        assert result.exit_code == 0
        assert result.output.strip() == f"spacy-elmo {__version__}"


def test_export_errors_are_one_line(tmp_path):
    for source in (tmp_path / "nothing", tmp_path):
        result = run("export-allennlp", str(source), str(tmp_path / "out"))
        assert result.exit_code == 1
        assert len(result.output.strip().splitlines()) == 1
        assert result.output.startswith("Error: ")
    (tmp_path / "run" / "model-best").mkdir(parents=True)
    (tmp_path / "run" / "model-best" / "config.json").write_text("{}")
    (tmp_path / "run" / "model-best" / "weights.hdf5").write_text("")
    result = run("export-allennlp", str(tmp_path / "run"), str(tmp_path / "out"))
    assert result.output.strip() == (
        f"Error: {tmp_path / 'run'} is a pretraining output folder: pass the biLM it wrote, "
        f"{tmp_path / 'run'}/model-best (or model-last)"
    )


def test_spacy_elmo_help_inside_spacys_cli_is_the_groups():
    """``python -m spacy elmo --help`` describes the group as ``spacy-elmo --help`` does."""
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "elmo", "--help"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    describe = run("--help").output.split("\n\n")[1]  # after the usage line
    assert " ".join(describe.split()) in " ".join(result.stdout.split())
    assert all(name in result.stdout for name in COMMANDS)
