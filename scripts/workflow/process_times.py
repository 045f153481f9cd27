"""The CPU and wall time of a child process and everything it ran, read when it is reaped.

``os.wait4`` returns the child's resource usage, which holds its own CPU time and that of every
descendant it waited for: a step's script lines, ``spacy train`` seed processes, and so on. So
the time is the step's alone, whatever else runs on the machine beside it; on a machine shared
with other work, CPU time is what the step would take alone on one core. Where the OS has no
``wait4`` (Windows) the CPU time is None.

The ``timed`` command writes such a record to a JSON file (``write_cpu_record``): the biLM's
``pretrain`` step records its CPU time in its own output folder, and the spaCy-pretraining
steps, which declare that file as a dependency, read their budget from it (``read_cpu_seconds``).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional, Sequence


@dataclass(frozen=True)
class ProcessTimes:
    """How a child process ended and what it cost."""

    returncode: int
    wall_seconds: float
    cpu_seconds: Optional[float]  # user + system, the child and its reaped descendants; None: unknown


def reap(
    process: "subprocess.Popen[str] | subprocess.Popen[bytes]", started: float, block: bool = True
) -> Optional[ProcessTimes]:
    """Wait for ``process`` (or, with ``block=False``, only look); its exit code and times, or
    None while it runs. ``started``: ``time.perf_counter()`` when it was started.

    The process is reaped here, so its ``returncode`` is set here too: never mix this with
    ``process.wait()`` or ``process.poll()``.
    """
    if not hasattr(os, "wait4"):
        code = process.wait() if block else process.poll()
        return None if code is None else ProcessTimes(code, time.perf_counter() - started, None)
    pid, status, usage = os.wait4(process.pid, 0 if block else os.WNOHANG)
    if pid == 0:
        return None
    process.returncode = os.waitstatus_to_exitcode(status)
    return ProcessTimes(process.returncode, time.perf_counter() - started, usage.ru_utime + usage.ru_stime)


def finished_now() -> str:
    """The time stamp the records carry (UTC, to the second)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def write_cpu_record(path: Path, times: ProcessTimes, command: Sequence[str]) -> dict:
    """Write the times of a finished command to ``path`` (JSON, atomically); returns the record."""
    record = {
        "cpu_seconds": None if times.cpu_seconds is None else round(times.cpu_seconds, 1),
        "wall_seconds": round(times.wall_seconds, 1),
        "command": list(command),
        "finished": finished_now(),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return record


def read_cpu_seconds(path: Path) -> float:
    """The CPU seconds a ``write_cpu_record`` file holds; ValueError naming the file otherwise."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} not found: run the step that writes it first") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not a CPU-time record: {e}") from None
    seconds = record.get("cpu_seconds") if isinstance(record, dict) else None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        raise ValueError(
            f"{path} holds no CPU time (cpu_seconds: {seconds!r}); it is measured where the "
            "OS reports a child's resource usage (Linux, macOS)"
        )
    return float(seconds)
