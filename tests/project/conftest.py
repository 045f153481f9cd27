"""Shared by the project's tests: running a step's command in this process."""
from typing import Callable, Sequence

import pytest
import typer


def _run(app: typer.Typer, argv: Sequence[str]) -> int:
    """The command's exit code: 0 when it returns, N on ``typer.Exit(N)``. What the command
    raises otherwise (``SystemExit`` from ``msg.fail``, a usage error) reaches the test."""
    result = typer.main.get_command(app).main(args=list(argv), standalone_mode=False)
    return 0 if result is None else int(result)


@pytest.fixture(scope="session")
def run_command() -> Callable[[typer.Typer, Sequence[str]], int]:
    """``run_command(scripts.NAME.app, argv)``: a step's command line, run in this process."""
    return _run
