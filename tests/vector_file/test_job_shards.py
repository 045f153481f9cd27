"""``spacy-elmo embed`` as N workers (``--shard K/N`` or torchrun): every dataset equals the
one-process run's, and the result is the same single file."""

import multiprocessing
import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy
import pytest

from spacy_elmo.corpora.keyed_sentences import read_sentences
from spacy_elmo.embedding.embedder import Embedder
from spacy_elmo.nn import BiLM
from spacy_elmo.vector_file.job import embed_corpus, parse_shard
from spacy_elmo.vector_file.parts import SENTENCE_INDEX, parts_dir, read_sentence_index

from ..conftest import random_tiny_bilm

OPTIONS = dict(chunk_tokens=60, progress=False)
BATCH_TOKENS = 64
N_LINES = 80


@pytest.fixture(scope="module")
def bilm() -> BiLM:
    return random_tiny_bilm(0, scale=0.5)


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "input.txt"
    lines = [" ".join(f"w{(i * 7 + j) % 23}" for j in range(1 + i % 13)) for i in range(N_LINES)]
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    return path


def contents(path: Path) -> tuple[dict, dict]:
    with h5py.File(path, "r") as handle:
        data = {key: handle[key][...] for key in handle if key != SENTENCE_INDEX}
    return data, read_sentence_index(path)


def run_shard(bilm, source, output, shard, results):
    summary = embed_corpus(
        Embedder(bilm, batch_tokens=BATCH_TOKENS), read_sentences(source), output, shard=shard, **OPTIONS
    )
    results[shard[0]] = (summary.joined, summary.embedded)


def test_two_shards_at_once_equal_one_process(tmp_path, bilm, source):
    single = tmp_path / "single.hdf5"
    embed_corpus(Embedder(bilm, batch_tokens=BATCH_TOKENS), read_sentences(source), single, **OPTIONS)
    output = tmp_path / "sharded.hdf5"
    fork = multiprocessing.get_context("fork")
    results = fork.Manager().dict()
    workers = [fork.Process(target=run_shard, args=(bilm, source, output, (k, 2), results)) for k in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert sorted(joined for joined, _ in results.values()) == [False, True]  # exactly one joined
    assert all(embedded > 0 for _, embedded in results.values())  # both did work
    assert sum(embedded for _, embedded in results.values()) == N_LINES
    want, got = contents(single), contents(output)
    assert got[1] == want[1] and got[0].keys() == want[0].keys()
    for key, array in want[0].items():
        numpy.testing.assert_array_equal(got[0][key], array)
    assert not parts_dir(output).exists()


def test_a_shard_that_died_is_rerun_alone(tmp_path, bilm, source):
    output = tmp_path / "out.hdf5"
    first = embed_corpus(
        Embedder(bilm, batch_tokens=BATCH_TOKENS), read_sentences(source), output, shard=(0, 3), **OPTIONS
    )
    assert not first.joined and not output.exists()
    third = embed_corpus(
        Embedder(bilm, batch_tokens=BATCH_TOKENS), read_sentences(source), output, shard=(2, 3), **OPTIONS
    )
    assert not third.joined
    second = embed_corpus(
        Embedder(bilm, batch_tokens=BATCH_TOKENS), read_sentences(source), output, shard=(1, 3), **OPTIONS
    )
    assert second.joined and len(contents(output)[0]) == N_LINES


def test_shard_from_the_option_or_torchrun():
    assert parse_shard("1/4", {}) == (1, 4)
    assert parse_shard(None, {"RANK": "2", "WORLD_SIZE": "3"}) == (2, 3)
    assert parse_shard(None, {}) == (0, 1)
    for bad in ("4/4", "-1/2", "a/b", "1"):
        with pytest.raises(ValueError, match="--shard must be K/N"):
            parse_shard(bad, {})


def test_torchrun_with_two_cpu_workers(tmp_path, bilm, source):
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    if torchrun is None:
        pytest.skip("torchrun not installed")
    model = tmp_path / "model"
    bilm.to_disk(model)
    single = tmp_path / "single.hdf5"
    embed_corpus(Embedder(bilm, max_tokens=256, batch_tokens=BATCH_TOKENS), read_sentences(source), single, **OPTIONS)
    output = tmp_path / "torchrun.hdf5"
    command = [
        torchrun,
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "spacy_elmo",
        "embed",
        str(source),
        str(output),
        "--weights",
        str(model),
        "--chunk-tokens",
        "60",
        "--batch-tokens",
        "64",
        "--no-progress",
        "--threads",
        "1",
        "--cache-words",
        "0",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Shard" in result.stderr and "Wrote" in result.stderr
    want, got = contents(single), contents(output)
    assert got[1] == want[1] and got[0].keys() == want[0].keys()
    for key, array in want[0].items():
        numpy.testing.assert_array_equal(got[0][key], array)
