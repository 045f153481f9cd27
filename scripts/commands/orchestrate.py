"""Commands around the steps: ``run-workflow`` runs a workflow's independent steps side by side
and records each step's times (``scripts.workflow.parallel``); ``timed`` runs one command and
records its CPU time in a file that later steps declare (``scripts.workflow.process_times``)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

# `timed FILE -m MODULE ARGS...`: everything after FILE belongs to the module
PASS_THROUGH = {"allow_interspersed_args": False, "ignore_unknown_options": True}
# `run-workflow all --vars.NAME VALUE`: overrides as `spacy project run` reads them
VAR_OVERRIDES = {"allow_extra_args": True, "ignore_unknown_options": True}


def run_workflow(
    ctx: typer.Context,
    workflow: str = typer.Argument(..., help="The workflow of project.yml to run, e.g. all"),
    project_dir: Path = typer.Argument(
        Path("."), help="The project folder (holding project.yml)", exists=True, file_okay=False
    ),
    jobs: int = typer.Option(0, "--jobs", min=0, help="Steps at a time (0: one per core)"),
    force: bool = typer.Option(False, "--force", help="Rerun every step, even if nothing changed"),
    step_times: Optional[Path] = typer.Option(
        None,
        "--step-times",
        show_default="project.yml's WORKFLOW_step_times or step_times variable",
        help="Where each step's wall and CPU time is recorded (relative to PROJECT_DIR); the last "
        "run's times there also start long chains first",
    ),
) -> None:
    """Run a workflow's steps side by side and record their times (make all).

    Runs WORKFLOW's steps, independent ones side by side (at most --jobs at a time), each as `spacy
    project run` runs it (deps checked, skipped when nothing changed, project.lock written), and
    records each step's wall and CPU time for the reports; `make all` runs `run-workflow all`.
    Overrides as in spacy project run (--vars.NAME VALUE); the steps' own seed parallelism
    (vars.jobs) is set to 1 unless given."""
    from scripts.workflow.parallel import weasel_api
    from scripts.workflow.parallel.graph import set_priorities, workflow_steps
    from scripts.workflow.parallel.pool import jobs_for
    from scripts.workflow.parallel.runner import StepFailed, run_steps
    from scripts.workflow.parallel.step_times import step_costs, times_file_for

    overrides = weasel_api.parse_overrides(list(ctx.args))
    overrides.setdefault("vars.jobs", 1)
    config = weasel_api.load_project(project_dir, overrides)
    try:
        steps = workflow_steps(config, workflow)
    except ValueError as e:
        msg.fail(str(e), exits=1)
    times_file = project_dir / (step_times or times_file_for(config.get("vars", {}), workflow))
    set_priorities(steps, step_costs(times_file))
    n_jobs = jobs_for(jobs)
    msg.info(
        f"Running workflow '{workflow}': {len(steps)} steps, up to {n_jobs} at a time; step times go to {times_file}"
    )
    started = time.time()
    try:
        run_steps(project_dir, steps, n_jobs, force=force, times_file=times_file, overrides=overrides)
    except StepFailed as e:
        msg.fail(f"Workflow '{workflow}' stopped: {e}", exits=1)
    msg.good(f"Workflow '{workflow}' done in {(time.time() - started) / 60:.1f} min")


def timed(
    record: Path = typer.Argument(..., help="The JSON file the command's CPU and wall time go to"),
    command: List[str] = typer.Argument(
        ..., metavar="-m MODULE [ARGS]...", help="The module to run and its arguments, as after `python`"
    ),
) -> None:
    """Run python -m MODULE and record its CPU time in a file (the pretrain budget).

    Run `python -m MODULE ARGS...` in a child process and, when it succeeds, write its CPU time (its
    whole process tree) and wall time to RECORD: the pretrain step records the biLM's CPU time, the
    spacy-pretrain steps' budget. RECORD is removed first, so a failed run leaves none; the exit
    code is the command's."""
    from scripts.workflow.process_times import reap, write_cpu_record

    if len(command) < 2 or command[0] != "-m":
        raise typer.BadParameter("expected -m MODULE [ARGS...]", param_hint="COMMAND")
    record.unlink(missing_ok=True)
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, *command])
    # Ctrl-C reaches the child too, which decides how to stop (pretraining checkpoints first):
    # wait for it; a SIGTERM sent to this process is passed on.
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    old_term = signal.signal(signal.SIGTERM, lambda signum, frame: process.send_signal(signal.SIGTERM))
    try:
        times = reap(process, started)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
    assert times is not None
    if times.returncode != 0:
        msg.fail(f"python {' '.join(command[:2])} failed (exit code {times.returncode}); no times recorded")
        raise typer.Exit(times.returncode if times.returncode > 0 else 1)
    write_cpu_record(record, times, ["python", *command])
    cpu = f"{times.cpu_seconds:.1f} CPU seconds, " if times.cpu_seconds is not None else ""
    msg.good(f"python {' '.join(command[:2])}: {cpu}{times.wall_seconds:.1f} s wall time; recorded in {record}")
