"""``spacy-elmo embed``: allennlp-compatible layout, every input format and layer mode, and a
run killed with SIGKILL at random points that, resumed, ends equal to an uninterrupted run."""

import json
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy
import pytest
import torch
from typer.testing import CliRunner

from spacy_elmo import embed_layers
from spacy_elmo.cli import app
from spacy_elmo.corpora.keyed_sentences import read_sentences
from spacy_elmo.embedding.embedder import Embedder
from spacy_elmo.nn import TINY_CONFIG, BiLM
from spacy_elmo.vector_file.job import embed_corpus
from spacy_elmo.vector_file.parts import SENTENCE_INDEX, parts_dir, read_sentence_index

REPO_ROOT = Path(__file__).resolve().parents[2]
LINES = [
    "The bank raised interest rates .",
    "",
    "They sat by the river bank .",
    "日本 🙂 é x",
    "   ",
    "a",
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory) -> Path:
    torch.manual_seed(0)
    model = BiLM(TINY_CONFIG)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)
    path = tmp_path_factory.mktemp("model") / "bilm"
    model.to_disk(path)
    return path


@pytest.fixture(scope="module")
def bilm(model_dir) -> BiLM:
    return BiLM.from_disk(model_dir)


def run_cli(*args: str) -> None:
    result = CliRunner().invoke(app, ["embed", *args, "--no-progress"])
    assert result.exit_code == 0, result.output


def read_file(path: Path) -> dict:
    with h5py.File(path, "r") as handle:
        data = {key: handle[key][...] for key in handle.keys() if key != SENTENCE_INDEX}
    return {"datasets": data, "index": read_sentence_index(path)}


def test_text_input_writes_allennlp_layout(tmp_path, model_dir, bilm):
    source = tmp_path / "input.txt"
    source.write_text("\n".join(LINES) + "\n", encoding="utf8")
    output = tmp_path / "out.hdf5"
    run_cli(str(source), str(output), "--weights", str(model_dir))
    written = read_file(output)
    keep = {str(n): line.strip() for n, line in enumerate(LINES) if line.strip()}
    assert set(written["datasets"]) == set(keep)  # keyed by line number; blank lines skipped
    assert written["index"] == {text: key for key, text in keep.items()}
    expected = embed_layers(bilm, [keep[k].split() for k in keep])
    for key, want in zip(keep, expected):
        assert written["datasets"][key].dtype == numpy.float32
        numpy.testing.assert_array_equal(written["datasets"][key], want)


@pytest.mark.parametrize("mode", ["top", "average", "mix"])
def test_layer_modes(tmp_path, model_dir, bilm, mode):
    source = tmp_path / "input.txt"
    source.write_text("the bank\nrates rose again today\n", encoding="utf8")
    output = tmp_path / f"{mode}.hdf5"
    extra = ["--mix-weights", "0.2,0.3,0.5", "--gamma", "2.0"] if mode == "mix" else []
    run_cli(str(source), str(output), "--weights", str(model_dir), "--layers", mode, *extra)
    written = read_file(output)["datasets"]
    for key, tokens in (("0", ["the", "bank"]), ("1", "rates rose again today".split())):
        layers = embed_layers(bilm, [tokens])[0]
        want = {
            "top": layers[-1],
            "average": layers.mean(axis=0),
            "mix": 2.0 * numpy.tensordot(numpy.array([0.2, 0.3, 0.5], dtype=numpy.float32), layers, axes=(0, 0)),
        }[mode]
        assert written[key].shape == (len(tokens), 2 * TINY_CONFIG.projection_dim)
        numpy.testing.assert_allclose(written[key], want, atol=1e-6, rtol=0)


def test_mix_without_weights_is_an_error(tmp_path, model_dir):
    source = tmp_path / "input.txt"
    source.write_text("a b\n", encoding="utf8")
    result = CliRunner().invoke(
        app, ["embed", str(source), str(tmp_path / "o.hdf5"), "--weights", str(model_dir), "--layers", "mix"]
    )
    assert result.exit_code != 0 and "mix weights" in result.output


