"""Files that are complete or absent, never half written: what a kill -9 or a full disk may not
break (embed's parts and joined output, pretraining checkpoints).

The recipe is the usual one: write a temporary file beside the target, flush it to disk, rename
it over the target (atomic on POSIX), then sync the folder so that the rename survives a crash.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO, Callable


def temporary_path(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place."""
    return path.with_name(path.name + ".tmp")


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write`` on an open temporary file, sync it and rename it to ``path``. On an error the
    temporary file is removed and ``path`` is left as it was."""
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    sync_folder(path.parent)


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """``data`` at ``path``, complete or not at all."""
    write_atomically(path, lambda handle: handle.write(data))


def sync_file(path: Path) -> None:
    """Flush a file written by another library (h5py) to disk before it is renamed."""
    with open(path, "rb+") as handle:
        os.fsync(handle.fileno())


def sync_folder(path: Path) -> None:
    """Make a rename in ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
