"""``spacy-elmo embed`` runs that meet on one output: two runs at once, shards of different
counts, a part overwritten by someone else, and a disk that is full when a run starts or fills
while it joins. Nothing is ever mixed silently; each case is one clear error, and no temporary
file is left behind."""

import json
import re
import threading
from pathlib import Path

import h5py
import numpy
import pytest

from spacy_elmo import embed_layers
from spacy_elmo.corpora.keyed_sentences import read_sentences
from spacy_elmo.embedding.embedder import Embedder
from spacy_elmo.vector_file.job import embed_corpus, parse_shard
from spacy_elmo.vector_file.parts import (
    SENTENCE_INDEX,
    TOKENS_ATTR,
    EmbedError,
    PartStore,
    parts_dir,
    read_sentence_index,
)

from ..conftest import full_disk_for, random_tiny_bilm


@pytest.fixture(scope="module")
def bilm():
    return random_tiny_bilm(0, scale=0.5)


def write_lines(path: Path, lines) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf8")
    return path


def stored(output: Path) -> dict:
    with h5py.File(output, "r") as handle:
        return {key: handle[key][...] for key in handle if key != SENTENCE_INDEX}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".tmp", ".lock")))


# ------------------------------------------------------------------ two runs at once
def test_two_runs_on_one_output_never_mix_their_vectors(tmp_path, bilm):
    """Both runs start together (a barrier in their input); the second is refused at once, and
    the output holds exactly the first one's vectors under its own sentences."""
    inputs = {
        "a": write_lines(tmp_path / "a.txt", [f"alpha {i} reads the first text {i % 5}" for i in range(60)]),
        "b": write_lines(tmp_path / "b.txt", [f"beta {i} has other words entirely {i % 3}" for i in range(60)]),
    }
    output = tmp_path / "out.hdf5"
    barrier = threading.Barrier(2)
    results: dict = {}

    def together(sentences):
        try:
            barrier.wait(timeout=60)
        except threading.BrokenBarrierError:  # the other run stopped before it read anything
            pass
        yield from sentences

    def run(name: str) -> None:
        try:
            results[name] = embed_corpus(
                Embedder(bilm), together(read_sentences(inputs[name])), output, chunk_tokens=20, progress=False
            )
        except Exception as err:  # noqa: BLE001 - the test inspects what each run raised
            results[name] = err
            barrier.abort()

    threads = [threading.Thread(target=run, args=(name,)) for name in inputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    errors = {name: r for name, r in results.items() if isinstance(r, Exception)}
    assert len(results) == 2 and len(errors) == 1, results
    ((loser, error),) = errors.items()
    # the holder's process id is named once it has written it (a run that loses the race at once
    # may see the lock before the id)
    assert isinstance(error, EmbedError), repr(error)
    assert re.search(r"another spacy-elmo embed \((process \d+|another process)\) is writing", str(error)), str(error)
    winner = "b" if loser == "a" else "a"
    lines = inputs[winner].read_text(encoding="utf8").splitlines()
    assert read_sentence_index(output) == {line: str(i) for i, line in enumerate(lines)}
    vectors = stored(output)
    expected = embed_layers(bilm, [line.split() for line in lines])
    for i, layers in enumerate(expected):
        numpy.testing.assert_allclose(vectors[str(i)], layers, atol=1e-5, rtol=0)
    assert leftovers(tmp_path) == [] and not parts_dir(output).exists()


def test_the_join_refuses_a_part_that_another_run_overwrote(tmp_path, bilm, monkeypatch):
    source = write_lines(tmp_path / "in.txt", [f"line {i} of the input" for i in range(12)])
    output = tmp_path / "out.hdf5"
    real_finish = PartStore.finish

    def overwrite_a_part_then_finish(self, wanted, sentence_to_index):
        part = sorted(self.parts.glob("part-*.hdf5"))[0]
        with h5py.File(part, "r") as handle:
            keys = list(handle)
        with h5py.File(part, "w") as handle:  # what another run of other text would have put there
            for key in keys:
                handle.create_dataset(key, data=numpy.zeros((3, 1, 16), dtype=numpy.float32))
                handle[key].attrs[TOKENS_ATTR] = "tokens of someone else's sentence"
        return real_finish(self, wanted, sentence_to_index)

    monkeypatch.setattr(PartStore, "finish", overwrite_a_part_then_finish)
    with pytest.raises(EmbedError, match=r"part-0000-00000000.hdf5 no longer holds this run's vectors of sentence"):
        embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    assert not output.exists() and leftovers(tmp_path) == []


# ------------------------------------------------------------------ shard counts
def test_shards_of_different_counts_are_refused(tmp_path, bilm):
    source = write_lines(tmp_path / "in.txt", [f"line {i} says {i % 4}" for i in range(30)])
    output = tmp_path / "out.hdf5"
    summary = embed_corpus(
        Embedder(bilm), read_sentences(source), output, shard=(0, 2), chunk_tokens=20, progress=False
    )
    assert not summary.joined
    with pytest.raises(EmbedError, match=r"was begun with --shard K/2, and this run is with --shard 1/3"):
        embed_corpus(Embedder(bilm), read_sentences(source), output, shard=(1, 3), chunk_tokens=20, progress=False)
    with pytest.raises(EmbedError, match=r"was begun with --shard K/2, and this run is without --shard"):
        embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=20, progress=False)
    summary = embed_corpus(
        Embedder(bilm), read_sentences(source), output, shard=(1, 2), chunk_tokens=20, progress=False
    )
    assert summary.joined and len(stored(output)) == 30


