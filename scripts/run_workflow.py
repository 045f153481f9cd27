"""Run a workflow of ``project.yml`` with its independent steps side by side, one per core:
``make all`` runs ``python -m scripts.run_workflow all``.

Each step does what ``spacy project run STEP`` does (dependencies checked, skipped when
nothing changed, ``project.lock`` updated), in a process of its own; a step starts when the
steps whose outputs it reads are done (``scripts.workflow.parallel``). The steps' own seed
parallelism (the ``jobs`` variable) is set to 1 unless given, so that at most ``--jobs``
single-threaded processes run at once. ``python -m spacy project run all`` still runs the
same steps one after another (then each step trains its seeds side by side).

Usage: ``python -m scripts.run_workflow all [PROJECT_DIR] [--jobs 0] [--force] [--vars.NAME VALUE ...]``.
"""
import time
from pathlib import Path

import typer
from wasabi import msg

from scripts.workflow.parallel.pool import jobs_for
from scripts.workflow.parallel.runner import StepFailed, run_steps, step_costs
from scripts.workflow.parallel.steps import set_priorities, workflow_steps

app = typer.Typer(add_completion=False)


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def main(
    ctx: typer.Context,
    workflow: str = typer.Argument(..., help="The workflow of project.yml to run, e.g. all"),
    project_dir: Path = typer.Argument(Path("."), help="The project folder (holding project.yml)",
                                       exists=True, file_okay=False),
    jobs: int = typer.Option(0, "--jobs", min=0, help="Steps at a time (0: one per core)"),
    force: bool = typer.Option(False, "--force", help="Rerun every step, even if nothing changed"),
    step_times: Path = typer.Option(Path("reports/step_times.json"), "--step-times",
                                    help="The last run's step times (relative to PROJECT_DIR): long chains start first"),
) -> None:
    """Run WORKFLOW's steps, independent ones side by side (at most --jobs at a time), as
    `spacy project run` would run each; overrides as in spacy project run (--vars.NAME VALUE)."""
    from weasel.util import load_project_config, parse_config_overrides

    overrides = parse_config_overrides(list(ctx.args))
    overrides.setdefault("vars.jobs", 1)
    config = load_project_config(project_dir, overrides=overrides)
    try:
        steps = workflow_steps(config, workflow)
    except ValueError as e:
        msg.fail(str(e), exits=1)
    set_priorities(steps, step_costs(project_dir / step_times))
    n_jobs = jobs_for(jobs)
    msg.info(f"Running workflow '{workflow}': {len(steps)} steps, up to {n_jobs} at a time")
    started = time.time()
    try:
        run_steps(project_dir, steps, n_jobs, force=force)
    except StepFailed as e:
        msg.fail(f"Workflow '{workflow}' stopped: {e}", exits=1)
    msg.good(f"Workflow '{workflow}' done in {(time.time() - started) / 60:.1f} min")


if __name__ == "__main__":
    app()
