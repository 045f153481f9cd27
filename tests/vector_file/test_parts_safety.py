"""``spacy-elmo embed`` never resumes onto vectors of other weights, settings or tokens, never
writes into a file it did not create, loses at most the batch in flight when the disk fills,
reads long lines as windows, and skips unreadable lines with their file and line."""

import errno
import json
import logging
import re
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo import embed_layers
from spacy_elmo.cli import app
from spacy_elmo.corpora.keyed_sentences import SkippedLines, read_sentences
from spacy_elmo.embedding.embedder import Embedder
from spacy_elmo.nn import TINY_CONFIG, BiLM
from spacy_elmo.vector_file.job import embed_corpus
from spacy_elmo.vector_file.parts import SENTENCE_INDEX, TOKENS_ATTR, EmbedError, parts_dir, read_sentence_index

from ..conftest import BATCH_BOUND, random_tiny_bilm, relative_difference


def make_bilm(seed: int) -> BiLM:
    return random_tiny_bilm(seed, scale=0.5)


@pytest.fixture(scope="module")
def bilm() -> BiLM:
    return make_bilm(0)


def datasets(path: Path) -> dict:
    with h5py.File(path, "r") as handle:
        return {key: handle[key][...] for key in handle if key != SENTENCE_INDEX}


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf8")
    return path


LINES = [f"sentence {i} says something about rates" for i in range(20)]


def test_other_weights_of_the_same_shape_are_refused(tmp_path, bilm):
    source = write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    before = datasets(output)
    with pytest.raises(EmbedError, match="other the weights.*To start over delete"):
        embed_corpus(Embedder(make_bilm(1)), read_sentences(source), output, progress=False)
    # and an in-place change of one weight is other weights too
    changed = make_bilm(0)
    with torch.no_grad():
        changed.forward_lstm.layers[0].bias[0] += 1.0
    with pytest.raises(EmbedError, match="the weights"):
        embed_corpus(Embedder(changed), read_sentences(source), output, progress=False)
    after = datasets(output)
    assert before.keys() == after.keys() and all(numpy.array_equal(before[k], after[k]) for k in before)


def test_other_max_tokens_is_refused_and_named(tmp_path, bilm):
    source = write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    with pytest.raises(EmbedError, match=r"max_tokens \(256, now 4\)"):
        embed_corpus(Embedder(bilm, max_tokens=4), read_sentences(source), output, progress=False)


def test_an_edited_line_is_computed_again_and_a_removed_one_dropped(tmp_path, bilm):
    source = write_lines(tmp_path / "in.txt", LINES)
    output = tmp_path / "out.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    edited = list(LINES)
    edited[3] = "an entirely different line now"
    del edited[-1]
    write_lines(source, edited)
    summary = embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    assert (summary.embedded, summary.dropped) == (1, 1)  # line 3 computed again; line 19 gone
    stored = datasets(output)
    assert set(stored) == {str(i) for i in range(19)}
    numpy.testing.assert_allclose(stored["3"], embed_layers(bilm, [edited[3].split()])[0], atol=1e-5, rtol=0)
    index = read_sentence_index(output)
    assert index[edited[3]] == "3" and LINES[3] not in index
    with h5py.File(output, "r") as handle:
        assert all(TOKENS_ATTR in handle[key].attrs for key in stored)


def test_an_hdf5_file_without_the_marker_is_never_written(tmp_path, bilm):
    source = write_lines(tmp_path / "in.txt", LINES)
    weights = tmp_path / "weights.hdf5"
    with h5py.File(weights, "w") as handle:
        handle.create_dataset("CNN_proj/W_proj", data=numpy.ones((3, 2), dtype=numpy.float32))
    before = weights.read_bytes()
    result = CliRunner().invoke(
        app, ["embed", str(source), str(weights), "--weights", str(save(bilm, tmp_path)), "--no-progress"]
    )
    assert result.exit_code == 1 and "spacy-elmo embed did not write" in result.output
    with pytest.raises(EmbedError, match="did not write.*choose another output file"):
        embed_corpus(Embedder(bilm), read_sentences(source), weights, progress=False)
    assert weights.read_bytes() == before
    assert not parts_dir(weights).exists()


def test_a_file_from_the_old_layout_is_refused(tmp_path, bilm):
    source = write_lines(tmp_path / "in.txt", LINES)
    old = tmp_path / "old.hdf5"
    with h5py.File(old, "w") as handle:
        handle.attrs["spacy_elmo_embed_options"] = json.dumps({"layers": "all"})
    with pytest.raises(EmbedError, match="did not write"):
        embed_corpus(Embedder(bilm), read_sentences(source), old, progress=False)


