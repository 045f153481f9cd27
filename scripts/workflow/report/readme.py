"""The README's results section: the text between two markers, rewritten on every report,
so that the README always quotes the last run and nothing else of it changes."""
from pathlib import Path

START_MARKER = "<!-- results:start -->"
END_MARKER = "<!-- results:end -->"


def update_readme(readme: Path, section: str) -> None:
    """Replace the text between the markers; add heading and markers at the end if absent."""
    text = readme.read_text(encoding="utf-8") if readme.is_file() else ""
    block = f"{START_MARKER}\n{section}\n{END_MARKER}"
    if START_MARKER in text and END_MARKER in text.split(START_MARKER, 1)[1]:
        before, rest = text.split(START_MARKER, 1)
        after = rest.split(END_MARKER, 1)[1]
        text = before + block + after
    else:
        if not any(line.strip() == "## Results" for line in text.splitlines()):
            text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + "## Results\n"
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    readme.write_text(text, encoding="utf-8")
