"""Atomic writes: the target is the old file or the new one, never a part, and nothing is left over."""

from pathlib import Path

import pytest

from spacy_elmo.durable import temporary_path, write_atomically, write_bytes_atomically

from .conftest import full_disk_for


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


def test_files_written_together_replace_none_when_one_fails(tmp_path: Path, monkeypatch):
    """A model's config and weights: a full disk on the second leaves both old ones in place."""
    from spacy_elmo.durable import write_files_atomically

    first, second = tmp_path / "config.json", tmp_path / "weights.hdf5"
    first.write_bytes(b"old config")
    second.write_bytes(b"old weights")
    with full_disk_for(monkeypatch, "weights.hdf5.tmp"), pytest.raises(OSError, match="No space left on device"):
        write_files_atomically({first: b"new config", second: b"new weights"})
    assert first.read_bytes() == b"old config" and second.read_bytes() == b"old weights"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.json", "weights.hdf5"]
    write_files_atomically({first: b"new config", second: b"new weights"})
    assert first.read_bytes() == b"new config" and second.read_bytes() == b"new weights"


def test_a_failed_write_names_the_temporary_file(tmp_path: Path):
    def no_space(handle) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError) as caught:
        write_atomically(tmp_path / "out.bin", no_space)
    assert caught.value.filename == str(tmp_path / "out.bin.tmp")


def test_an_io_error_in_one_line():
    from spacy_elmo.durable import io_error_reason

    hdf5 = RuntimeError("Unable to synchronously copy object (file write failed: time = Tue Dec  1\n, errno = 28, x)")
    assert io_error_reason(hdf5) == "No space left on device"
    assert io_error_reason(OSError(13, "Permission denied")) == "Permission denied"
    assert io_error_reason(ValueError("first line\nsecond")) == "first line"
