"""Around each step of ``project.yml``: ``start NAME`` before it, ``stop NAME`` after it; the
report's timing table reads the times (``scripts.workflow.step_clock`` says what is measured).

Usage: ``python -m scripts.step_clock (start|stop) NAME [--log reports/step_times.json]``.
"""
from enum import Enum
from pathlib import Path

import typer

from scripts.workflow.step_clock import read_log, start, stop


class Action(str, Enum):
    start = "start"
    stop = "stop"


app = typer.Typer(add_completion=False)


@app.command()
def main(
    action: Action = typer.Argument(..., help="start: before the step; stop: after it"),
    name: str = typer.Argument(..., help="The step's name"),
    log: Path = typer.Option(Path("reports/step_times.json"), "--log", help="The JSON file of the step times"),
) -> None:
    """Record the wall time (and on Linux the CPU time) of a project step."""
    if action is Action.start:
        start(log, name)
        return
    seconds = stop(log, name)
    cpu = read_log(log)[name].get("cpu_seconds")
    print(f"step {name}: {seconds:.1f}s wall time" + (f", {cpu:.1f}s CPU" if cpu is not None else ""))


if __name__ == "__main__":
    app()
