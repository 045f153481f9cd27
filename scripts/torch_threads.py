"""Run a step's module with N torch threads: one thread is fastest when other work shares the
cores (``scripts.workflow.threads`` says why).

Usage: ``python -m scripts.torch_threads N -m MODULE [ARGS...]``, e.g.
``python -m scripts.torch_threads 1 -m scripts.train_seeds configs/ner_elmo.cfg training/ner-elmo``.
"""
from typing import List

import typer

from scripts.workflow.threads import run_module, set_threads

app = typer.Typer(add_completion=False)


# Everything after N belongs to the module: no option of this command may be read there.
@app.command(context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def main(
    threads: int = typer.Argument(..., min=0, help="torch threads (0: torch's default, one per core)"),
    command: List[str] = typer.Argument(..., metavar="-m MODULE [ARGS]...",
                                        help="The module to run and its arguments, as after `python`"),
) -> None:
    """Run a Python module with N torch threads, in this process, exactly as `python -m MODULE
    ARGS...` would."""
    if len(command) < 2 or command[0] != "-m":
        raise typer.BadParameter("expected -m MODULE [ARGS...]", param_hint="COMMAND")
    set_threads(threads)
    run_module(command[1], command[2:])


if __name__ == "__main__":
    app()
