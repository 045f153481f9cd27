"""The app (scripts/__main__.py): one command per workflow step, `--threads` before any of them,
and every line of project.yml that calls it names a command and options it has."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from scripts.__main__ import app
from scripts.workflow.parallel.weasel_api import load_project

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = [
    "fetch",
    "preprocess brown",
    "preprocess wnut",
    "preprocess text",
    "preprocess genres",
    "train-seeds",
    "train-probes",
    "spacy-pretrain",
    "label-silver",
    "tune-recipe",
    "evaluate",
    "price",
    "measure-price",
    "report",
    "report-textcat",
    "probe-report",
    "run-workflow",
    "timed",
]


def test_python_m_scripts_lists_the_commands():
    proc = subprocess.run(
        [sys.executable, "-m", "scripts", "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == {name.split()[0] for name in COMMANDS}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_help(name):
    result = CliRunner().invoke(app, [*name.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert f"Usage: python -m scripts {name}" in result.output.replace("Usage: root", "Usage: python -m scripts")


def test_threads_are_set_before_the_command(monkeypatch):
    import scripts.workflow.threads as threads

    calls = []
    monkeypatch.setattr(threads, "set_threads", calls.append)
    assert CliRunner().invoke(app, ["--threads", "2", "evaluate", "--help"]).exit_code == 0
    assert calls == [2]
    assert CliRunner().invoke(app, ["--threads", "-1", "evaluate", "--help"]).exit_code == 2


def project_script_lines():
    config = load_project(ROOT, {})
    return [(command["name"], line) for command in config["commands"] for line in command.get("script", [])]


def test_every_step_calls_the_app_or_the_library():
    lines = project_script_lines()
    assert len({name for name, _ in lines}) == len(load_project(ROOT, {})["commands"])
    for name, line in lines:
        assert line.startswith(("python -m scripts ", "python -m spacy_elmo ")), (name, line)


@pytest.mark.parametrize(
    "step, line", [item for item in project_script_lines() if item[1].startswith("python -m scripts ")]
)
def test_each_project_line_parses_as_a_command_of_the_app(step, line):
    """Click parses the line as the app would (options, arguments, subcommands) without running it."""
    args = shlex.split(line)[3:]
    group = typer.main.get_command(app)
    ctx = group.make_context("scripts", args)
    command = group
    while hasattr(command, "resolve_command"):  # a group: the next word names its command
        name, command, rest = command.resolve_command(ctx, ctx._protected_args + ctx.args)
        assert command is not None, (step, line)
        ctx = command.make_context(name, rest, parent=ctx)
    assert not (ctx.args and not command.context_settings.get("allow_extra_args")), (step, ctx.args)
    # the options a command passes on are config overrides: dotted names (--paths.train, --vars.jobs)
    assert all("." in arg for arg in ctx.args if arg.startswith("--")), (step, ctx.args)
