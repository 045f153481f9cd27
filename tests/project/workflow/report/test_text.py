"""The steps' times table: sums, the span from first start to last end, the report left out."""

from scripts.workflow.report.text import step_times_table


def _entry(start: float, seconds: float, cpu: float) -> dict:
    return {"started_unix": start, "seconds": seconds, "cpu_seconds": cpu, "finished": f"{start + seconds:.0f}"}


def test_span_and_sums_of_steps_side_by_side():
    times = {"a": _entry(1000.0, 100.0, 90.0), "b": _entry(1050.0, 200.0, 150.0)}
    table, wall, cpu, elapsed = step_times_table(times)
    assert wall == 300.0
    assert cpu == 240.0
    assert elapsed == 250.0  # 1000 to 1250: the two overlapped
    assert "| a |" in table and "| b |" in table


def test_previous_report_entry_does_not_stretch_the_span():
    # the times file still holds the report step of a run hours earlier
    times = {"a": _entry(10_000.0, 100.0, 90.0), "report": _entry(1_000.0, 20.0, 20.0)}
    table, wall, cpu, elapsed = step_times_table(times)
    assert (wall, cpu, elapsed) == (100.0, 90.0, 100.0)
    assert "report" not in table


def test_unknown_cpu_time_gives_none():
    times = {"a": _entry(0.0, 10.0, 5.0), "b": {"seconds": 5.0, "finished": "x"}}
    _, wall, cpu, elapsed = step_times_table(times)
    assert cpu is None
    assert wall == 15.0 and elapsed == 15.0  # without every start, the span falls back to the sum


def test_steps_timed_by_several_runs_have_no_span():
    # a later run of the runner reran one step: no single wall time covers both
    first, second = (
        {**_entry(0.0, 100.0, 90.0), "invocation": 0.0},
        {**_entry(9000.0, 50.0, 40.0), "invocation": 8990.0},
    )
    table, wall, cpu, elapsed = step_times_table({"a": first, "b": second})
    assert (wall, cpu, elapsed) == (150.0, 130.0, None)
    assert "n/a (several runs)" in table
    # one run: the span
    second["invocation"] = 0.0
    assert step_times_table({"a": first, "b": second})[3] == 9050.0