def test_jsonl_input_uses_text_or_tokens(tmp_path, model_dir, bilm):
    source = tmp_path / "input.jsonl"
    records = [{"text": "the bank rose"}, {"text": "New York", "tokens": ["New York"]}, {"text": "   "}]
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf8")
    output = tmp_path / "out.hdf5"
    run_cli(str(source), str(output), "--weights", str(model_dir))
    written = read_file(output)
    assert set(written["datasets"]) == {"0", "1"}
    alone = embed_layers(bilm, [["New York"]])[0]  # embedded in another batch: equal up to rounding
    numpy.testing.assert_allclose(written["datasets"]["1"], alone, atol=1e-5, rtol=0)
    assert written["index"] == {"the bank rose": "0", "New York": "1"}


def test_docbin_input_is_split_into_sentences(tmp_path, model_dir, bilm):
    from spacy.tokens import Doc, DocBin
    from spacy.vocab import Vocab

    vocab = Vocab()
    with_sentences = Doc(
        vocab, words=["One", "two", ".", "Three", "\n", "four", "."], sent_starts=[1, 0, 0, 1, 0, 0, 0]
    )
    without = Doc(vocab, words=["just", "one", "doc"])
    source = tmp_path / "input.spacy"
    DocBin(docs=[with_sentences, without]).to_disk(source)
    sentences = list(read_sentences(source))
    assert [(s.key, s.tokens) for s in sentences] == [
        ("0", ["One", "two", "."]),
        ("1", ["Three", "four", "."]),
        ("2", ["just", "one", "doc"]),
    ]
    output = tmp_path / "out.hdf5"
    run_cli(str(source), str(output), "--weights", str(model_dir))
    alone = embed_layers(bilm, [["Three", "four", "."]])[0]
    numpy.testing.assert_allclose(read_file(output)["datasets"]["1"], alone, atol=1e-5, rtol=0)


def test_resume_skips_keys_present_and_refuses_other_options(tmp_path, bilm):
    source = tmp_path / "input.txt"
    source.write_text("".join(f"sentence number {i} is here\n" for i in range(30)), encoding="utf8")
    output = tmp_path / "out.hdf5"
    first = embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=20, progress=False)
    assert (first.embedded, first.skipped) == (30, 0)
    again = embed_corpus(Embedder(bilm), read_sentences(source), output, chunk_tokens=20, progress=False)
    assert (again.embedded, again.skipped) == (0, 30)
    with pytest.raises(ValueError, match="written with other layers"):
        embed_corpus(Embedder(bilm), read_sentences(source), output, layers="top", progress=False)


