"""Each step's wall and CPU time, recorded by the parallel runner (``runner``) when the step
succeeds, into the JSON file the reports read (``reports/step_times.json`` for the main
workflows): per step the wall seconds, the CPU seconds of the step's process tree
(``process_times``), when it started (Unix time) and when it finished. A failed step keeps
the times of its last successful run. Weasel's own runner (``spacy project run``) records
nothing: the reports then say that the times are missing.

Every update holds a lock on ``FILE.lock`` from reading to writing, so two runners sharing
the file lose nothing; the file is replaced atomically, so an interrupted write leaves the old one.
"""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, Optional

from ..process_times import ProcessTimes, finished_now


def read_times(path: Path) -> dict:
    """The step times recorded so far; an empty dict if the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path.lock`` (where the OS has ``fcntl``) for an update."""
    try:
        import fcntl
    except ImportError:  # not on a POSIX system
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def record_step(
    path: Path, name: str, started_unix: float, times: ProcessTimes, invocation: Optional[float] = None
) -> dict:
    """Store the times of step ``name``, which started at ``started_unix``; returns its entry.
    ``invocation`` (the runner's own start time) tells the steps of one run of the runner from
    those a later run reran: only within one run does "first start to last end" mean anything."""
    entry = {
        "seconds": round(times.wall_seconds, 1),
        "cpu_seconds": None if times.cpu_seconds is None else round(times.cpu_seconds, 1),
        "started_unix": started_unix,
        "finished": finished_now(),
    }
    if invocation is not None:
        entry["invocation"] = invocation
    with _locked(path):
        data = read_times(path)
        data[name] = entry
        _write(path, data)
    return entry


def step_costs(path: Path) -> Dict[str, float]:
    """CPU seconds (else wall seconds) per step from the last run's times."""
    costs = {}
    for name, entry in read_times(path).items():
        value = entry.get("cpu_seconds") or entry.get("seconds") if isinstance(entry, dict) else None
        if isinstance(value, (int, float)) and value > 0:
            costs[name] = float(value)
    return costs


def times_file_for(variables: Dict[str, object], workflow: str) -> Path:
    """Where the runner records ``workflow``'s step times: project.yml's ``WORKFLOW_step_times``
    variable (``-`` read as ``_``) if it has one, else its ``step_times``, else
    ``reports/step_times.json``; relative to the project folder."""
    own = variables.get(f"{workflow.replace('-', '_')}_step_times")
    return Path(str(own or variables.get("step_times") or "reports/step_times.json"))
