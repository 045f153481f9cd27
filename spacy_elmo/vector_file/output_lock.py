"""One ``spacy-elmo embed`` run per output and shard, by an exclusive ``flock`` on
``OUTPUT.embed-K.lock`` (which dies with its process, and whose name is never followed). Without
locks (some network mounts) a run goes on with a warning: the join's token hashes still hold."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
from pathlib import Path
from typing import BinaryIO, Optional

from ..formats.regular_files import open_regular_file

logger = logging.getLogger("spacy_elmo")
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)


class OutputBusy(RuntimeError):
    """Another run holds the lock."""


class UnsafeLockFile(ValueError):
    """The lock's path is a symlink or not a regular file."""


def open_lock_file(path: Path) -> BinaryIO:
    """Created if missing; a symlink or anything but a regular file there is refused."""
    try:
        return open_regular_file(path, "lock file", lock=True)
    except ValueError as err:
        raise UnsafeLockFile(f"{err}: move it away and run again") from None


def lock_path(output: Path, shard: int) -> Path:
    return output.with_name(f"{output.name}.embed-{shard}.lock")


class OutputLock:
    """The exclusive lock of one shard of one output, held until :meth:`release`."""

    def __init__(self, output: Path, shard: int, n_shards: int) -> None:
        self.path = lock_path(output, shard)
        self._handle: Optional[BinaryIO] = None
        while self._handle is None:
            handle = open_lock_file(self.path)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                with handle:
                    if err.errno in _NO_LOCKS:
                        logger.warning(
                            "%s cannot be locked (%s): make sure no other run writes this output now",
                            self.path,
                            err.strerror,
                        )
                        return
                    if not isinstance(err, BlockingIOError):
                        raise
                    holder = _read_holder(handle)
                what = f"shard {shard}/{n_shards} of " if n_shards > 1 else ""
                raise OutputBusy(
                    f"another spacy-elmo embed ({holder}) is writing {what}{output} right now (it holds "
                    f"{self.path}); two runs on one output would mix their vectors: wait for it to finish, "
                    "or choose another output file"
                ) from None
            if _still_there(self.path, handle):
                self._handle = handle
            else:
                handle.close()  # its holder removed it before we locked it: take a fresh one
        try:
            self._handle.truncate(0)
            self._handle.write(f"{os.getpid()}\n".encode())
            self._handle.flush()
        except OSError:
            pass  # the process id only makes the other run's message nicer; a full disk may refuse it

    def release(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            with handle:  # closing the last descriptor releases the flock
                if _still_there(self.path, handle):
                    self.path.unlink(missing_ok=True)


def _still_there(path: Path, handle: BinaryIO) -> bool:
    try:
        on_path, held = os.lstat(path), os.fstat(handle.fileno())
    except FileNotFoundError:
        return False
    return (on_path.st_dev, on_path.st_ino) == (held.st_dev, held.st_ino)


def _read_holder(handle: BinaryIO) -> str:
    try:
        text = os.pread(handle.fileno(), 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        text = ""
    return f"process {text}" if text.isdigit() else "another process"
