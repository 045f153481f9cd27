"""The pretrain command's log lines go to the stderr of the moment, run after run in one process."""

import io
import logging
import sys

from spacy_elmo.cli import pretrain as pretrain_cli


def test_log_lines_follow_a_replaced_stderr(monkeypatch):
    logger = logging.getLogger("spacy_elmo.pretrain")
    monkeypatch.setattr(logger, "handlers", [])
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    pretrain_cli._setup_logging()
    logger.info("one")
    first.close()  # the first run's stream is gone, as after an in-process CLI call
    monkeypatch.setattr(sys, "stderr", second)
    pretrain_cli._setup_logging()
    logger.info("two")
    assert second.getvalue() == "two\n"
    assert len(logger.handlers) == 1
