"""Shared by the project's tests: running a command of the app (``python -m scripts``) in this process."""

from typing import Callable, Sequence

import pytest
import typer

from scripts.__main__ import app


def _run(argv: Sequence[str]) -> int:
    """The command's exit code: 0 when it returns, N on ``typer.Exit(N)``. What the command
    raises otherwise (``SystemExit`` from ``msg.fail``, a usage error) reaches the test."""
    result = typer.main.get_command(app).main(args=list(argv), standalone_mode=False)
    return 0 if result is None else int(result)


@pytest.fixture(scope="session")
def run_command() -> Callable[[Sequence[str]], int]:
    """``run_command(["fetch", "--root", ...])``: ``python -m scripts ARGS``, run in this process."""
    return _run


def _write_assets(path, assets: dict):
    """An asset list shaped like project.yml's ``assets``, from ``{name: {client, spec, archive,
    sha256, extract_to, members, strip}}``: each archive kept in assets/downloads/."""
    import srsly

    entries = [
        {
            "dest": f"assets/downloads/{asset['archive']}",
            "sha256": asset["sha256"],
            "description": name,
            "fetch": {"name": name, **{k: v for k, v in asset.items() if k not in ("archive", "sha256")}},
        }
        for name, asset in assets.items()
    ]
    srsly.write_yaml(path, {"assets": entries})
    return path


@pytest.fixture(scope="session")
def write_assets() -> Callable[..., object]:
    """``write_assets(path, {name: {...}})``: an asset list for the fetch command's ``--assets``."""
    return _write_assets
