"""Progress bars (spacy_elmo/progress.py): live on a terminal, a few whole lines in a log."""

from __future__ import annotations

import io
import time

from spacy_elmo.progress import progress_bar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_a_few_whole_lines_not_one_per_update():
    log = io.StringIO()
    with progress_bar(total=50_000, file=log, unit="tok", unit_scale=True, desc="train", mininterval=0.5) as bar:
        for _ in range(50_000):
            bar.update(1)
    text = log.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert 1 <= len(lines) <= 3  # the start, maybe one summary, the end: well under 30 s
    assert lines[-1].startswith("train: 100%") and "50.0k/50.0k" in lines[-1]


def test_a_log_gets_a_summary_every_interval():
    log = io.StringIO()
    for _ in progress_bar(range(40), file=log, summary_seconds=0.1, desc="count"):
        time.sleep(0.01)  # 0.4 s in all: about four summaries
    lines = log.getvalue().splitlines()
    assert 4 <= len(lines) <= 9 and all(line.startswith("count:") for line in lines)
    assert [line.split("|")[0].split()[-1] for line in lines][-1] == "100%"


def test_a_terminal_gets_tqdms_live_bar():
    screen = Terminal()
    with progress_bar(total=1000, file=screen, mininterval=0) as bar:
        for _ in range(1000):
            bar.update(1)
    assert screen.getvalue().count("\r") > 10  # redrawn in place


def test_a_disabled_bar_writes_nothing():
    log = io.StringIO()
    with progress_bar(total=10, file=log, disable=True) as bar:
        bar.update(10)
    assert log.getvalue() == ""
