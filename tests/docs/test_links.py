"""What the pages point to exists: relative links and their #anchors, and every repository path
they name in backticks (a file that moves must take its mentions along)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .markdown_blocks import PAGES, REPO_ROOT

BENCHMARKS = [REPO_ROOT / "benchmarks" / "README.md", REPO_ROOT / "benchmarks" / "HISTORY.md"]
LINKED_PAGES = PAGES + BENCHMARKS
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
REPO_PATH = re.compile(r"`((?:spacy_elmo|tests|configs|benchmarks|scripts|tools|docs|reports)/[^`\s]*)`")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    return {slug(match) for match in re.findall(r"^#+\s+(.*)$", text, re.M)}


def prose(page: Path) -> str:
    """The page without its code blocks (a block's paths are the reader's, not the repository's)."""
    return re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)


@pytest.mark.parametrize("page", LINKED_PAGES, ids=[str(p.relative_to(REPO_ROOT)) for p in LINKED_PAGES])
def test_relative_links_and_anchors_exist(page):
    for target in LINK.findall(prose(page)):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: the link {target} points to nothing"
        if anchor:
            assert anchor in anchors(linked), f"{page.name}: {linked.name} has no heading #{anchor}"


@pytest.mark.parametrize(
    "page", PAGES + BENCHMARKS[:1], ids=[str(p.relative_to(REPO_ROOT)) for p in PAGES + BENCHMARKS[:1]]
)
def test_named_repository_paths_exist(page):
    for named in REPO_PATH.findall(prose(page)):
        found = list(REPO_ROOT.glob(named.rstrip("/"))) if "*" in named else [REPO_ROOT / named]
        assert found and all(path.exists() for path in found), f"{page.name} names {named}, which does not exist"
