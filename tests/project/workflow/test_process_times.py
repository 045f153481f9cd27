"""The CPU and wall time of a child process tree (scripts/workflow/process_times.py), and the
file that carries the biLM's CPU time to spaCy's pretraining."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from scripts.workflow.parallel.pool import available_cores
from scripts.workflow.process_times import ProcessTimes, read_cpu_seconds, reap, write_cpu_record

BURN = "import time; [0 for _ in iter(lambda: time.process_time() < {seconds}, False)]"


def test_a_child_and_its_grandchild_are_both_counted():
    code = (
        f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BURN.format(seconds=0.8)!r}]); "
        f"{BURN.format(seconds=0.5)}"
    )
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", code])
    times = reap(process, started)
    assert times is not None and times.returncode == 0 == process.returncode
    assert 1.25 <= times.cpu_seconds <= times.wall_seconds * available_cores() + 0.2
    assert times.wall_seconds >= 1.25 / available_cores()


def test_polling_waits_for_the_end_and_keeps_the_exit_code():
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", "import time, sys; time.sleep(0.5); sys.exit(4)"])
    assert reap(process, started, block=False) is None
    while (times := reap(process, started, block=False)) is None:
        time.sleep(0.05)
    assert times.returncode == 4 == process.returncode and times.wall_seconds >= 0.5
    assert times.cpu_seconds < 0.5  # sleeping costs no CPU


def test_the_record_round_trips_and_names_a_bad_file(tmp_path):
    path = tmp_path / "bilm" / "cpu_time.json"
    record = write_cpu_record(path, ProcessTimes(0, 12.345, 10.04), ["python", "-m", "x"])
    assert json.loads(path.read_text()) == record and record["cpu_seconds"] == 10.0
    assert read_cpu_seconds(path) == 10.0
    for text, error in (
        ("{", "is not a CPU-time record"),
        ('{"cpu_seconds": 0}', "holds no CPU time"),
        ('{"cpu_seconds": true}', "holds no CPU time"),
        ("[]", "holds no CPU time"),
    ):
        path.write_text(text)
        with pytest.raises(ValueError, match=error) as failure:
            read_cpu_seconds(path)
        assert str(path) in str(failure.value)
    with pytest.raises(ValueError, match="not found: run the step that writes it first"):
        read_cpu_seconds(tmp_path / "missing.json")
