"""Run a workflow's steps side by side, up to a number of jobs, as ``spacy project run``
would run them one by one.

Each step is what ``spacy project run STEP`` does: its ``deps`` must exist; it is skipped when
``project.lock`` says nothing changed ("Skipping 'STEP': nothing changed"); otherwise its
script lines run in order, in a process of their own (so ``step_clock`` measures the step's
CPU time alone, whatever runs beside it), and after it succeeded its ``project.lock`` entry is
written. Only this process reads and writes ``project.lock``, one step at a time, so steps
that end together cannot lose each other's entries. A step starts once the steps it waits for
(``steps.workflow_steps``) are done, the ready step with the longest chain of work behind it
first. Every line a step prints is shown with the step's name in front.

When a step fails, no new step starts, the running ones finish (their work is kept) and the
run ends with an error naming the failed step; a rerun skips what finished.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, TextIO

from wasabi import msg

from .steps import Step

# the lines of one step, run by weasel's own runner in a process of their own
STEP_PROCESS = "import json, sys; from weasel.cli.run import run_commands; run_commands(json.loads(sys.argv[1]))"
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
    """A step's process and the thread that prints its output."""

    def __init__(self, step: Step, project_dir: Path, width: int, lock: threading.Lock) -> None:
        self.step, self.started = step, time.time()
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [sys.executable, "-c", STEP_PROCESS, json.dumps(step.command.get("script", []))],
            cwd=project_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            encoding="utf-8", errors="replace")
        assert self.process.stdout is not None
        self.printer = threading.Thread(target=_copy_lines, args=(step.name, self.process.stdout, width, lock),
                                        daemon=True)
        self.printer.start()

    def poll(self) -> Optional[int]:
        code = self.process.poll()
        if code is not None:
            self.printer.join()
        return code


def missing_deps(project_dir: Path, step: Step) -> List[str]:
    return [dep for dep in step.deps if not (project_dir / dep).exists()]


def run_steps(project_dir: Path, steps: Sequence[Step], jobs: int, force: bool = False) -> None:
    """Run ``steps`` (a workflow, in order, with ``after`` and ``priority`` set), at most
    ``jobs`` at a time. Raises :class:`StepFailed` naming the first step that failed."""
    from weasel.cli.run import check_rerun, update_lockfile

    pending: List[Step] = list(steps)
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
            if not force and not check_rerun(project_dir, step.command):
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
        for item in [r for r in running if r.poll() is not None]:
            running.remove(item)
            code = item.process.returncode
            seconds = time.time() - item.started
            with lock:
                if code == 0:
                    update_lockfile(project_dir, item.step.command)
                    msg.good(f"{item.step.name}: done in {seconds / 60:.1f} min")
                else:
                    msg.fail(f"{item.step.name}: failed (exit code {code}) after {seconds / 60:.1f} min")
            if code == 0:
                done.add(item.step.name)
            else:
                failed.append(f"{item.step.name} (exit code {code})")
    if failed:
        raise StepFailed(f"step {failed[0]} failed" + (f"; also {', '.join(failed[1:])}" if failed[1:] else ""))


def step_costs(step_times: Path) -> Dict[str, float]:
    """CPU seconds (else wall seconds) per step from the last run's ``step_clock`` log."""
    from ..step_clock import read_log

    costs = {}
    for name, entry in read_log(step_times).items():
        value = entry.get("cpu_seconds") or entry.get("seconds")
        if isinstance(value, (int, float)) and value > 0:
            costs[name] = float(value)
    return costs
