"""Files of a downloaded model folder, opened only when they are regular files of a bounded size.

A name in an unpacked archive may be a symlink to ``/dev/zero`` (read until memory runs out)
or a FIFO (an ``open`` that waits forever for a writer): unzip and tar restore both. The file
is opened without blocking, and what was opened is checked (``fstat`` of the descriptor, not
of the name, which could change in between); only then is it read.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import BinaryIO, Optional, Union

PathLike = Union[str, Path]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def open_regular_file(path: PathLike, what: str, max_bytes: Optional[int] = None) -> BinaryIO:
    """``path`` opened for reading in binary, when it is (or links to) a regular file of at most
    ``max_bytes`` bytes (None: any size). ``what`` names the file's role in the errors:
    ``FileNotFoundError`` when nothing is there, else ``ValueError`` naming the file."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing (the {what})") from None
    except OSError as err:
        raise ValueError(f"{path}: the {what} cannot be opened ({err.strerror or err})") from None
    try:
        facts = os.fstat(descriptor)
        if not stat.S_ISREG(facts.st_mode):
            kind = next((name for test, name in _KINDS if test(facts.st_mode)), "not a regular file")
            raise ValueError(f"{path}: the {what} must be a regular file, but it is {kind}")
        if max_bytes is not None and facts.st_size > max_bytes:
            raise ValueError(f"{path}: the {what} is {facts.st_size} bytes, more than the {max_bytes} it may have")
        return io.open(descriptor, "rb", closefd=True)
    except BaseException:
        os.close(descriptor)
        raise


def read_regular_file(path: PathLike, what: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular_file`), at most
    ``max_bytes`` of them, even when it grows while it is read."""
    with open_regular_file(path, what, max_bytes) as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as err:
            raise ValueError(f"{path}: the {what} cannot be read ({err.strerror or err})") from None
    if len(data) > max_bytes:
        raise ValueError(f"{path}: the {what} is more than the {max_bytes} bytes it may have")
    return data
