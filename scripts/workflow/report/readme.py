"""The README's results sections: the text between two markers, rewritten on every report,
so that the README always quotes the last run and nothing else of it changes.

The main report's section is ``results``; another report (the ``textcat`` workflow's) keeps
its own section, so each can be rebuilt without the other's inputs."""

from pathlib import Path

START_MARKER = "<!-- results:start -->"
END_MARKER = "<!-- results:end -->"


def markers(name: str) -> tuple:
    """The start and end markers of the section ``name``."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def update_readme(readme: Path, section: str, name: str = "results", heading: str = "## Results") -> None:
    """Replace the text between the markers; add heading and markers at the end if absent."""
    start_marker, end_marker = markers(name)
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    block = f"{start_marker}\n{section}\n{end_marker}"
    if start_marker in text and end_marker in text.split(start_marker, 1)[1]:
        before, rest = text.split(start_marker, 1)
        after = rest.split(end_marker, 1)[1]
        text = before + block + after
    else:
        if not any(line.strip() == heading for line in text.splitlines()):
            text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + heading + "\n"
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text, encoding="utf-8")
