"""Option values the training commands share, read as typer options: a bad value is a usage
error naming the option, before any training starts."""
from typing import List

import typer

from ..parallel.pool import jobs_for
from .runs import gpu_id, parse_int_list


def int_list(text: str, option: str) -> List[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]`` for ``option``; a usage error otherwise."""
    try:
        return parse_int_list(text)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint=option) from e


def gpu(choice: str) -> int:
    """``spacy train``'s GPU id from ``--gpu`` (a number, or ``auto``); a usage error otherwise."""
    try:
        return gpu_id(choice)
    except ValueError as e:
        raise typer.BadParameter(f"expected a GPU id or auto, not {choice!r}", param_hint="--gpu") from e


def jobs(choice: int) -> int:
    """Parallel runs from ``--jobs`` (0: one per core); a usage error if negative."""
    try:
        return jobs_for(choice)
    except ValueError as e:
        raise typer.BadParameter(str(e), param_hint="--jobs") from e


# The training commands' settings: the options they do not declare are spaCy config overrides
# (``--paths.train ...``), passed on unread in ``ctx.args``.
SPACY_OVERRIDES = {"allow_extra_args": True, "ignore_unknown_options": True}
