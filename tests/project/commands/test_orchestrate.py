"""The commands around the steps (scripts/commands/orchestrate.py): `timed` records a command's
CPU time in a file, or none when it fails. (`run-workflow`: tests/project/workflow/parallel/test_runner.py.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def timed(record: Path, *command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scripts", "timed", str(record), *command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_timed_records_the_cpu_time_of_the_command(tmp_path):
    record = tmp_path / "bilm" / "cpu_time.json"
    burn = "import time; [0 for _ in iter(lambda: time.process_time() < 0.6, False)]"
    proc = timed(record, "-c", burn)
    assert proc.returncode == 2 and "expected -m MODULE" in proc.stderr and not record.exists()  # modules only
    (tmp_path / "burn.py").write_text(burn + "\nimport sys; print(sys.argv[1:])\n")
    proc = subprocess.run(
        [sys.executable, "-m", "scripts", "timed", str(record), "-m", "burn", "--x", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": ""},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "['--x', '1']" in proc.stdout  # its arguments, untouched
    data = json.loads(record.read_text())
    assert data["command"] == ["python", "-m", "burn", "--x", "1"]
    assert 0.6 <= data["cpu_seconds"] <= data["wall_seconds"] * 2 + 0.5 and data["finished"].endswith("UTC")


def test_a_failed_command_leaves_no_record(tmp_path):
    record = tmp_path / "cpu_time.json"
    record.write_text(json.dumps({"cpu_seconds": 99.0}))  # from an earlier run
    (tmp_path / "fails.py").write_text("import sys; sys.exit(5)\n")
    proc = subprocess.run(
        [sys.executable, "-m", "scripts", "timed", str(record), "-m", "fails"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": ""},
    )
    assert proc.returncode == 5 and not record.exists()
    assert "failed (exit code 5); no times recorded" in " ".join(proc.stdout.split())
