"""The parallel runner (scripts/workflow/parallel/runner.py, `python -m scripts run-workflow`) on
small projects whose steps record when they ran: steps side by side, reruns skipped, a failure
stops new steps, and each step's wall and CPU time (its whole process tree) recorded for the
reports. Weasel's own sequential runner still runs the same project and records no times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import srsly

from scripts.workflow.parallel.pool import available_cores
from scripts.workflow.parallel.step_times import read_times

ROOT = Path(__file__).resolve().parents[4]

STEP = (
    "import json, sys, time; from pathlib import Path; name, wait, fail = sys.argv[1], float(sys.argv[2]), "
    "sys.argv[3] == '1'; start = time.time(); time.sleep(wait); Path('out').mkdir(exist_ok=True); "
    "Path('out', name + '.json').write_text(json.dumps([start, time.time()])); sys.exit(3 if fail else 0)"
)
# spends CPU_SECONDS of CPU time in a grandchild of the step's process, then records when it ran
BURN = (
    "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; "
    "[0 for _ in iter(lambda: time.process_time() < {seconds}, False)]'], check=True)"
)
CPU_SECONDS = 1.5


def command(name: str, wait: float, deps=(), fail: str = "") -> dict:
    return {
        "name": name,
        "script": [f'python -c "{STEP}" {name} {wait} {int(name == fail)}'],
        "deps": list(deps),
        "outputs": [f"out/{name}.json"],
    }


def write_project(folder: Path, fail: str = "", variables: dict = None) -> None:
    """a -> (b, c side by side) -> d; each step sleeps, then records when it ran. c also burns
    CPU in a process of its own, after it recorded when it slept."""
    commands = [
        command("a", 0.1, fail=fail),
        command("b", 2.0, ["out/a.json"], fail),
        command("c", 2.0, ["out/a.json"], fail),
        command("d", 0.1, ["out/b.json", "out/c.json"], fail),
    ]
    commands[2]["script"].append(f'python -c "{BURN.format(seconds=CPU_SECONDS)}"')
    srsly.write_yaml(
        folder / "project.yml",
        {"title": "t", "vars": variables or {}, "workflows": {"all": ["a", "b", "c", "d"]}, "commands": commands},
    )


def run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scripts", "run-workflow", "all", str(folder), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def spans(folder: Path) -> dict:
    return {p.stem: json.loads(p.read_text()) for p in (folder / "out").glob("*.json")}


def test_independent_steps_run_side_by_side_and_reruns_skip(tmp_path):
    write_project(tmp_path)
    proc = run(tmp_path, "--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    t = spans(tmp_path)
    assert t["a"][1] <= min(t["b"][0], t["c"][0]) and max(t["b"][1], t["c"][1]) <= t["d"][0]
    assert max(t["b"][0], t["c"][0]) < min(t["b"][1], t["c"][1])  # b and c overlapped
    assert "b | Running command:" in proc.stdout  # each step's lines carry its name
    assert set(srsly.read_yaml(tmp_path / "project.lock")) == {"a", "b", "c", "d"}
    times = read_times(tmp_path / "reports" / "step_times.json")
    again = run(tmp_path, "--jobs", "2")
    assert again.returncode == 0 and all(f"Skipping '{s}': nothing changed" in again.stdout for s in "abcd")
    assert read_times(tmp_path / "reports" / "step_times.json") == times  # skipped steps keep their times


def test_each_steps_wall_and_cpu_time_is_recorded(tmp_path):
    write_project(tmp_path)
    proc = run(tmp_path, "--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    times = read_times(tmp_path / "reports" / "step_times.json")
    assert set(times) == {"a", "b", "c", "d"}
    t = spans(tmp_path)
    for name, entry in times.items():
        assert set(entry) == {"seconds", "cpu_seconds", "started_unix", "finished", "invocation"}, name
        assert entry["invocation"] <= entry["started_unix"], name
        assert entry["seconds"] > 0 and entry["cpu_seconds"] > 0, name
        assert entry["started_unix"] <= t[name][0] and t[name][1] <= entry["started_unix"] + entry["seconds"] + 0.2
        # CPU time cannot exceed what the cores gave in the step's wall time
        assert entry["cpu_seconds"] <= entry["seconds"] * available_cores() + 0.2, name
    assert len({entry["invocation"] for entry in times.values()}) == 1  # one run of the runner
    burn = times["c"]
    # the grandchild's CPU time counts, and the sleeping step beside it does not
    assert CPU_SECONDS - 0.1 <= burn["cpu_seconds"] <= burn["seconds"] * available_cores() + 0.2
    # both steps pay the same start-up (slower on a busy machine); only c's burn sets them apart
    assert burn["cpu_seconds"] - times["b"]["cpu_seconds"] > CPU_SECONDS - 0.5
    assert "c: done in" in proc.stdout and "CPU-min" in proc.stdout


def test_times_go_where_project_yml_says(tmp_path):
    write_project(tmp_path, variables={"step_times": "elsewhere/times.json", "all_step_times": "own/all.json"})
    assert run(tmp_path, "--jobs", "2").returncode == 0
    assert set(read_times(tmp_path / "own" / "all.json")) == {"a", "b", "c", "d"}
    assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "reports").exists()
    assert run(tmp_path, "--jobs", "1", "--force", "--step-times", "given.json").returncode == 0
    assert set(read_times(tmp_path / "given.json")) == {"a", "b", "c", "d"}


def test_one_job_runs_the_steps_one_after_another(tmp_path):
    write_project(tmp_path)
    assert run(tmp_path, "--jobs", "1").returncode == 0
    t = spans(tmp_path)
    first, second = sorted((t["b"], t["c"]))
    assert first[1] <= second[0]


def test_a_failed_step_stops_new_steps_and_keeps_finished_ones(tmp_path):
    write_project(tmp_path, fail="b")
    proc = run(tmp_path, "--jobs", "2")
    assert proc.returncode == 1
    assert "step b (exit code 3) failed" in " ".join(proc.stdout.split())
    assert set(srsly.read_yaml(tmp_path / "project.lock")) == {"a", "c"}  # c ran beside b and finished
    assert not (tmp_path / "out" / "d.json").exists()
    assert set(read_times(tmp_path / "reports" / "step_times.json")) == {"a", "c"}  # no time of a failure


def test_weasels_own_runner_runs_the_same_project_without_times(tmp_path):
    write_project(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "spacy", "project", "run", "all", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(spans(tmp_path)) == {"a", "b", "c", "d"}
    assert not (tmp_path / "reports").exists()


def test_a_lost_project_lock_entry_is_written_again(tmp_path):
    """Weasel rewrites project.lock whole, so two steps that end at once can lose an entry (b
    plays that here, dropping a's): once all steps ended, a runs again alone and is recorded."""
    write_project(tmp_path)
    project = srsly.read_yaml(tmp_path / "project.yml")
    drop_a = (
        "import srsly; lock = srsly.read_yaml('project.lock'); del lock['a']; srsly.write_yaml('project.lock', lock)"
    )
    project["commands"][1]["script"].append(f'python -c "{drop_a}"')
    srsly.write_yaml(tmp_path / "project.yml", project)
    proc = run(tmp_path, "--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "lost the entry of 'a'" in " ".join(proc.stdout.split())
    assert set(srsly.read_yaml(tmp_path / "project.lock")) == {"a", "b", "c", "d"}
