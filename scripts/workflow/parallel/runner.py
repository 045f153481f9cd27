"""Run a workflow's steps side by side, up to a number of jobs, as ``spacy project run``
would run them one by one, and record each step's wall and CPU time.

Each step is what ``spacy project run STEP`` does: its ``deps`` must exist; it is skipped when
``project.lock`` says nothing changed ("Skipping 'STEP': nothing changed"); otherwise its
script lines run in order, in a process of their own, and after it succeeded its
``project.lock`` entry is written (``weasel_api``). Only this process reads and writes
``project.lock``, one step at a time, so steps that end together cannot lose each other's
entries. When a step's process ends, its wall time and the CPU time of its whole process tree
(``process_times``: whatever runs beside it) go to the times file (``step_times``). A step
starts once the steps it waits for (``graph.workflow_steps``) are done, the ready step with
the longest chain of work behind it first. Every line a step prints is shown with the step's
name in front.

When a step fails, no new step starts, the running ones finish (their work is kept) and the
run ends with an error naming the failed step; a rerun skips what finished.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional, Sequence, TextIO

from wasabi import msg

from ..process_times import ProcessTimes, reap
from . import weasel_api
from .graph import Step
from .step_times import record_step

POLL_SECONDS = 0.2


class StepFailed(RuntimeError):
    """A step's script failed (its name and exit code are in the message)."""


def _copy_lines(name: str, stream: TextIO, width: int, lock: threading.Lock) -> None:
    """Print every line of ``stream`` with the step's name in front, until it closes."""
    for line in stream:
        with lock:
            sys.stdout.write(f"{name:<{width}} | {line.rstrip()}\n")
            sys.stdout.flush()
    stream.close()


class Running:
    """A step's process, the thread that prints its output, and its times once it ended."""

    def __init__(self, step: Step, project_dir: Path, width: int, lock: threading.Lock) -> None:
        self.step = step
        self.started_unix, self.started = time.time(), time.perf_counter()
        self.times: Optional[ProcessTimes] = None
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            weasel_api.step_process_argv(step.command.get("script", [])),
            cwd=project_dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        assert self.process.stdout is not None
        self.printer = threading.Thread(
            target=_copy_lines, args=(step.name, self.process.stdout, width, lock), daemon=True
        )
        self.printer.start()

    def poll(self) -> Optional[ProcessTimes]:
        """The step's exit code and times once its process ended (and its output is printed)."""
        if self.times is None:
            self.times = reap(self.process, self.started, block=False)
            if self.times is not None:
                self.printer.join()
        return self.times


def missing_deps(project_dir: Path, step: Step) -> List[str]:
    return [dep for dep in step.deps if not (project_dir / dep).exists()]


def _cost(times: ProcessTimes) -> str:
    text = f"{times.wall_seconds / 60:.1f} min"
    return text + (f", {times.cpu_seconds / 60:.1f} CPU-min" if times.cpu_seconds is not None else "")


def run_steps(
    project_dir: Path, steps: Sequence[Step], jobs: int, force: bool = False, times_file: Optional[Path] = None
) -> None:
    """Run ``steps`` (a workflow, in order, with ``after`` and ``priority`` set), at most
    ``jobs`` at a time; each successful step's times go to ``times_file`` (if given). Raises
    :class:`StepFailed` naming the first step that failed."""
    pending: List[Step] = list(steps)
    invocation = time.time()  # marks this run's entries in the times file
    done: set = set()
    running: List[Running] = []
    failed: List[str] = []
    width = max((len(step.name) for step in steps), default=0)
    lock = threading.Lock()
    while pending or running:
        ready = sorted((s for s in pending if s.after <= done), key=lambda s: -s.priority)
        while ready and len(running) < jobs and not failed:
            step = ready.pop(0)
            pending.remove(step)
            missing = missing_deps(project_dir, step)
            if missing:
                with lock:
                    msg.fail(f"Missing dependency specified by command '{step.name}': {missing[0]}")
                failed.append(f"{step.name} (missing {missing[0]})")
                break
            if not force and not weasel_api.needs_rerun(project_dir, step.command):
                with lock:
                    msg.info(f"Skipping '{step.name}': nothing changed")
                done.add(step.name)
                ready = sorted((s for s in pending if s.after <= done), key=lambda s: -s.priority)
                continue
            with lock:
                msg.divider(f"{step.name} (started; {len(running) + 1} running)")
            running.append(Running(step, project_dir, width, lock))
        if failed and not running:
            break
        if not running and pending:
            if not any(s.after <= done for s in pending):  # cannot happen for a workflow's order
                raise StepFailed(f"steps wait for steps that never ran: {[s.name for s in pending]}")
            continue
        time.sleep(POLL_SECONDS)
        for item in list(running):
            times = item.poll()
            if times is None:
                continue
            running.remove(item)
            with lock:
                if times.returncode == 0:
                    weasel_api.record_success(project_dir, item.step.command)
                    if times_file is not None:
                        record_step(times_file, item.step.name, item.started_unix, times, invocation)
                    msg.good(f"{item.step.name}: done in {_cost(times)}")
                else:
                    msg.fail(f"{item.step.name}: failed (exit code {times.returncode}) after {_cost(times)}")
            if times.returncode == 0:
                done.add(item.step.name)
            else:
                failed.append(f"{item.step.name} (exit code {times.returncode})")
    if failed:
        raise StepFailed(f"step {failed[0]} failed" + (f"; also {', '.join(failed[1:])}" if failed[1:] else ""))