def test_a_part_interrupted_by_a_crash_is_redone(tmp_path, bilm, monkeypatch):
    """A crash while a batch is written leaves a ``.tmp`` part at most: the rerun deletes it and
    computes that batch again; every part renamed into place before is kept."""
    source = tmp_path / "input.txt"
    source.write_text("".join(f"line {i} of the text\n" for i in range(12)), encoding="utf8")
    complete = tmp_path / "complete.hdf5"
    embed_corpus(Embedder(bilm), read_sentences(source), complete, chunk_tokens=10, progress=False)
    crashed = tmp_path / "crashed.hdf5"
    import spacy_elmo.vector_file.parts as module

    real_write = module.write_atomically
    calls = []

    def crash_on_third(path, data):
        calls.append(path)
        if len(calls) == 3:
            leftover = path.with_name(f"{path.name}.{secrets.token_hex(8)}.tmp")  # a temporary name of durable's
            leftover.write_bytes(data[: len(data) // 2])  # half written, then the crash
            raise KeyboardInterrupt
        real_write(path, data)

    monkeypatch.setattr(module, "write_atomically", crash_on_third)
    with pytest.raises(KeyboardInterrupt):
        embed_corpus(Embedder(bilm), read_sentences(source), crashed, chunk_tokens=10, progress=False)
    monkeypatch.setattr(module, "write_atomically", real_write)
    assert not crashed.exists() and len(list(parts_dir(crashed).glob("part-*.hdf5"))) == 1
    assert len(list(parts_dir(crashed).glob("*.tmp"))) == 1
    summary = embed_corpus(Embedder(bilm), read_sentences(source), crashed, chunk_tokens=10, progress=False)
    assert summary.skipped > 0 and summary.embedded < 12
    assert not parts_dir(crashed).exists()
    assert_same_file(read_file(crashed), read_file(complete))


def assert_same_file(actual: dict, expected: dict) -> None:
    assert actual["index"] == expected["index"]
    assert set(actual["datasets"]) == set(expected["datasets"])
    for key, want in expected["datasets"].items():
        numpy.testing.assert_array_equal(actual["datasets"][key], want)


def count_stored(output: Path) -> int:
    """Finished batches of a run in progress (parts renamed into place)."""
    return len(list(parts_dir(output).glob("part-*.hdf5"))) if parts_dir(output).exists() else 0


def embed_in_child(bilm, source: Path, output: Path) -> None:
    embed_corpus(Embedder(bilm, batch_tokens=256), read_sentences(source), output, chunk_tokens=100, progress=False)


def test_embed_resumes_after_sigkill_and_equals_an_uninterrupted_run(tmp_path, bilm):
    """kill -9 at three random points of one run (forked children, so no start-up cost), each
    time resumed: nothing finished is lost, and the result equals an uninterrupted run's."""
    import multiprocessing

    source = tmp_path / "input.txt"
    lines = (REPO_ROOT / "benchmarks" / "data" / "english_sample.txt").read_text(encoding="utf8").splitlines()
    source.write_text("\n".join(lines) + "\n", encoding="utf8")
    reference = tmp_path / "reference.hdf5"  # uninterrupted, in this process (same options, 1 thread)
    total = embed_corpus(
        Embedder(bilm, batch_tokens=256), read_sentences(source), reference, chunk_tokens=100, progress=False
    ).embedded

    output = tmp_path / "resumed.hdf5"
    rng = random.Random(13)
    fork = multiprocessing.get_context("fork")
    previous = 0
    for _ in range(3):
        target = previous + rng.randint(1, 8)
        child = fork.Process(target=embed_in_child, args=(bilm, source, output))
        child.start()
        deadline = time.time() + 120
        while time.time() < deadline and child.is_alive() and count_stored(output) < target:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.0, 0.05))  # mid-batch, mid-write or between the two
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL, "the run finished before it could be killed"
        assert not output.exists()
        written = count_stored(output)
        assert previous <= written  # nothing finished before is ever lost
        previous = written
    assert previous > 0
    summary = embed_corpus(
        Embedder(bilm, batch_tokens=256), read_sentences(source), output, chunk_tokens=100, progress=False
    )
    assert summary.skipped > 0 and summary.embedded + summary.skipped == total
    assert not parts_dir(output).exists()
    assert_same_file(read_file(output), read_file(reference))


def test_the_cli_resumes_a_killed_run(tmp_path, model_dir, bilm):
    """The command itself, killed once after its first finished batch, then run again."""
    source = tmp_path / "input.txt"
    source.write_text("".join(f"line {i} says {i % 5} things\n" for i in range(200)), encoding="utf8")
    output = tmp_path / "out.hdf5"
    command = [
        sys.executable,
        "-m",
        "spacy_elmo",
        "embed",
        str(source),
        str(output),
        "--weights",
        str(model_dir),
        "--chunk-tokens",
        "50",
        "--batch-tokens",
        "64",
        "--no-progress",
        "--threads",
        "1",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while time.time() < deadline and process.poll() is None and count_stored(output) < 1:
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    result = subprocess.run(command, check=True, capture_output=True, text=True)
    assert "already present" in result.stderr and not parts_dir(output).exists()
    stored = read_file(output)
    assert len(stored["datasets"]) == 200
    want = embed_layers(bilm, [["line", "7", "says", "2", "things"]])[0]
    numpy.testing.assert_allclose(stored["datasets"]["7"], want, atol=1e-5, rtol=0)


# ------------------------------------------------------------------ special inputs and outputs
def embed_result(*args: str):
    return CliRunner().invoke(app, ["embed", *args, "--no-progress"])


def test_an_output_that_is_a_directory_is_one_line_naming_it(tmp_path, model_dir):
    source, folder = tmp_path / "in.txt", tmp_path / "vectors"
    source.write_text("a line\n", encoding="utf8")
    folder.mkdir()
    result = embed_result(str(source), str(folder), "--weights", str(model_dir))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"Error: the output {folder} is a directory, not an HDF5 file: give the path of a file to write "
        f"(e.g. {folder / 'vectors.hdf5'})"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "vectors"]  # no lock, no parts


def test_an_output_that_is_a_fifo_is_refused_before_anything_is_opened(tmp_path, model_dir):
    source, fifo = tmp_path / "in.txt", tmp_path / "out.hdf5"
    source.write_text("a line\n", encoding="utf8")
    os.mkfifo(fifo)
    result = embed_result(str(source), str(fifo), "--weights", str(model_dir))
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: the output {fifo} is a FIFO (named pipe), not an HDF5 file: give the path of a file to write"
    ]