def test_an_output_with_an_external_link_is_refused(tmp_path, bilm):
    source = write_lines(tmp_path / "in.txt", LINES[:2])
    output = tmp_path / "out.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    (tmp_path / "secret.hdf5").write_bytes(b"")
    with h5py.File(output, "a") as handle:
        handle["0"].attrs[TOKENS_ATTR] = "stale"
        handle["elsewhere"] = h5py.ExternalLink("secret.hdf5", "/data")
    with pytest.raises(ValueError, match="external link"):
        embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)


def test_a_full_disk_loses_at_most_the_batch_in_flight(tmp_path, bilm, monkeypatch):
    """ENOSPC while a part is written: a clear error, no partial file, earlier parts intact,
    and the same command finishes the job once there is room."""
    source = write_lines(tmp_path / "in.txt", [f"line {i} has words {i % 7}" for i in range(30)])
    reference = tmp_path / "reference.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source), reference, chunk_tokens=20, progress=False)
    output = tmp_path / "out.hdf5"
    real_open = open
    writes = []

    def open_with_full_disk(path, mode="r", *args, **kwargs):
        if re.search(r"\.hdf5\.[0-9a-f]{16}\.tmp$", str(path)) and "x" in mode:  # durable's temporary parts
            writes.append(path)
            if len(writes) >= 4:
                raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real_open(path, mode, *args, **kwargs)

    monkeypatch.setattr("builtins.open", open_with_full_disk)
    with pytest.raises(EmbedError, match="No space left on device.*free some space and run the same command again"):
        embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=20, progress=False)
    monkeypatch.setattr("builtins.open", real_open)
    parts = sorted(parts_dir(output).glob("part-*"))
    assert len(parts) == 3 and not list(parts_dir(output).glob("*.tmp"))
    summary = embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=20, progress=False)
    assert summary.skipped > 0
    want, got = datasets(reference), datasets(output)
    assert want.keys() == got.keys() and all(numpy.array_equal(want[k], got[k]) for k in want)


TMPFS_SCRIPT = """
set -e
mount -t tmpfs -o size={size} tmpfs {mount}
trap 'umount {mount}' EXIT
{python} -m spacy_elmo embed {source} {mount}/out.hdf5 --weights {weights} --no-progress --threads 1 --chunk-tokens 50 && exit 3
ls {mount}/out.hdf5.parts > {listing}
"""


