"""Files that are complete or absent (docs/reliability.md): a temporary file beside the target,
created exclusively under an unguessable name, synced, renamed over the target, the folder synced."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
from pathlib import Path
from typing import Any, BinaryIO, Callable, Mapping, Optional, Union

TEMPORARY_NAME = re.compile(r"(?P<target>.+)\.(?P<token>[0-9a-f]{16})\.tmp")
_ATTEMPTS = 100  # names drawn before giving up (a clash is a 1 in 2^64 event without an attacker)
#: A file's bytes, or a function that writes them to a handle (for a writer that streams).
Content = Union[bytes, Callable[[BinaryIO], object]]


def file_sha256(path: Path, digest: Any = None) -> str:
    """The SHA-256 of a file's bytes (or ``digest`` updated with them), read in blocks."""
    digest = hashlib.sha256() if digest is None else digest
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def create_temporary(path: Path) -> tuple[BinaryIO, Path]:
    """A new file beside ``path`` under an unguessable name, never one (or a link) already there."""
    path = Path(path)
    for _ in range(_ATTEMPTS):
        tmp = path.with_name(f"{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            return open(tmp, "xb"), tmp  # "x": O_CREAT | O_EXCL, which follows no symlink
        except FileExistsError:
            continue
    raise FileExistsError(f"could not create a temporary file beside {path}: every name drawn was taken")


def write_atomically(path: Path, content: Content) -> None:
    """``path`` left as it was on an error."""
    write_files_atomically({path: content})


def write_files_atomically(files: Mapping[Path, Content]) -> None:
    """All are written and synced before the first is renamed: an error leaves every target as it was."""
    written: dict[Path, Path] = {}
    try:
        for path, content in files.items():
            written[Path(path)] = _write_synced(Path(path), content)
    except BaseException:
        for tmp in written.values():
            tmp.unlink(missing_ok=True)
        raise
    for path, tmp in written.items():
        os.replace(tmp, path)
    for folder in {path.parent for path in written}:
        sync_folder(folder)


def _write_synced(path: Path, content: Content) -> Path:
    """A new temporary file for ``path``, written and synced; a write's ``OSError`` names ``path``."""
    tmp: Optional[Path] = None
    try:
        handle, tmp = create_temporary(path)
        with handle:
            if callable(content):
                content(handle)
            else:
                handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        return tmp
    except BaseException as err:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        if isinstance(err, OSError) and err.filename is None and err.errno is not None:
            raise OSError(err.errno, err.strerror or str(err), str(path)) from err
        raise


def remove_leftover_temporaries(folder: Path, is_target: Callable[[str], bool] = lambda name: True) -> int:
    """Delete the temporary files killed writers left for ``is_target``'s targets (this user's regular files)."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return 0
    for entry in entries:
        found = TEMPORARY_NAME.fullmatch(entry.name)
        if found is None or not is_target(found.group("target")):
            continue
        try:
            facts = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(facts.st_mode) and facts.st_uid == os.geteuid():
            Path(entry.path).unlink(missing_ok=True)
            removed += 1
    return removed


def io_error_reason(err: BaseException) -> str:
    """Why a read or write failed, in one line (HDF5 buries the error number in several)."""
    code = err.errno if isinstance(err, OSError) else None
    if not code:
        found = re.search(r"errno = (\d+)", str(err))
        code = int(found.group(1)) if found else None
    if code:
        return os.strerror(code)
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


def sync_folder(path: Path) -> None:
    """Make a rename in ``path`` durable (where folders can be opened)."""
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
