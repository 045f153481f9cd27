"""Atomic writes: the target is the old file or the new one, never a part, and nothing is left over."""
from pathlib import Path

import pytest

from spacy_elmo.durable import temporary_path, write_atomically, write_bytes_atomically


def test_a_write_replaces_the_file_whole(tmp_path: Path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    write_bytes_atomically(target, b"new content")
    assert target.read_bytes() == b"new content"
    assert not temporary_path(target).exists()


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path: Path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def half_then_fail(handle) -> None:
        handle.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomically(target, half_then_fail)
    assert target.read_bytes() == b"old"
    assert not temporary_path(target).exists()