@pytest.mark.parametrize("kind", ["/dev/null", "fifo"])
def test_an_input_that_is_not_a_regular_file_says_what_it_is(tmp_path, model_dir, kind):
    source = Path("/dev/null") if kind == "/dev/null" else tmp_path / "in.txt"
    if kind == "fifo":
        os.mkfifo(source)  # opened without blocking: no writer needed for the error
    result = embed_result(str(source), str(tmp_path / "out.hdf5"), "--weights", str(model_dir))
    what = "a character device" if kind == "/dev/null" else "a FIFO (named pipe)"
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"Error: {source}: the input file must be a regular file, but it is {what}"
    ]
    assert not (tmp_path / "out.hdf5.parts").exists()


def test_a_directory_as_input_is_named_as_one(tmp_path, model_dir):
    folder = tmp_path / "texts"
    folder.mkdir()
    result = embed_result(str(folder), str(tmp_path / "out.hdf5"), "--weights", str(model_dir))
    assert result.exit_code == 2 and f"'{folder}' is a directory" in result.output  # the argument's own check
    with pytest.raises(ValueError, match=f"^{folder}: the input file must be a regular file, but it is a directory$"):
        read_sentences(folder)


def test_an_unreadable_input_is_one_line_naming_it(tmp_path, monkeypatch):
    import errno

    from spacy_elmo.formats import regular_files

    source = tmp_path / "in.txt"
    source.write_text("a line\n", encoding="utf8")
    real_open = os.open

    def no_permission(path, flags, *args):
        if Path(path) == source:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(regular_files.os, "open", no_permission)  # root reads any file: a chmod would not do
    with pytest.raises(ValueError, match=f"^{source}: the input file cannot be opened \\(Permission denied\\)$"):
        read_sentences(source)


@pytest.fixture
def capable_cpu(monkeypatch):
    """The reduced paths run on any machine (oneDNN emulates what the CPU lacks)."""
    from spacy_elmo.nn import precision

    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx512_bf16", "avx512_vnni"}))


def test_precision_is_applied_recorded_and_a_resume_must_match_it(tmp_path, model_dir, bilm, capable_cpu):
    source = tmp_path / "input.txt"
    source.write_text("The bank raised rates .\nThey sat by the river bank .\n", encoding="utf8")
    output = tmp_path / "int8.hdf5"
    run_cli(str(source), str(output), "--weights", str(model_dir), "--precision", "int8")
    written = read_file(output)["datasets"]
    expected = embed_layers(bilm, [line.split() for line in source.read_text().splitlines()], precision="int8")
    float32 = embed_layers(bilm, [line.split() for line in source.read_text().splitlines()])
    for key, want, plain in zip(("0", "1"), expected, float32):
        numpy.testing.assert_array_equal(written[key], want)
        assert not numpy.array_equal(written[key], plain)
    with h5py.File(output, "r") as handle:
        assert "int8" in json.dumps({key: str(value) for key, value in handle.attrs.items()})
    for other in ("float32", "bfloat16"):
        result = CliRunner().invoke(
            app, ["embed", str(source), str(output), "--weights", str(model_dir), "--precision", other, "--no-progress"]
        )
        assert result.exit_code == 1
        assert f"precision ('int8', now '{other}')" in result.output
    plain = tmp_path / "float32.hdf5"
    run_cli(str(source), str(plain), "--weights", str(model_dir))
    result = CliRunner().invoke(
        app, ["embed", str(source), str(plain), "--weights", str(model_dir), "--precision", "int8", "--no-progress"]
    )
    assert result.exit_code == 1 and "precision ('float32', now 'int8')" in result.output


def test_a_bad_precision_is_one_line_before_any_work(tmp_path, model_dir):
    source = tmp_path / "input.txt"
    source.write_text("a b\n", encoding="utf8")
    result = CliRunner().invoke(
        app, ["embed", str(source), str(tmp_path / "out.hdf5"), "--weights", str(model_dir), "--precision", "fp16"]
    )
    assert result.exit_code == 1
    assert "--precision must be one of 'float32', 'bfloat16', 'int8', 'float16', not 'fp16'" in result.output
    assert not (tmp_path / "out.hdf5").exists()
