"""``spacy-elmo embed``: allennlp-compatible layout, every input format and layer mode, and a
run killed with SIGKILL that, resumed, ends equal to an uninterrupted run."""
import json
import os
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

from spacy_elmo.cli import app
from spacy_elmo.embed_corpus import SENTENCE_INDEX, embed_corpus, journal_path, read_sentence_index
from spacy_elmo.nn import TINY_CONFIG, BiLM
from spacy_elmo.sentence_sources import read_sentences

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
    expected = bilm.embed_layers([keep[k].split() for k in keep])
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
        layers = bilm.embed_layers([tokens])[0]
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
    result = CliRunner().invoke(app, ["embed", str(source), str(tmp_path / "o.hdf5"), "--weights", str(model_dir), "--layers", "mix"])
    assert result.exit_code != 0 and "mix weights" in result.output


def test_jsonl_input_uses_text_or_tokens(tmp_path, model_dir, bilm):
    source = tmp_path / "input.jsonl"
    records = [{"text": "the bank rose"}, {"text": "New York", "tokens": ["New York"]}, {"text": "   "}]
    source.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf8")
    output = tmp_path / "out.hdf5"
    run_cli(str(source), str(output), "--weights", str(model_dir))
    written = read_file(output)
    assert set(written["datasets"]) == {"0", "1"}
    alone = bilm.embed_layers([["New York"]])[0]  # embedded in another batch: equal up to rounding
    numpy.testing.assert_allclose(written["datasets"]["1"], alone, atol=1e-5, rtol=0)
    assert written["index"] == {"the bank rose": "0", "New York": "1"}


def test_docbin_input_is_split_into_sentences(tmp_path, model_dir, bilm):
    from spacy.tokens import Doc, DocBin
    from spacy.vocab import Vocab

    vocab = Vocab()
    with_sentences = Doc(vocab, words=["One", "two", ".", "Three", "\n", "four", "."], sent_starts=[1, 0, 0, 1, 0, 0, 0])
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
    alone = bilm.embed_layers([["Three", "four", "."]])[0]
    numpy.testing.assert_allclose(read_file(output)["datasets"]["1"], alone, atol=1e-5, rtol=0)


def test_resume_skips_keys_present_and_refuses_other_options(tmp_path, bilm):
    source = tmp_path / "input.txt"
    source.write_text("".join(f"sentence number {i} is here\n" for i in range(30)), encoding="utf8")
    output = tmp_path / "out.hdf5"
    first = embed_corpus(bilm, read_sentences(source), output, chunk_tokens=20, progress=False)
    assert (first.embedded, first.skipped) == (30, 0)
    again = embed_corpus(bilm, read_sentences(source), output, chunk_tokens=20, progress=False)
    assert (again.embedded, again.skipped) == (0, 30)
    with pytest.raises(ValueError, match="other options"):
        embed_corpus(bilm, read_sentences(source), output, layers="top", progress=False)


def test_a_write_interrupted_by_a_crash_is_redone(tmp_path, bilm):
    source = tmp_path / "input.txt"
    source.write_text("".join(f"line {i} of the text\n" for i in range(12)), encoding="utf8")
    complete = tmp_path / "complete.hdf5"
    embed_corpus(bilm, read_sentences(source), complete, chunk_tokens=10, progress=False)
    crashed = tmp_path / "crashed.hdf5"
    embed_corpus(bilm, read_sentences(source), crashed, chunk_tokens=10, progress=False)
    # Simulate a crash while writing keys 4 and 5: garbage in one, the other never written.
    with h5py.File(crashed, "a") as handle:
        handle["4"][...] = 0.0
        del handle["5"]
    journal_path(crashed).write_text(json.dumps(["4", "5"]), encoding="utf8")
    embed_corpus(bilm, read_sentences(source), crashed, chunk_tokens=10, progress=False)
    assert not journal_path(crashed).exists()
    assert_same_file(read_file(crashed), read_file(complete))


def assert_same_file(actual: dict, expected: dict) -> None:
    assert actual["index"] == expected["index"]
    assert set(actual["datasets"]) == set(expected["datasets"])
    for key, want in expected["datasets"].items():
        numpy.testing.assert_array_equal(actual["datasets"][key], want)


def count_keys(path: Path) -> int:
    """Datasets in a file another process may be writing; -1 while it cannot be read."""
    try:
        with h5py.File(path, "r", locking=False) as handle:
            return len(handle.keys())
    except (OSError, KeyError, RuntimeError):
        return -1


def test_embed_resumes_after_sigkill_and_equals_an_uninterrupted_run(tmp_path, model_dir, bilm):
    source = tmp_path / "input.txt"
    lines = (REPO_ROOT / "benchmarks" / "data" / "english_sample.txt").read_text(encoding="utf8").splitlines()
    source.write_text("\n".join(lines * 2) + "\n", encoding="utf8")
    reference = tmp_path / "reference.hdf5"  # uninterrupted, in this process (same options, 1 thread)
    total = embed_corpus(bilm, read_sentences(source), reference, chunk_tokens=100, progress=False).embedded

    output = tmp_path / "resumed.hdf5"
    command = [sys.executable, "-m", "spacy_elmo", "embed", str(source), str(output), "--weights", str(model_dir),
               "--chunk-tokens", "100", "--no-progress", "--threads", "1"]
    env = {**os.environ, "HDF5_USE_FILE_LOCKING": "FALSE"}
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline and process.poll() is None and count_keys(output) < 30:
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    written = count_keys(output)
    assert 0 < written < total  # killed mid-way, and what it left is readable
    subprocess.run(command, check=True, env=env, capture_output=True)
    assert_same_file(read_file(output), read_file(reference))
