"""The fenced code blocks of a markdown page, with the HTML comment that marks how the docs
test treats each one.

A marker is the last non-blank line before the opening fence:

- ``<!-- not-run: REASON -->``: the block is shown, never run (a download, long training,
  several processes); the reason is required;
- ``<!-- same-as: configs/NAME.cfg -->``: an ``ini`` block that must equal that shipped config's
  sections, once both are parsed (comments stripped).

Every other ``python`` and ``bash`` block runs; a ``text`` block shows the output of the block
before it and is compared with what that block printed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

REPO_ROOT = Path(__file__).resolve().parents[2]
#: The pages whose blocks the tests run: the README, the contributors' pages and every page of docs/.
PAGES = [REPO_ROOT / name for name in ("README.md", "CONTRIBUTING.md", "CHANGELOG.md")]
PAGES += sorted((REPO_ROOT / "docs").glob("*.md"))
LANGUAGES = ("python", "bash", "ini", "text")

FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*(not-run|same-as):\s*(.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    language: str
    code: str
    marker: Optional[str] = None  # "not-run" or "same-as"
    argument: str = ""  # the marker's reason or config path

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}:{self.line}"


def read_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` in order; an unclosed fence is an error."""
    lines = page.read_text(encoding="utf-8").split("\n")
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        if end == len(lines):
            raise ValueError(f"{page.name}:{index + 1}: the code block is never closed")
        marker, argument = _marker_before(lines, index)
        code = "\n".join(lines[index + 1 : end]) + "\n"
        blocks.append(Block(page, index + 1, opening.group(1), code, marker, argument))
        index = end + 1
    return blocks


def _marker_before(lines: list[str], fence: int) -> tuple[Optional[str], str]:
    before = fence - 1
    while before >= 0 and not lines[before].strip():
        before -= 1
    found = MARKER.match(lines[before].strip()) if before >= 0 else None
    return (found.group(1), found.group(2)) if found else (None, "")
