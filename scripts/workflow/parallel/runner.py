"""Run a workflow's steps side by side, up to a number of jobs, each as ``spacy project run``
runs it, and record each step's wall and CPU time.

Each step runs in a process of its own as ``python -m weasel run STEP`` (weasel's command
line, what ``spacy project run`` calls): its ``deps`` must exist, it is skipped when
``project.lock`` says nothing changed ("Skipping 'STEP': nothing changed"), otherwise its script
lines run in order and its ``project.lock`` entry is written. Weasel rewrites the whole file for
each entry, so of two steps that end at the same moment one entry can be lost: once every
step has ended, a step that succeeded without an entry runs again alone, which writes it. When
a step that ran ends, its wall time and the CPU time of its whole process tree
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
from typing import Any, List, Mapping, Optional, Sequence

from wasabi import msg

from ..process_times import ProcessTimes, reap
from . import weasel_api
from .graph import Step
from .step_times import record_step

POLL_SECONDS = 0.2


class StepFailed(RuntimeError):
    """A step's script failed (its name and exit code are in the message)."""


class Running:
    """A step's process, the thread that prints its output, and its times once it ended."""

    def __init__(self, step: Step, argv: List[str], project_dir: Path, width: int, lock: threading.Lock) -> None:
        self.step = step
        self.started_unix, self.started = time.time(), time.perf_counter()
        self.times: Optional[ProcessTimes] = None
        self.skipped = False  # weasel said nothing changed
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            argv,
            cwd=project_dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        assert self.process.stdout is not None
        self.printer = threading.Thread(target=self._copy_lines, args=(width, lock), daemon=True)
        self.printer.start()

    def _copy_lines(self, width: int, lock: threading.Lock) -> None:
        """Print every line of the step's output with its name in front, until it closes."""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.skipped = self.skipped or weasel_api.skipped_line(self.step.name) in line
            with lock:
                sys.stdout.write(f"{self.step.name:<{width}} | {line.rstrip()}\n")
                sys.stdout.flush()
        self.process.stdout.close()

    def poll(self) -> Optional[ProcessTimes]:
        """The step's exit code and times once its process ended (and its output is printed)."""
        if self.times is None:
            self.times = reap(self.process, self.started, block=False)
            if self.times is not None:
                self.printer.join()
        return self.times


def _cost(times: ProcessTimes) -> str:
    text = f"{times.wall_seconds / 60:.1f} min"
    return text + (f", {times.cpu_seconds / 60:.1f} CPU-min" if times.cpu_seconds is not None else "")


def run_steps(
    project_dir: Path,
    steps: Sequence[Step],
    jobs: int,
    force: bool = False,
    times_file: Optional[Path] = None,
    overrides: Optional[Mapping[str, Any]] = None,
) -> None:
    """Run ``steps`` (a workflow, in order, with ``after`` and ``priority`` set), at most
    ``jobs`` at a time, with ``overrides`` (``{"vars.NAME": value}``); each step's times go to
    ``times_file`` (if given) unless weasel skipped it. Raises :class:`StepFailed` naming the
    first step that failed."""
    pending: List[Step] = list(steps)
    invocation = time.time()  # marks this run's entries in the times file
    done: set = set()
    ran: List[Step] = []
    running: List[Running] = []
    failed: List[str] = []
    width = max((len(step.name) for step in steps), default=0)
    lock = threading.Lock()

    def argv(step: Step) -> List[str]:
        return weasel_api.step_argv(project_dir, step.name, overrides or {}, force)

    while pending or running:
        ready = sorted((s for s in pending if s.after <= done), key=lambda s: -s.priority)
        while ready and len(running) < jobs and not failed:
            step = ready.pop(0)
            pending.remove(step)
            with lock:
                msg.divider(f"{step.name} (started; {len(running) + 1} running)")
            running.append(Running(step, argv(step), project_dir, width, lock))
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
                if times.returncode == 0 and not item.skipped:
                    ran.append(item.step)
                    if times_file is not None:
                        record_step(times_file, item.step.name, item.started_unix, times, invocation)
                    msg.good(f"{item.step.name}: done in {_cost(times)}")
                elif times.returncode != 0:
                    msg.fail(f"{item.step.name}: failed (exit code {times.returncode}) after {_cost(times)}")
            if times.returncode == 0:
                done.add(item.step.name)
            else:
                failed.append(f"{item.step.name} (exit code {times.returncode})")
    for step in [step for step in ran if step.name not in weasel_api.recorded_steps(project_dir)]:
        msg.warn(
            f"project.lock lost the entry of '{step.name}' (another step ended at the same moment): running it again"
        )
        if subprocess.run(argv(step), cwd=project_dir).returncode != 0:
            failed.append(f"{step.name} (run again)")
    if failed:
        raise StepFailed(f"step {failed[0]} failed" + (f"; also {', '.join(failed[1:])}" if failed[1:] else ""))