def test_a_tiny_full_filesystem_keeps_finished_parts(tmp_path, bilm):
    """A real full disk: a 600 kB tmpfs (needs mount rights: skipped without them)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare not available")
    probe = subprocess.run(
        [unshare, "-rm", "mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(tmp_path)], capture_output=True
    )
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode(errors='replace').strip()}")
    import sys

    weights = tmp_path / "model"
    bilm.to_disk(weights)
    source = write_lines(tmp_path / "in.txt", [f"line {i} has some words {i}" for i in range(400)])
    mount = tmp_path / "mnt"
    mount.mkdir()
    listing = tmp_path / "listing.txt"
    script = TMPFS_SCRIPT.format(
        size="600k", mount=mount, python=sys.executable, source=source, weights=weights, listing=listing
    )
    result = subprocess.run([unshare, "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    names = listing.read_text().split()
    assert any(name.startswith("part-") for name in names)
    assert not any(name.endswith(".tmp") for name in names)


def test_a_long_line_is_read_as_windows_and_stored_as_one_dataset(tmp_path, bilm):
    words = [f"w{i % 37}" for i in range(1000)]
    source = write_lines(tmp_path / "in.txt", ["short line", " ".join(words)])
    output = tmp_path / "out.hdf5"
    summary = embed_corpus(
        Embedder(bilm, batch_tokens=256, max_tokens=100), read_sentences(source), output, progress=False
    )
    assert summary.windows == 1 + 10
    stored = datasets(output)["1"]
    assert stored.shape == (3, 1000, 2 * TINY_CONFIG.projection_dim)
    windows = embed_layers(bilm, [words[start : start + 100] for start in range(0, 1000, 100)])
    assert relative_difference([numpy.concatenate(windows, axis=1)], [stored[...]]) <= BATCH_BOUND


def test_invalid_utf8_lines_are_skipped_with_file_and_line(tmp_path, bilm, caplog):
    source = tmp_path / "in.txt"
    source.write_bytes(b"a fine line\nbad \xff\xfe bytes\nanother fine line\n")
    skipped = SkippedLines()
    with caplog.at_level(logging.WARNING, logger="spacy_elmo"):
        sentences = list(read_sentences(source, skipped=skipped))
    assert [s.key for s in sentences] == ["0", "2"]
    assert skipped.count == 1 and f"{source}:2: not valid UTF-8" in caplog.text
    output = tmp_path / "out.hdf5"
    result = CliRunner().invoke(
        app, ["embed", str(source), str(output), "--weights", str(save(bilm, tmp_path)), "--no-progress"]
    )
    assert result.exit_code == 0, result.output
    assert "1 unreadable line(s) skipped" in result.output
    assert set(read_sentence_index(output).values()) == {"0", "2"}


def test_jsonl_lone_surrogates_are_skipped_and_the_index_stays_readable(tmp_path, bilm):
    source = tmp_path / "in.jsonl"
    source.write_text(
        '{"text": "good one"}\n{"text": "bad \\ud800 one"}\n{"text": "ok", "tokens": ["x\\udfff"]}\n{"text": "fine"}\n',
        encoding="utf8",
    )
    skipped = SkippedLines()
    output = tmp_path / "out.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source, skipped=skipped), output, progress=False)
    assert skipped.count == 2 and skipped.examples[0].startswith(f"{source}:2:")
    assert read_sentence_index(output) == {"good one": "0", "fine": "3"}


def save(bilm: BiLM, tmp_path: Path) -> Path:
    path = tmp_path / "model"
    if not path.exists():
        bilm.to_disk(path)
    return path


# ------------------------------------------------------------------ links at predictable names
def plant_link(at: Path, victim: Path) -> Path:
    victim.write_text("someone else's file\n")
    at.symlink_to(victim)
    return victim


def test_a_symlinked_lock_is_one_error_and_its_target_is_left_alone(tmp_path, bilm):
    source, output = write_lines(tmp_path / "in.txt", LINES), tmp_path / "out.hdf5"
    lock = tmp_path / "out.hdf5.embed-0.lock"
    victim = plant_link(lock, tmp_path / "victim.txt")
    command = ["embed", str(source), str(output), "--weights", str(save(bilm, tmp_path)), "--no-progress"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"Error: {lock}: the lock file is a symbolic link, which is never followed: move it away and run again"
    ]
    assert victim.read_text() == "someone else's file\n" and not output.exists()


def test_links_at_the_old_temporary_names_change_nothing(tmp_path, bilm):
    """A link at ``out.hdf5.joining.tmp`` and at the ``.tmp`` names of a part and a done mark:
    the targets stay as they were and the output is a regular file with every vector."""
    source, output = write_lines(tmp_path / "in.txt", LINES), tmp_path / "out.hdf5"
    reference = tmp_path / "reference.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source), reference, chunk_tokens=30, progress=False)
    embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=30, progress=False, shard=(0, 2))
    parts = parts_dir(output)
    victims = [
        plant_link(tmp_path / "out.hdf5.joining.tmp", tmp_path / "victim-join.txt"),
        plant_link(parts / "part-0001-00000000.hdf5.tmp", tmp_path / "victim-part.txt"),
        plant_link(parts / "done-0001-of-0002.tmp", tmp_path / "victim-done.txt"),
    ]
    summary = embed_corpus(
        Embedder(bilm), read_sentences(source), output, chunk_tokens=30, progress=False, shard=(1, 2)
    )
    assert summary.joined
    assert [victim.read_text() for victim in victims] == ["someone else's file\n"] * 3
    assert output.is_file() and not output.is_symlink()
    want, got = datasets(reference), datasets(output)
    assert want.keys() == got.keys() and all(numpy.array_equal(want[k], got[k]) for k in want)


def test_leftovers_of_a_killed_run_are_removed_and_nothing_else(tmp_path, bilm):
    source, output = write_lines(tmp_path / "in.txt", LINES), tmp_path / "out.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=30, progress=False, shard=(0, 2))
    parts = parts_dir(output)
    own = [parts / "part-0000-00000007.hdf5.0123456789abcdef.tmp", parts / "done-0000-of-0002.0123456789abcdef.tmp"]
    for path in own:
        path.write_bytes(b"half written when the run was killed")
    others = [parts / "part-0001-00000000.hdf5.0123456789abcdef.tmp", parts / "part-0000-notes.tmp"]
    for path in others:
        path.write_bytes(b"another shard's, or the user's")
    link = parts / "part-0000-00000008.hdf5.fedcba9876543210.tmp"
    victim = plant_link(link, tmp_path / "victim.txt")
    embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=30, progress=False, shard=(0, 2))
    assert not any(path.exists() for path in own)
    assert all(path.exists() for path in others) and link.is_symlink()
    assert victim.read_text() == "someone else's file\n"
    killed_join, users = tmp_path / "out.hdf5.00112233445566ff.tmp", tmp_path / "out.hdf5.backup.tmp"
    killed_join.write_bytes(b"a join killed halfway")
    users.write_bytes(b"the user's")
    for path in others:
        path.unlink()
    embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=30, progress=False, shard=(1, 2))
    assert not killed_join.exists() and users.exists() and len(datasets(output)) == len(LINES)
