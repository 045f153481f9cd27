"""weasel's internals that the runner uses (scripts/workflow/parallel/weasel_api.py): pinned,
and checked here, so that a weasel that changes them fails this test rather than a workflow."""

from __future__ import annotations

import inspect
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import srsly

from scripts.workflow.parallel import weasel_api

ROOT = Path(__file__).resolve().parents[4]


def test_weasel_is_the_pinned_version():
    assert version("weasel") == weasel_api.PINNED
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"weasel=={weasel_api.PINNED}"' in pyproject


def test_the_functions_keep_their_signatures():
    from weasel.cli.run import check_rerun, run_commands, update_lockfile
    from weasel.util import load_project_config, parse_config_overrides

    def parameters(function):
        return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]

    assert [name for name, _ in parameters(run_commands)] == ["commands", "silent", "dry", "capture"]
    assert parameters(run_commands)[1:] == [("silent", False), ("dry", False), ("capture", False)]
    assert [name for name, _ in parameters(check_rerun)] == ["project_dir", "command"]
    assert [name for name, _ in parameters(update_lockfile)] == ["project_dir", "command"]
    assert [name for name, _ in parameters(load_project_config)] == ["path", "interpolate", "overrides"]
    assert parameters(load_project_config)[1][1] is True
    assert [name for name, _ in parameters(parse_config_overrides)][0] == "args"
    # the step process imports run_commands by this path
    assert "from weasel.cli.run import run_commands" in weasel_api.STEP_PROCESS


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


def test_a_tiny_project_behaves_as_spacy_project_run(tmp_path):
    write_project(tmp_path)
    overrides = weasel_api.parse_overrides(["--vars.word", "bye", "--vars.extra=2"])
    assert overrides == {"vars.word": "bye", "vars.extra": 2}
    config = weasel_api.load_project(tmp_path, overrides)
    (command,) = config["commands"]
    assert command["outputs"] == ["out/bye.txt"] and command["script"][0].endswith(" out/bye.txt")
    assert config["vars"]["word"] == "bye" and config["vars"]["out"] == "out/bye.txt"
    assert "extra" not in config["vars"]  # only defined variables change

    assert weasel_api.needs_rerun(tmp_path, command)  # no project.lock yet
    proc = subprocess.run(
        weasel_api.step_process_argv(command["script"]), cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "Running command:" in proc.stdout
    assert (tmp_path / "out/bye.txt").read_text() == sys.executable  # "python" is this interpreter
    weasel_api.record_success(tmp_path, command)
    assert set(srsly.read_yaml(tmp_path / "project.lock")) == {"say"}
    assert not weasel_api.needs_rerun(tmp_path, command)
    (tmp_path / "in.txt").write_text("2")  # a dependency changed
    assert weasel_api.needs_rerun(tmp_path, command)
    weasel_api.record_success(tmp_path, command)
    assert not weasel_api.needs_rerun(tmp_path, command)
    assert weasel_api.needs_rerun(tmp_path, {**command, "script": command["script"] + ["python -c 0"]})  # new script


def test_a_failing_line_ends_the_step_with_its_exit_code(tmp_path):
    proc = subprocess.run(
        weasel_api.step_process_argv(['python -c "import sys; sys.exit(7)"', "python -c 1/0"]),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 7 and "ZeroDivisionError" not in proc.stderr
