"""Model files are opened only as regular files of a bounded size, whatever their name links to."""

import os

import pytest

from spacy_elmo.formats.regular_files import open_regular_file, read_regular_file

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/null"), reason="POSIX only")


def test_a_regular_file_and_a_link_to_one_are_read(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"abc")
    (tmp_path / "link.txt").symlink_to(path)
    assert read_regular_file(path, "test file", 3) == b"abc"
    assert read_regular_file(tmp_path / "link.txt", "test file", 3) == b"abc"
    with open_regular_file(path, "test file") as handle:
        assert handle.read() == b"abc"


@pytest.mark.parametrize(
    "make, kind",
    [
        (lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
        (lambda p: p.symlink_to("/dev/null"), "a character device"),
        (lambda p: p.mkdir(), "a directory"),
    ],
)
def test_special_files_are_refused_by_name_without_blocking(tmp_path, make, kind):
    path = tmp_path / "x.dic"
    make(path)
    with pytest.raises(ValueError) as error:
        read_regular_file(path, "test file", 100)
    assert str(error.value) == f"{path}: the test file must be a regular file, but it is {kind}"


def test_size_bound_and_missing_files(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 11)
    with pytest.raises(ValueError, match="big.txt: the test file is 11 bytes, more than the 10 it may have"):
        read_regular_file(path, "test file", 10)
    with pytest.raises(FileNotFoundError, match="gone.txt is missing \\(the test file\\)"):
        read_regular_file(tmp_path / "gone.txt", "test file", 10)
    (tmp_path / "dangling").symlink_to(tmp_path / "gone.txt")
    with pytest.raises(FileNotFoundError):
        open_regular_file(tmp_path / "dangling", "test file")
