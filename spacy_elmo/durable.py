"""Files that are complete or absent, never half written: what a kill -9 or a full disk may not
break (embed's parts and joined output, pretraining checkpoints).

The recipe is the usual one: write a temporary file beside the target, flush it to disk, rename
it over the target (atomic on POSIX), then sync the folder so that the rename survives a crash.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import BinaryIO, Callable, Mapping


def temporary_path(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place."""
    return path.with_name(path.name + ".tmp")


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Call ``write`` on an open temporary file, sync it and rename it to ``path``. On an error the
    temporary file is removed and ``path`` is left as it was."""
    tmp = temporary_path(path)
    _write_synced(tmp, write)
    os.replace(tmp, path)
    sync_folder(path.parent)


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """``data`` at ``path``, complete or not at all."""
    write_atomically(path, lambda handle: handle.write(data))


def write_files_atomically(files: Mapping[Path, bytes]) -> None:
    """Several files that belong together (a model's config and weights): every one is written
    and synced under its temporary name before the first is renamed, so a full disk or an error
    while writing leaves all the targets as they were (and no temporary file behind)."""
    written: list[Path] = []
    try:
        for path, data in files.items():
            written.append(temporary_path(path))
            _write_synced(written[-1], _bytes_writer(data))
    except BaseException:
        for tmp in written:
            tmp.unlink(missing_ok=True)
        raise
    for path in files:
        os.replace(temporary_path(path), path)
    for folder in {path.parent for path in files}:
        sync_folder(folder)


def _bytes_writer(data: bytes) -> Callable[[BinaryIO], object]:
    """A ``write`` for :func:`_write_synced` that writes ``data``."""
    return lambda handle: handle.write(data)


def _write_synced(tmp: Path, write: Callable[[BinaryIO], object]) -> None:
    """``tmp`` written by ``write`` and flushed to disk, or removed. An ``OSError`` of a write
    (a full disk) names ``tmp``, which a bare write error does not."""
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None and err.errno is not None:
            raise OSError(err.errno, err.strerror or str(err), str(tmp)) from err
        raise


def io_error_reason(err: BaseException) -> str:
    """Why a read or write failed, in one line: the system's words for its error number (HDF5
    buries it in a message of several lines), else the first line of the message."""
    code = err.errno if isinstance(err, OSError) else None
    if not code:
        found = re.search(r"errno = (\d+)", str(err))
        code = int(found.group(1)) if found else None
    if code:
        return os.strerror(code)
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


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
