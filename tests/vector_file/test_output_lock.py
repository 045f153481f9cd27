"""The lock of one embed run per output and shard: a second holder is refused with the first
one's process id, other shards are not, the file goes when its holder is done, and a file system
without locks lets the run go on with a warning."""

import errno
import logging
import os

import pytest

from spacy_elmo.vector_file import output_lock
from spacy_elmo.vector_file.output_lock import OutputBusy, OutputLock, UnsafeLockFile, lock_path


def test_a_second_run_of_one_shard_is_refused_and_others_are_not(tmp_path):
    output = tmp_path / "out.hdf5"
    first = OutputLock(output, 0, 2)
    with pytest.raises(
        OutputBusy, match=f"another spacy-elmo embed \\(process {os.getpid()}\\) is writing shard 0/2 of"
    ):
        OutputLock(output, 0, 2)
    other_shard = OutputLock(output, 1, 2)
    other_shard.release()
    first.release()
    assert not lock_path(output, 0).exists() and not lock_path(output, 1).exists()
    OutputLock(output, 0, 2).release()  # free again once released


def test_a_lock_file_left_by_a_killed_run_blocks_nothing(tmp_path):
    output = tmp_path / "out.hdf5"
    lock_path(output, 0).write_text("12345\n")  # the file stays after kill -9; its lock does not
    lock = OutputLock(output, 0, 1)
    assert lock_path(output, 0).read_text() == f"{os.getpid()}\n"
    lock.release()


def test_without_locks_the_run_goes_on_with_a_warning(tmp_path, monkeypatch, caplog):
    def no_locks(*args):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(output_lock.fcntl, "flock", no_locks)
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        OutputLock(tmp_path / "out.hdf5", 0, 1).release()
    assert "cannot be locked (No locks available)" in caplog.text


# ------------------------------------------------------------------ the lock's name is predictable
def test_a_symlink_at_the_lock_name_is_refused_and_its_target_left_alone(tmp_path):
    output, victim = tmp_path / "out.hdf5", tmp_path / "victim.txt"
    victim.write_text("someone else's file\n")
    lock_path(output, 0).symlink_to(victim)
    with pytest.raises(UnsafeLockFile) as caught:
        OutputLock(output, 0, 1)
    assert str(caught.value) == (
        f"{lock_path(output, 0)}: the lock file is a symbolic link, which is never followed: move it away and run again"
    )
    assert victim.read_text() == "someone else's file\n" and lock_path(output, 0).is_symlink()


def test_a_dangling_symlink_at_the_lock_name_creates_nothing(tmp_path):
    output, nowhere = tmp_path / "out.hdf5", tmp_path / "created-through-the-link"
    lock_path(output, 0).symlink_to(nowhere)
    with pytest.raises(UnsafeLockFile, match="is a symbolic link"):
        OutputLock(output, 0, 1)
    assert not nowhere.exists()


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_lock_name_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    output = tmp_path / "out.hdf5"
    path = lock_path(output, 0)
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    expected = r"a FIFO \(named pipe\)" if kind == "fifo" else "a directory"
    with pytest.raises(
        UnsafeLockFile,
        match=f"^{path}: the lock file must be a regular file, but it is {expected}: move it away and run again$",
    ):
        OutputLock(output, 0, 1)
    assert path.exists()