@pytest.mark.parametrize("text", ["０/２", "²/3", "1/٣", "1/2/3", "-0/2", "0/0", ""])
def test_shard_numbers_are_plain_ascii_digits(text):
    with pytest.raises(ValueError, match=r"^--shard must be K/N with 0 <= K < N \(like 0/4\), not "):
        parse_shard(text)


def test_shard_numbers_may_have_spaces():
    assert parse_shard(" 1 / 3 ") == (1, 3)


# ------------------------------------------------------------------ a full disk
def test_a_full_disk_at_the_start_is_one_line_and_leaves_nothing(tmp_path, bilm, monkeypatch):
    source = write_lines(tmp_path / "in.txt", ["a line", "another line"])
    output = tmp_path / "out" / "vectors.hdf5"
    with full_disk_for(monkeypatch, ".tmp"), pytest.raises(EmbedError) as caught:
        embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    assert str(caught.value) == (
        f"could not create {parts_dir(output)} (No space left on device); nothing was embedded yet: "
        "free some space and run the same command again"
    )
    assert list(output.parent.iterdir()) == []


def test_a_failure_inside_hdf5_while_joining_is_one_line_and_keeps_the_parts(tmp_path, bilm, monkeypatch):
    source = write_lines(tmp_path / "in.txt", [f"line {i} is here" for i in range(10)])
    output = tmp_path / "out.hdf5"

    def failing_copy(*args, **kwargs):
        raise RuntimeError(
            "Unable to synchronously copy object (file write failed: time = Tue Dec  1 22:57:24 2026\n"
            ", filename = 'out.hdf5.joining.tmp', errno = 28, error message = 'No space left on device')"
        )

    monkeypatch.setattr(h5py.Group, "copy", failing_copy)
    with pytest.raises(EmbedError) as caught:
        embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    monkeypatch.undo()
    message = str(caught.value)
    assert (
        message.startswith(
            f"could not write the joined file {output} (No space left on device); every finished batch is kept in"
        )
        and "\n" not in message
    )
    assert leftovers(tmp_path) == [] and any(parts_dir(output).glob("part-*"))
    summary = embed_corpus(Embedder(bilm), read_sentences(source), output, progress=False)
    assert (summary.joined, summary.embedded, summary.skipped) == (True, 0, 10)


JOIN_ON_A_FULL_DISK = """
import json, os, shutil, sys
from pathlib import Path
import torch
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.nn import BiLM
from spacy_elmo.corpora.keyed_sentences import read_sentences
from spacy_elmo.vector_file import parts as store
from spacy_elmo.vector_file.job import embed_corpus
from spacy_elmo.embedding.embedder import Embedder
mount = Path(sys.argv[1])
source = mount / "in.txt"
source.write_text("".join(f"line {i} has some words {i}\\n" for i in range(150)))
real_join = store.PartStore.join

def join_on_a_disk_filled_meanwhile(self, wanted, index):
    stat = os.statvfs(mount)
    with open(mount / "filler", "wb") as filler:  # another process fills the disk to 20 kB
        filler.write(b"x" * (stat.f_bavail * stat.f_frsize - 20_000))
    store.shutil.disk_usage = lambda path: shutil._ntuple_diskusage(10**12, 0, 10**12)  # ... after the check
    return real_join(self, wanted, index)

store.PartStore.join = join_on_a_disk_filled_meanwhile
torch.manual_seed(0)
try:
    embed_corpus(Embedder(BiLM(TINY_CONFIG).eval()), read_sentences(source), mount / "out.hdf5", progress=False)
    print("JOINED")
except store.EmbedError as err:
    print("ERROR", err)
print(json.dumps(sorted(p.name for p in mount.iterdir())))
"""


def test_a_disk_that_fills_during_the_join(tmp_path):
    """A real full disk (3 MB tmpfs): the space of the joined file is reserved before HDF5
    writes into it, so the join stops with one line and removes its temporary file."""
    from ..conftest import run_on_small_tmpfs

    result = run_on_small_tmpfs(tmp_path, "3m", JOIN_ON_A_FULL_DISK)
    assert result.returncode == 0, result.stdout + result.stderr
    first, listing = result.stdout.strip().splitlines()
    assert (
        first.startswith("ERROR joining the parts into") and "free some space and run the same command again" in first
    )
    assert json.loads(listing) == ["filler", "in.txt", "out.hdf5.parts"]
