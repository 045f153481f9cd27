"""Weight files from elsewhere: non-finite values, datasets the options do not use, sizes that
disagree with the file, HDF5 features that read other files, and malformed JSON all fail with
an error naming the file, before any large allocation."""

import json
import os
from pathlib import Path

import h5py
import numpy
import pytest
import torch

from spacy_elmo.formats import hdf5_arrays
from spacy_elmo.nn import TINY_CONFIG, BiLM

from ..conftest import without_checksums


def tiny_bilm(**changes) -> BiLM:
    torch.manual_seed(0)
    model = BiLM(TINY_CONFIG.replace(**changes))
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.3)
    return model.eval()


@pytest.fixture
def allennlp_files(tmp_path):
    options, weights = tmp_path / "options.json", tmp_path / "weights.hdf5"
    tiny_bilm().to_allennlp(options, weights)
    return options, weights


@pytest.fixture
def native_dir(tmp_path):
    path = tmp_path / "model"
    tiny_bilm().to_disk(path)
    return path


def replace_dataset(path: Path, name: str, **create) -> None:
    with h5py.File(path, "a") as handle:
        del handle[name]
        handle.create_dataset(name, **create)


# ------------------------------------------------------------------ finite values
@pytest.mark.parametrize("bad", [numpy.nan, numpy.inf])
def test_a_non_finite_allennlp_weight_is_refused(allennlp_files, bad):
    options, weights = allennlp_files
    with h5py.File(weights, "a") as handle:
        handle["CNN_proj/W_proj"][0, 0] = bad
    with pytest.raises(
        ValueError, match=r"weights.hdf5: dataset 'CNN_proj/W_proj' has 1 value\(s\) that are NaN or infinite"
    ):
        BiLM.from_allennlp(options, weights)


def test_a_non_finite_native_weight_is_refused(native_dir):
    without_checksums(native_dir)  # the checksum would refuse any edit first (tested apart)
    with h5py.File(native_dir / "weights.hdf5", "a") as handle:
        name = next(key for key in handle if key.endswith("projection.weight"))
        handle[name][1, 2] = numpy.nan
    with pytest.raises(ValueError, match=f"dataset '{name}' has 1 value.*at index \\(1, 2\\)"):
        BiLM.from_disk(native_dir)


# ------------------------------------------------------------------ options vs file
@pytest.mark.parametrize(
    "key, value, dataset",
    [
        ("n_layers", 1, "RNN_0/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"),
        ("n_highway", 1, "CNN_high_1/W_carry"),
    ],
)
def test_options_that_use_fewer_datasets_than_the_file_has_are_refused(tmp_path, key, value, dataset):
    options, weights = tmp_path / "options.json", tmp_path / "weights.hdf5"
    tiny_bilm(n_layers=2, n_highway=2).to_allennlp(options, weights)
    data = json.loads(options.read_text())
    section = "lstm" if key == "n_layers" else "char_cnn"
    data[section][key] = value
    options.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=f"datasets .*options.json does not use: .*{dataset}"):
        BiLM.from_allennlp(options, weights)


# ------------------------------------------------------------------ sizes first
def no_reading(*args, **kwargs):
    raise AssertionError("a weight array was read before every shape was checked")


def only_on_meta(monkeypatch):
    """Make building a BiLM anywhere but on the meta device (names and shapes only) fail."""
    real_init = BiLM.__init__

    def init(self, config, *args, **kwargs):
        allocated = torch.empty(0).device.type != "meta"
        assert not allocated, "a full-size model was allocated before the shapes were checked"
        real_init(self, config, *args, **kwargs)

    monkeypatch.setattr(BiLM, "__init__", init)


def test_claimed_sizes_are_checked_before_the_model_is_allocated(allennlp_files, monkeypatch):
    options, weights = allennlp_files
    data = json.loads(options.read_text())
    data["lstm"]["dim"] = 300_000  # would allocate about 1.1 GB of LSTM weights
    options.write_text(json.dumps(data))
    only_on_meta(monkeypatch)
    monkeypatch.setattr(hdf5_arrays, "finite_float32", no_reading)
    with pytest.raises(ValueError, match=r"has shape .* but the options imply shape"):
        BiLM.from_allennlp(options, weights)


def test_native_claimed_sizes_are_checked_before_the_model_is_allocated(native_dir, monkeypatch):
    meta = json.loads((without_checksums(native_dir) / "config.json").read_text())
    meta["config"]["lstm_dim"] = 300_000
    (native_dir / "config.json").write_text(json.dumps(meta))
    only_on_meta(monkeypatch)
    monkeypatch.setattr(hdf5_arrays, "finite_float32", no_reading)
    with pytest.raises(ValueError, match="has shape"):
        BiLM.from_disk(native_dir)


# ------------------------------------------------------------------ other files
def make_external_storage(weights: Path, tmp_path: Path, name: str, shape) -> None:
    secret = tmp_path / "secret.bin"
    secret.write_bytes(numpy.arange(int(numpy.prod(shape)), dtype=numpy.float32).tobytes())
    replace_dataset(weights, name, shape=shape, dtype="float32", external=[(str(secret), 0, secret.stat().st_size)])


