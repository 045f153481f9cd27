"""One ``spacy-elmo embed`` run per output and shard, by an exclusive ``flock`` on
``OUTPUT.embed-K.lock`` (which dies with its process, and whose name is never followed). Without
locks (some network mounts) a run goes on with a warning: the join's token hashes still hold."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import stat
from pathlib import Path
from typing import Optional

from ..durable import file_kind

logger = logging.getLogger("spacy_elmo")
_NO_LOCKS = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)


class OutputBusy(RuntimeError):
    """Another run holds the lock."""


class UnsafeLockFile(ValueError):
    """The lock's path is a symlink or not a regular file."""


def open_lock_file(path: Path) -> int:
    """Created if missing; a symlink or anything but a regular file there is refused."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags, 0o644)
    except OSError as err:
        if err.errno == errno.ELOOP or os.path.islink(path):
            raise UnsafeLockFile(
                f"{path} is a symbolic link; a lock file is never followed: remove the link and run again"
            ) from None
        if err.errno not in (errno.EISDIR, errno.ENXIO, errno.EOPNOTSUPP):
            raise
        raise _not_a_lock_file(path, os.lstat(path).st_mode) from None  # a directory, a socket
    mode = os.fstat(descriptor).st_mode
    if not stat.S_ISREG(mode):
        os.close(descriptor)
        raise _not_a_lock_file(path, mode)  # a FIFO or a device (opened without blocking)
    return descriptor


def _not_a_lock_file(path: Path, mode: int) -> UnsafeLockFile:
    return UnsafeLockFile(f"{path} is {file_kind(mode)}, not a lock file: move it away and run again")


def lock_path(output: Path, shard: int) -> Path:
    return output.with_name(f"{output.name}.embed-{shard}.lock")


class OutputLock:
    """The exclusive lock of one shard of one output, held until :meth:`release`."""

    def __init__(self, output: Path, shard: int, n_shards: int) -> None:
        self.path = lock_path(output, shard)
        self._descriptor: Optional[int] = None
        while self._descriptor is None:
            descriptor = open_lock_file(self.path)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as err:
                if err.errno in _NO_LOCKS:
                    os.close(descriptor)
                    logger.warning(
                        "%s cannot be locked (%s): make sure no other run writes this output now",
                        self.path,
                        err.strerror,
                    )
                    return
                if not isinstance(err, BlockingIOError):
                    os.close(descriptor)
                    raise
                holder = _read_holder(descriptor)
                os.close(descriptor)
                what = f"shard {shard}/{n_shards} of " if n_shards > 1 else ""
                raise OutputBusy(
                    f"another spacy-elmo embed ({holder}) is writing {what}{output} right now (it holds "
                    f"{self.path}); two runs on one output would mix their vectors: wait for it to finish, "
                    "or choose another output file"
                ) from None
            if _still_there(self.path, descriptor):
                self._descriptor = descriptor
            else:
                os.close(descriptor)  # its holder removed it before we locked it: take a fresh one
        try:
            os.ftruncate(self._descriptor, 0)
            os.write(self._descriptor, f"{os.getpid()}\n".encode())
        except OSError:
            pass  # the process id only makes the other run's message nicer; a full disk may refuse it

    def release(self) -> None:
        if self._descriptor is None:
            return
        try:
            if _still_there(self.path, self._descriptor):
                self.path.unlink(missing_ok=True)
        finally:
            os.close(self._descriptor)  # closing the last descriptor releases the flock
            self._descriptor = None


def _still_there(path: Path, descriptor: int) -> bool:
    try:
        on_path, held = os.lstat(path), os.fstat(descriptor)
    except FileNotFoundError:
        return False
    return (on_path.st_dev, on_path.st_ino) == (held.st_dev, held.st_ino)


def _read_holder(descriptor: int) -> str:
    try:
        text = os.pread(descriptor, 32, 0).decode("ascii", errors="replace").strip()
    except OSError:
        text = ""
    return f"process {text}" if text.isdigit() else "another process"
