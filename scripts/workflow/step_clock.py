"""The wall and CPU time of a project step: ``start`` before it, ``stop`` after it.

The times go to a JSON file (``--log``) that the report shows: per step the seconds between
the last ``start`` and ``stop``, when it finished, and (on Linux) the CPU seconds its
processes used. The CPU time is read from the parent process (the ``spacy project run`` that
runs the step's lines one by one): the CPU time of its finished children, before and after.
On a machine shared with other work, CPU time is what the step would take alone on one core.
A step that fails never reaches its ``stop`` line, so the file keeps the times of its last
successful run. Steps that run side by side (``scripts.run_workflow``) share the file: each
update holds a lock on ``FILE.lock`` from reading to writing, so none is lost. Standard
library only: the clock itself adds milliseconds to a step.
"""
from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Optional


def read_log(path: Path) -> dict:
    """The step times recorded so far; an empty dict if the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_log(path: Path, data: dict) -> None:
    """Write atomically (temp file + rename), so an interrupted write leaves the old file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path.lock`` (where the OS has ``fcntl``) for an update."""
    try:
        import fcntl
    except ImportError:  # not on a POSIX system: steps run one at a time there
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def children_cpu_seconds(pid: int) -> Optional[float]:
    """User + system CPU seconds of the finished children of process ``pid`` (Linux only)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # fields 3.. of proc(5); cutime, cstime are 16, 17
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def start(path: Path, name: str) -> None:
    """Record that step ``name`` starts now (wall clock and the parent's children CPU time)."""
    with locked(path):
        data = read_log(path)
        entry = data.setdefault(name, {})
        entry["started_unix"] = time.time()
        entry["started_children_cpu"] = children_cpu_seconds(os.getppid())
        write_log(path, data)


def stop(path: Path, name: str) -> float:
    """Store and return the seconds since ``start``; fails if the step was never started."""
    with locked(path):
        data = read_log(path)
        entry = data.get(name, {})
        started = entry.get("started_unix")
        if started is None:
            raise SystemExit(f"step_clock: no start recorded for {name!r} in {path}")
        now = time.time()
        entry["seconds"] = round(now - started, 1)
        cpu_before, cpu_now = entry.get("started_children_cpu"), children_cpu_seconds(os.getppid())
        entry["cpu_seconds"] = round(cpu_now - cpu_before, 1) if None not in (cpu_before, cpu_now) else None
        entry["finished"] = datetime.fromtimestamp(now, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        data[name] = entry
        write_log(path, data)
        return entry["seconds"]
