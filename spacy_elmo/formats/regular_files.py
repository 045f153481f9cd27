"""Files from elsewhere: opened without blocking and checked to be regular files of a bounded size
(not a link to ``/dev/zero``, not a FIFO that waits forever), their JSON parsed with errors naming
the file. Lock files are opened here too: created if missing, never through a link."""

from __future__ import annotations

import io
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO, Optional, Union

PathLike = Union[str, Path]
#: Deeper JSON is refused (theirs nest 3 deep; deeper values would overflow repr() in a message).
MAX_JSON_DEPTH = 16
MAX_JSON_BYTES = 1 << 20
_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def file_kind(mode: int) -> Optional[str]:
    """None for a regular file, else what it is (``"a directory"``)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")


def special_file_kind(path: PathLike) -> Optional[str]:
    """What ``path`` is when it exists and is no regular file, else None."""
    try:
        return file_kind(os.stat(path).st_mode)
    except OSError:
        return None


def open_regular_file(path: PathLike, what: str, max_bytes: Optional[int] = None, lock: bool = False) -> BinaryIO:
    """``path`` opened when it is (or links to) a regular file of at most ``max_bytes`` bytes; a
    ``lock`` file is opened read-write, created if missing, and never through a link."""
    path = Path(path)
    flags = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    flags |= os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW if lock else os.O_RDONLY
    try:
        descriptor = os.open(path, flags, 0o644)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing (the {what})") from None
    except OSError as err:  # a link (ELOOP), a folder opened to write, a socket
        if lock and path.is_symlink():
            raise ValueError(f"{path}: the {what} is a symbolic link, which is never followed") from None
        kind = special_file_kind(path)
        if kind is not None:
            raise ValueError(f"{path}: the {what} must be a regular file, but it is {kind}") from None
        raise ValueError(f"{path}: the {what} cannot be opened ({err.strerror or err})") from None
    try:
        facts = os.fstat(descriptor)
        kind = file_kind(facts.st_mode)
        if kind is not None:
            raise ValueError(f"{path}: the {what} must be a regular file, but it is {kind}")
        if max_bytes is not None and facts.st_size > max_bytes:
            raise ValueError(f"{path}: the {what} is {facts.st_size} bytes, more than the {max_bytes} it may have")
        return io.open(descriptor, "r+b" if lock else "rb", closefd=True)
    except BaseException:
        os.close(descriptor)
        raise


def read_regular_file(path: PathLike, what: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` even when it grows meanwhile."""
    with open_regular_file(path, what, max_bytes) as handle:
        try:
            data = handle.read(max_bytes + 1)
        except OSError as err:
            raise ValueError(f"{path}: the {what} cannot be read ({err.strerror or err})") from None
    if len(data) > max_bytes:
        raise ValueError(f"{path}: the {what} is more than the {max_bytes} bytes it may have")
    return data


def read_json_file(path: PathLike, what: str, expected: Optional[type] = None) -> Any:
    return parse_json(read_regular_file(path, what, MAX_JSON_BYTES), str(path), what, expected)


def parse_json(raw: bytes, where: str, what: str, expected: Optional[type] = None) -> Any:
    """The JSON value of ``raw`` (the ``what`` at ``where``), of type ``expected`` when given."""
    if not raw.strip():
        raise ValueError(f"{where}: the {what} is empty (0 bytes or only whitespace)")
    try:
        value = json.loads(raw.decode("utf-8"))
        too_deep = _depth(value) > MAX_JSON_DEPTH
    except UnicodeDecodeError as err:
        raise ValueError(f"{where}: the {what} is not UTF-8 text (binary data at byte {err.start})") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: the {what} is not valid JSON ({err})") from None
    except RecursionError:  # json's parser recurses: the depth limit of Python's stack stops it
        too_deep = True
    if too_deep:
        raise ValueError(f"{where}: the {what} is nested more than {MAX_JSON_DEPTH} deep")
    if expected is not None and not isinstance(value, expected):
        name = "object" if expected is dict else expected.__name__
        raise ValueError(f"{where}: expected a JSON {name}, found {type(value).__name__}")
    return value


def _depth(value: Any) -> int:
    """How deeply lists and objects nest (counted without recursing)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, (list, dict)):
            deepest = max(deepest, depth)
            if depth <= MAX_JSON_DEPTH:
                pending.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return deepest
