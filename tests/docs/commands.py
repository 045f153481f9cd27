"""Run the commands of a ``bash`` block in this process, as the shell would run them.

Starting a Python process per command costs 3-5 s of imports, so the commands the docs show
(`spacy-elmo ...`, `python -m spacy_elmo ...`, `python -m spacy ...`) are invoked through the
same Typer apps their console scripts call, with the same arguments. Anything else (`make`,
`torchrun`, pipes, redirections) has no runner here: its block must be marked not-run.

Training commands are capped so that a docs test stays fast: the overrides of :data:`CAPS` are
appended to the command line, as a user could append them.
"""

from __future__ import annotations

import contextlib
import logging
import shlex
from dataclasses import dataclass
from typing import Iterator

import torch
from typer.testing import CliRunner

#: (command prefix, arguments appended): the one thing the test changes in a shown command.
CAPS = (
    (("python", "-m", "spacy", "train"), ["--training.max_steps", "2", "--training.eval_frequency", "1"]),
    (("python", "-m", "spacy", "pretrain"), ["--pretraining.max_epochs", "1"]),
    (("spacy-elmo", "pretrain"), ["--training.max_steps", "2"]),
    (("python", "-m", "spacy_elmo", "pretrain"), ["--training.max_steps", "2"]),
)


class NoRunner(Exception):
    """A command the docs test cannot run in this process."""


@dataclass
class Outcome:
    command: str
    exit_code: int
    output: str


def command_lines(script: str) -> list[list[str]]:
    """The commands of a bash block: continuation lines joined, comments and blanks dropped."""
    joined = script.replace("\\\n", " ")
    commands = []
    for line in joined.split("\n"):
        if any(symbol in line.split("#", 1)[0] for symbol in ("|", ">", "<", "&&", ";", "$(", "`")):
            raise NoRunner(f"shell syntax in {line.strip()!r}")
        argv = shlex.split(line, comments=True)
        if argv:
            commands.append(argv)
    return commands


def with_caps(argv: list[str]) -> list[str]:
    for prefix, extra in CAPS:
        if tuple(argv[: len(prefix)]) == prefix:
            return argv + extra
    return argv


def run_command(argv: list[str]) -> Outcome:
    """Run one command line; torch's thread count and the loggers are restored afterwards, as
    they would be by the process ending."""
    app, args = _app_for(argv)
    threads = torch.get_num_threads()
    try:
        with _loggers_as_before():
            result = CliRunner().invoke(app, args + with_caps(argv)[len(argv) :])
    finally:
        torch.set_num_threads(threads)
    output = result.output
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        output += f"\n{type(result.exception).__name__}: {result.exception}"
    return Outcome(shlex.join(argv), result.exit_code, output)


def _app_for(argv: list[str]):
    if argv[0] == "spacy-elmo":
        from spacy_elmo.cli import app

        return app, argv[1:]
    if argv[:3] == ["python", "-m", "spacy_elmo"]:
        from spacy_elmo.cli import app

        return app, argv[3:]
    if argv[:3] == ["python", "-m", "spacy"]:
        from spacy.cli._util import app
        from spacy.util import registry

        registry.cli.get_all()  # what `python -m spacy` does first: loads `spacy elmo`
        return app, argv[3:]
    raise NoRunner(f"no in-process runner for {argv[0]!r}")


@contextlib.contextmanager
def _loggers_as_before() -> Iterator[None]:
    """A command may attach a handler to the stream it was given, which the runner closes."""
    loggers = [
        logging.getLogger(),
        *(logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)),
    ]
    saved = {logger: (list(logger.handlers), logger.level, logger.propagate) for logger in loggers}
    try:
        yield
    finally:
        for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
            if isinstance(logger, logging.Logger):
                handlers, level, propagate = saved.get(logger, ([], logging.NOTSET, True))
                logger.handlers[:] = handlers
                logger.setLevel(level)
                logger.propagate = propagate
