"""What the runner takes from weasel (scripts/workflow/parallel/weasel_api.py), through its public
side: project.yml read as ``weasel run`` reads it, and a step run by weasel's command line."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import srsly
from packaging.requirements import Requirement

from scripts.workflow.parallel import weasel_api

ROOT = Path(__file__).resolve().parents[4]


def test_weasel_is_required_in_a_range_that_holds_the_installed_one():
    (spec,) = re.findall(r'"(weasel[<>=!~][^"]*)"', (ROOT / "pyproject.toml").read_text())
    weasel = Requirement(spec)
    assert len(weasel.specifier) == 2 and not any(spec.operator == "==" for spec in weasel.specifier)
    assert weasel.specifier.contains(version("weasel"))


def write_project(folder: Path) -> None:
    srsly.write_yaml(
        folder / "project.yml",
        {
            "title": "t",
            "vars": {"word": "hello", "out": "out/${vars.word}.txt"},
            "commands": [
                {
                    "name": "say",
                    "deps": ["in.txt"],
                    "outputs": ["${vars.out}"],
                    "script": [
                        "python -c \"import sys; from pathlib import Path; Path('out').mkdir(exist_ok=True); "
                        'Path(sys.argv[1]).write_text(sys.executable)" ${vars.out}'
                    ],
                }
            ],
        },
    )
    (folder / "in.txt").write_text("1")


def test_project_yml_is_read_with_its_variables_and_overrides_filled_in(tmp_path):
    write_project(tmp_path)
    overrides = weasel_api.parse_overrides(["--vars.word", "bye", "--vars.extra=2", "--vars.flag"])
    assert overrides == {"vars.word": "bye", "vars.extra": 2, "vars.flag": True}
    assert weasel_api.parse_overrides(weasel_api.override_args({"vars.a": "1", "vars.b": 1})) == {
        "vars.a": "1",
        "vars.b": 1,
    }
    config = weasel_api.load_project(tmp_path, overrides)
    (command,) = config["commands"]
    assert command["outputs"] == ["out/bye.txt"] and command["script"][0].endswith(" out/bye.txt")
    assert config["vars"] == {"word": "bye", "out": "out/bye.txt"}  # only defined variables change
    dry = subprocess.run(  # weasel's own reading, shown by its command line
        [*weasel_api.step_argv(tmp_path, "say", overrides), "--dry"], capture_output=True, text=True, timeout=120
    )
    assert dry.stdout.rstrip().endswith(" out/bye.txt") and "hello" not in dry.stdout
    with pytest.raises(ValueError, match="--vars.NAME VALUE"):
        weasel_api.parse_overrides(["vars.word", "bye"])


def run_step(folder: Path, overrides: dict, force: bool = False) -> subprocess.CompletedProcess:
    argv = weasel_api.step_argv(folder, "say", overrides, force)
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=120)


def test_a_step_runs_as_spacy_project_run_runs_it(tmp_path):
    write_project(tmp_path)
    overrides = {"vars.word": "bye"}
    first = run_step(tmp_path, overrides)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Running command:" in first.stdout
    assert (tmp_path / "out/bye.txt").read_text() == sys.executable  # "python" is this interpreter
    assert weasel_api.recorded_steps(tmp_path) == {"say"}
    assert weasel_api.skipped_line("say") in run_step(tmp_path, overrides).stdout
    (tmp_path / "in.txt").write_text("2")  # a dependency changed
    assert weasel_api.skipped_line("say") not in run_step(tmp_path, overrides).stdout
    assert weasel_api.skipped_line("say") not in run_step(tmp_path, overrides, force=True).stdout
    (tmp_path / "in.txt").unlink()
    missing = run_step(tmp_path, overrides)
    assert missing.returncode == 1 and "Missing dependency" in missing.stdout


def test_a_failing_line_ends_the_step_with_its_exit_code(tmp_path):
    srsly.write_yaml(
        tmp_path / "project.yml",
        {
            "title": "t",
            "commands": [{"name": "say", "script": ['python -c "import sys; sys.exit(7)"', "python -c 1/0"]}],
        },
    )
    done = run_step(tmp_path, {})
    assert done.returncode == 7 and "ZeroDivisionError" not in done.stderr
    assert weasel_api.recorded_steps(tmp_path) == set()
