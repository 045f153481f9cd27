"""SIGINT/SIGTERM during pretraining: ask for a checkpoint and a clean stop after the current step.

A second SIGINT stops at once. Signals are caught from the start of the run: one that comes
during set-up stops the run after its first step, with a checkpoint.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from typing import Any, Iterator, Optional

logger = logging.getLogger("spacy_elmo.pretrain")


class StopRequest:
    """Set by a signal handler, read by the training loop between steps."""

    def __init__(self) -> None:
        self.signum: Optional[int] = None

    @property
    def requested(self) -> bool:
        return self.signum is not None


@contextlib.contextmanager
def catch_stop_signals() -> Iterator[StopRequest]:
    """Route SIGINT and SIGTERM to a :class:`StopRequest` while the block runs (main thread only)."""
    request = StopRequest()

    def request_stop(signum: int, frame: Any) -> None:
        if request.signum is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        request.signum = signum
        logger.warning("Received %s: stopping after this step with a checkpoint", signal.Signals(signum).name)

    previous = {}
    try:
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, request_stop)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield request
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
