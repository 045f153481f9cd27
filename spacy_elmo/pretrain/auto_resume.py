"""``pretrain --auto-resume``: continue an interrupted run of the same inputs, else start over.

A run started this way first records what it was started with in ``OUTPUT_DIR/inputs.json``:
the config's path, the command-line overrides, and the SHA-256 of the config and of every file
or folder the overrides name. The next call with ``--auto-resume`` resumes when those inputs are
unchanged and a checkpoint is there; otherwise it deletes the old run and starts a fresh one. A
folder that does not look like a pretraining run (none of the files only a run writes) is never
deleted: that is an error. A workflow can therefore rerun its pretraining step blindly.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any, Optional, Sequence

from .errors import PretrainError
from .output_folder import CHECKPOINT_FILE, INPUTS_FILE, is_run_folder

RunInputs = dict[str, Any]


def describe_inputs(config_path: Path, overrides: Sequence[str]) -> RunInputs:
    """What identifies a run: the config, the overrides as given, and the content of every
    existing path among the override values (``--paths.train DIR`` or ``--paths.train=DIR``)."""
    contents = {str(config_path): content_digest(config_path)}
    for arg in overrides:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if value and not value.startswith("-") and Path(value).exists():
            contents[value] = content_digest(Path(value))
    return {"config": str(config_path), "overrides": list(overrides), "sha256": contents}


def content_digest(path: Path) -> str:
    """SHA-256 of a file's bytes; for a folder, of each file's path inside it (sorted) and bytes."""
    digest = hashlib.sha256()
    if path.is_file():
        _add_file(digest, path)
        return digest.hexdigest()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode("utf-8") + b"\0")
        _add_file(digest, file)
    return digest.hexdigest()


def resume_or_start_over(output_dir: Path, inputs: RunInputs) -> bool:
    """True when ``output_dir`` holds an interrupted run of ``inputs`` to resume. Otherwise the
    old run (if any) is deleted, the folder made anew with ``inputs.json`` in it, and False."""
    if recorded_inputs(output_dir) == inputs and (output_dir / CHECKPOINT_FILE).is_file():
        return True
    _delete_old_run(output_dir)
    output_dir.mkdir(parents=True)
    (output_dir / INPUTS_FILE).write_text(json.dumps(inputs, indent=2) + "\n", encoding="utf-8")
    return False


def recorded_inputs(output_dir: Path) -> Optional[RunInputs]:
    """The inputs the run in ``output_dir`` was started with (None if it has no record)."""
    try:
        return json.loads((output_dir / INPUTS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _delete_old_run(output_dir: Path) -> None:
    if not output_dir.exists():
        return
    if not output_dir.is_dir():
        raise PretrainError(f"{output_dir} is a file, not an output folder")
    if not any(output_dir.iterdir()):
        output_dir.rmdir()
        return
    if not is_run_folder(output_dir):
        raise PretrainError(f"{output_dir} is not empty and holds no pretraining run: not deleting it; choose another output folder")
    here = Path(os.getcwd()).resolve()
    if output_dir.resolve() in (here, *here.parents):
        raise PretrainError(f"{output_dir} holds the current folder: not deleting it; choose another output folder")
    shutil.rmtree(output_dir)


def _add_file(digest: Any, path: Path) -> None:
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