def make_external_link(weights: Path, tmp_path: Path, name: str, shape) -> None:
    other = tmp_path / "other.hdf5"
    with h5py.File(other, "w") as handle:
        handle.create_dataset("data", data=numpy.zeros(shape, dtype=numpy.float32))
    with h5py.File(weights, "a") as handle:
        del handle[name]
        handle[name] = h5py.ExternalLink(str(other), "/data")


def make_soft_link(weights: Path, tmp_path: Path, name: str, shape) -> None:
    with h5py.File(weights, "a") as handle:
        handle.create_dataset("copy_of", data=handle[name][...])
        del handle[name]
        handle[name] = h5py.SoftLink("/copy_of")


def make_virtual(weights: Path, tmp_path: Path, name: str, shape) -> None:
    other = tmp_path / "other.hdf5"
    with h5py.File(other, "w") as handle:
        handle.create_dataset("data", data=numpy.zeros(shape, dtype=numpy.float32))
    layout = h5py.VirtualLayout(shape=shape, dtype="float32")
    layout[...] = h5py.VirtualSource(str(other), "data", shape=shape)
    with h5py.File(weights, "a") as handle:
        del handle[name]
        handle.create_virtual_dataset(name, layout)


@pytest.mark.parametrize(
    "make, message",
    [
        (make_external_storage, "stores its data in external files"),
        (make_external_link, "is an external link"),
        (make_soft_link, "is a soft link"),
        (make_virtual, "is a virtual dataset"),
    ],
)
def test_hdf5_that_reads_other_files_is_refused_in_both_formats(allennlp_files, native_dir, tmp_path, make, message):
    options, weights = allennlp_files
    make(weights, tmp_path, "CNN_proj/b_proj", (TINY_CONFIG.projection_dim,))
    with pytest.raises(ValueError, match=f"weights.hdf5: .*{message}"):
        BiLM.from_allennlp(options, weights)
    native_weights = without_checksums(native_dir) / "weights.hdf5"
    with h5py.File(native_weights, "r") as handle:
        name = next(key for key in handle if key.endswith("projection.bias"))
    make(native_weights, tmp_path, name, (TINY_CONFIG.projection_dim,))
    with pytest.raises(ValueError, match=message):
        BiLM.from_disk(native_dir)


# ------------------------------------------------------------------ malformed JSON
@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\xff", "not UTF-8 text"),
        (b"[1, 2]", "expected a JSON object, found list"),
        (b'{"format": "spacy-elmo-bilm", "version": 1}', "'config' must be a JSON object"),
        (b'{"format": "spacy-elmo-bilm", "version": 1, "config": {"lstm_dim": "big"}}', "invalid model config"),
        (b'{"format": "spacy-elmo-bilm", "version": "1", "config": {}}', "'version' must be an integer"),
        (b'{"format": "spacy-elmo-bilm", "version": 1, "config": {"filters": [3]}}', "invalid model config"),
        (b"{not json", "not valid JSON"),
    ],
)
def test_a_malformed_config_json_names_the_file(native_dir, content, message):
    (native_dir / "config.json").write_bytes(content)
    with pytest.raises(ValueError, match=f"config.json.*{message}"):
        BiLM.from_disk(native_dir)


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is empty"),
        (b"\xff\xfe\x00", "not UTF-8 text"),
        (b'{"a": 1}', "must be a JSON list of strings"),
        (b"[1, 2, 3]", "must be a JSON list of strings"),
        (b"[]", "is an empty list"),
        (b'["a", "b"]', "has 2 words but .*config.json says vocab_size"),
    ],
)
def test_a_malformed_vocab_json_names_the_file(tmp_path, content, message):
    path = tmp_path / "model"
    BiLM(TINY_CONFIG, vocab=list("abcde")).to_disk(path)
    without_checksums(path)
    (path / "vocab.json").write_bytes(content)
    with pytest.raises(ValueError, match=f"vocab.json.*{message}"):
        BiLM.from_disk(path)


def test_a_malformed_config_through_the_component_names_the_file(native_dir):
    import spacy

    (native_dir / "config.json").write_bytes(b"[]")
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="config.json: expected a JSON object"):
        nlp.add_pipe("elmo", config={"weights": str(native_dir)})  # the sizes are read at once


# ------------------------------------------------------------------ files that are not regular files
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
@pytest.mark.parametrize("which", ["options", "weights"])
def test_allennlp_files_that_are_fifos_are_refused_by_name_without_blocking(allennlp_files, which):
    options, weights = allennlp_files
    fifo = options if which == "options" else weights
    fifo.unlink()
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=f"^{fifo}: the .* must be a regular file, but it is a FIFO"):
        BiLM.from_allennlp(options, weights)


def test_an_options_file_over_the_json_bound_is_refused(allennlp_files):
    options, weights = allennlp_files
    options.write_text(json.dumps({**json.loads(options.read_text()), "padding": "x" * (1 << 20)}))
    with pytest.raises(ValueError, match="options.json: the options file is .* bytes, more than the 1048576"):
        BiLM.from_allennlp(options, weights)
