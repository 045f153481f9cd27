"""The step-times file the runner writes and the reports read (scripts/workflow/parallel/step_times.py)."""

from __future__ import annotations

from pathlib import Path

from scripts.workflow.parallel.step_times import read_times, record_step, step_costs, times_file_for
from scripts.workflow.process_times import ProcessTimes


def test_steps_are_added_to_the_file_and_replaced_by_a_rerun(tmp_path):
    path = tmp_path / "reports" / "step_times.json"
    assert read_times(path) == {}
    record_step(path, "pretrain", 1000.0, ProcessTimes(0, 600.04, 449.86))
    record_step(path, "fetch", 900.0, ProcessTimes(0, 2.0, None))
    entry = record_step(path, "pretrain", 2000.0, ProcessTimes(0, 300.0, 290.0))
    times = read_times(path)
    assert set(times) == {"pretrain", "fetch"} and times["pretrain"] == entry
    assert entry["seconds"] == 300.0 and entry["cpu_seconds"] == 290.0 and entry["started_unix"] == 2000.0
    assert entry["finished"].endswith(" UTC")
    assert times["fetch"]["cpu_seconds"] is None
    assert step_costs(path) == {"pretrain": 290.0, "fetch": 2.0}  # CPU time, else wall time
    path.write_text("not json")
    assert read_times(path) == {} and step_costs(path) == {}


def test_the_times_file_comes_from_the_project_variables():
    variables = {
        "step_times": "reports/step_times.json",
        "textcat_step_times": "reports/textcat_step_times.json",
        "ner_small_step_times": "reports/small.json",
    }
    assert times_file_for(variables, "all") == Path("reports/step_times.json")
    assert times_file_for(variables, "textcat") == Path("reports/textcat_step_times.json")
    assert times_file_for(variables, "ner-small") == Path("reports/small.json")
    assert times_file_for({}, "all") == Path("reports/step_times.json")


def test_each_entry_names_the_run_of_the_runner_that_timed_it(tmp_path):
    path = tmp_path / "step_times.json"
    record_step(path, "a", 10.0, ProcessTimes(0, 1.0, 1.0), invocation=5.0)
    record_step(path, "b", 20.0, ProcessTimes(0, 1.0, 1.0))
    times = read_times(path)
    assert times["a"]["invocation"] == 5.0 and "invocation" not in times["b"]
