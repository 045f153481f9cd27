"""Atomic writes: the target is the old file or the new one, never a part, and nothing is left over."""

from pathlib import Path

import pytest

from spacy_elmo.durable import write_atomically

from .conftest import full_disk_for


def test_a_write_replaces_the_file_whole(tmp_path: Path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    write_atomically(target, b"new content")
    assert target.read_bytes() == b"new content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path: Path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def half_then_fail(handle) -> None:
        handle.write(b"half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        write_atomically(target, half_then_fail)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


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


def test_a_failed_write_names_the_file_it_was_writing(tmp_path: Path):
    """The temporary file's name is random and gone after the error: the message names the target."""

    def no_space(handle) -> None:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError) as caught:
        write_atomically(tmp_path / "out.bin", no_space)
    assert caught.value.filename == str(tmp_path / "out.bin")
    assert list(tmp_path.iterdir()) == []


def test_an_io_error_in_one_line():
    from spacy_elmo.durable import io_error_reason

    hdf5 = RuntimeError("Unable to synchronously copy object (file write failed: time = Tue Dec  1\n, errno = 28, x)")
    assert io_error_reason(hdf5) == "No space left on device"
    assert io_error_reason(OSError(13, "Permission denied")) == "Permission denied"
    assert io_error_reason(ValueError("first line\nsecond")) == "first line"


# ------------------------------------------------------------------ links at predictable names
def plant_link(at: Path, victim: Path) -> None:
    victim.write_bytes(b"someone else's file")
    at.symlink_to(victim)


def test_a_symlink_at_the_old_temporary_name_is_never_followed(tmp_path: Path):
    """Checkpoints and embed's parts are written this way: a link at TARGET.tmp changes nothing."""
    target, victim, name = tmp_path / "out.bin", tmp_path / "victim.txt", "out.bin.tmp"
    plant_link(tmp_path / name, victim)
    write_atomically(target, b"new content")
    assert victim.read_bytes() == b"someone else's file"
    assert not target.is_symlink() and target.read_bytes() == b"new content"
    assert (tmp_path / name).is_symlink()  # not ours: left as it was


def test_files_written_together_follow_no_link(tmp_path: Path):
    """An export folder: options.json.tmp and weights.hdf5.tmp planted as links."""
    from spacy_elmo.durable import write_files_atomically

    for name in ("options.json", "weights.hdf5"):
        plant_link(tmp_path / f"{name}.tmp", tmp_path / f"victim-{name}")
    write_files_atomically({tmp_path / "options.json": b"{}", tmp_path / "weights.hdf5": b"w"})
    assert [(tmp_path / f"victim-{n}").read_bytes() for n in ("options.json", "weights.hdf5")] == [
        b"someone else's file"
    ] * 2
    assert not (tmp_path / "options.json").is_symlink() and (tmp_path / "options.json").read_bytes() == b"{}"


def test_a_temporary_name_already_taken_is_never_reused(tmp_path: Path, monkeypatch):
    """Even a link planted at the very name drawn: the file is created exclusively, another name is drawn."""
    import secrets

    draws = iter(["0123456789abcdef", "fedcba9876543210"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(draws))
    plant_link(tmp_path / "out.bin.0123456789abcdef.tmp", tmp_path / "victim.txt")
    write_atomically(tmp_path / "out.bin", b"new")
    assert (tmp_path / "victim.txt").read_bytes() == b"someone else's file"
    assert (tmp_path / "out.bin").read_bytes() == b"new" and not (tmp_path / "out.bin").is_symlink()


def test_leftover_temporaries_are_removed_and_nothing_else(tmp_path: Path):
    from spacy_elmo.durable import remove_leftover_temporaries

    leftover = tmp_path / "config.json.0123456789abcdef.tmp"
    leftover.write_bytes(b"half written")
    kept = ["config.json.tmp", "config.json.0123456789ABCDEF.tmp", "config.json.0123.tmp", "weights.hdf5"]
    for name in kept:
        (tmp_path / name).write_bytes(b"keep")
    plant_link(tmp_path / "vocab.json.fedcba9876543210.tmp", tmp_path / "victim.txt")
    (tmp_path / "chars.json.00112233445566ff.tmp").mkdir()
    other_target = tmp_path / "words.json.00112233445566ff.tmp"
    other_target.write_bytes(b"another target's")
    assert remove_leftover_temporaries(tmp_path, lambda target: target != "words.json") == 1
    assert not leftover.exists() and all((tmp_path / name).exists() for name in kept)
    assert (tmp_path / "vocab.json.fedcba9876543210.tmp").is_symlink()
    assert (tmp_path / "victim.txt").read_bytes() == b"someone else's file"
    assert (tmp_path / "chars.json.00112233445566ff.tmp").is_dir() and other_target.exists()
