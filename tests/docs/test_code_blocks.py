"""The code blocks of the README, the contributors' pages and docs/ run: what a page shows is
what the code does.

The blocks of a page run in order, in one folder prepared with tiny weights and corpora at the
paths they name (:mod:`.workdir`); its ``python`` blocks share one namespace. A block that cannot
run in a test says so with ``<!-- not-run: REASON -->`` (:mod:`.markdown_blocks`), and every
other ``python`` and ``bash`` block must run without error. ``ini`` blocks equal the shipped
config they name; a ``text`` block is the output of the command before it, numbers aside.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from thinc.api import Config

from .commands import NoRunner, _app_for, command_lines, run_command
from .markdown_blocks import LANGUAGES, PAGES, REPO_ROOT, Block, read_blocks
from .workdir import build_assets, page_workdir

PAGE_IDS = [str(page.relative_to(REPO_ROOT)) for page in PAGES]


@pytest.fixture(scope="session")
def assets(tmp_path_factory):
    return build_assets(tmp_path_factory.mktemp("docs_assets"))


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_block_runs_or_says_why_not(page):
    for block in read_blocks(page):
        assert block.language in LANGUAGES, f"{block.where}: say which language the block is ({', '.join(LANGUAGES)})"
        if block.marker == "not-run":
            assert block.argument, f"{block.where}: a not-run block needs a reason"
            continue
        if block.language == "ini":
            assert block.marker == "same-as", f"{block.where}: an ini block must name its shipped config (same-as)"
        else:
            assert block.marker is None, f"{block.where}: same-as is for ini blocks"
        if block.language == "bash":
            try:
                for argv in command_lines(block.code):
                    _app_for(argv)
            except NoRunner as err:
                pytest.fail(f"{block.where}: {err}: mark the block <!-- not-run: REASON -->")


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_the_blocks_of_a_page_run_in_order(page, assets, tmp_path, monkeypatch):
    monkeypatch.chdir(page_workdir(assets, tmp_path / "work"))
    namespace: dict = {"__name__": "__docs__"}
    shown = None  # what the last block that ran printed
    for block in read_blocks(page):
        if block.marker == "not-run":
            shown = None
        elif block.language == "python":
            shown = run_python(block, namespace)
        elif block.language == "bash":
            shown = run_bash(block)
        elif block.language == "ini":
            check_config_block(block)
        elif block.language == "text":
            assert shown is not None, f"{block.where}: a text block shows the output of a block that runs before it"
            check_output(block, shown)


def run_python(block: Block, namespace: dict) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(block.code, block.where, "exec"), namespace)
    return printed.getvalue()


def run_bash(block: Block) -> str:
    printed = []
    for argv in command_lines(block.code):
        outcome = run_command(argv)
        assert outcome.exit_code == 0, (
            f"{block.where}: `{outcome.command}` exited with {outcome.exit_code}:\n{outcome.output}"
        )
        printed.append(outcome.output)
    return "".join(printed)


def check_config_block(block: Block) -> None:
    """The block's sections, parsed, equal the same sections of the shipped config."""
    shown = Config().from_str(_with_parent_sections(_without_comments(block.code)), interpolate=False)
    shipped = Config().from_disk(REPO_ROOT / block.argument, interpolate=False)
    for section in re.findall(r"^\[([^\]]+)\]", block.code, re.M):
        assert _section(shown, section) == _section(shipped, section), (
            f"{block.where}: [{section}] differs from {block.argument}"
        )


def _without_comments(text: str) -> str:
    return re.sub(r"\s+#.*", "", text)  # the page explains each line in a comment


def _with_parent_sections(text: str) -> str:
    """confection wants every parent of a nested section declared before it."""
    first = re.search(r"^\[([^\]]+)\]", text, re.M).group(1).split(".")
    return "".join(f"[{'.'.join(first[:n])}]\n" for n in range(1, len(first))) + text


def _section(config: Config, dotted: str) -> dict:
    node = config
    for key in dotted.split("."):
        node = node[key]
    return {key: value for key, value in node.items() if not isinstance(value, dict)}


def check_output(block: Block, printed: str) -> None:
    """Each line of the sample is a line of the real output, in order, with numbers (and the
    length of # bars) masked: the sample shows the format, the run decides the numbers."""
    actual = [_mask(line) for line in printed.splitlines()]
    position = 0
    for line in filter(None, (_mask(line) for line in block.code.splitlines())):
        assert line in actual[position:], f"{block.where}: {line!r} is not in the output:\n{printed}"
        position = actual.index(line, position) + 1


def _mask(line: str) -> str:
    return re.sub(r"#+", "#", re.sub(r"\d+(\.\d+)?", "N", line)).rstrip()
