"""Weight files from elsewhere, second round: counts that mean huge work, values beyond float32,
settings of the wrong type or missing, deeply nested JSON, duplicate words and single-bit damage.
Each is one ``ValueError`` naming the file (and the key), raised before anything large is
built; our own format refuses any change to its files through the checksums in config.json."""

import json
import random
from pathlib import Path

import h5py
import numpy
import pytest
import torch

from spacy_elmo.formats import allennlp as allennlp_format
from spacy_elmo.formats.native import REQUIRED_SETTINGS
from spacy_elmo.nn import TINY_CONFIG, BiLM

from ..conftest import full_disk_for, random_tiny_bilm, without_checksums


@pytest.fixture
def allennlp_files(tmp_path):
    options, weights = tmp_path / "options.json", tmp_path / "weights.hdf5"
    random_tiny_bilm(0).to_allennlp(options, weights)
    return options, weights


@pytest.fixture
def native_dir(tmp_path):
    path = tmp_path / "model"
    BiLM(TINY_CONFIG, vocab=["<S>", "</S>", "<UNK>", "a", "b"]).to_disk(path)
    return path


def edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text(encoding="utf8"))
    edit(data)
    path.write_text(json.dumps(data), encoding="utf8")


def nothing_built(*args, **kwargs):
    raise AssertionError("the weights' names and shapes were built before the counts were checked")


# ------------------------------------------------------------------ huge counts
@pytest.mark.parametrize("section, key", [("lstm", "n_layers"), ("char_cnn", "n_highway")])
def test_a_huge_count_in_options_is_refused_before_anything_is_built(allennlp_files, monkeypatch, section, key):
    options, weights = allennlp_files
    edit_json(options, lambda data: data[section].update({key: 10**7}))
    monkeypatch.setattr(allennlp_format, "dataset_shapes", nothing_built)
    with pytest.raises(ValueError, match=f"options.json: Invalid biLM config: {key} is 10000000, more than 64"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize("key", ["n_layers", "n_highway"])
def test_a_huge_count_in_config_json_is_refused_before_anything_is_built(native_dir, monkeypatch, key):
    edit_json(without_checksums(native_dir) / "config.json", lambda data: data["config"].update({key: 10**7}))
    monkeypatch.setattr(BiLM, "state_shapes", nothing_built)
    with pytest.raises(ValueError, match=f"config.json: invalid model config: .*{key} is 10000000"):
        BiLM.from_disk(native_dir)


# ------------------------------------------------------------------ non-finite values
def test_a_float64_weight_beyond_float32_is_refused(allennlp_files):
    options, weights = allennlp_files
    with h5py.File(weights, "a") as handle:
        big = handle["CNN_proj/W_proj"][...].astype(numpy.float64)
        big[0, 1] = 1e300  # finite in float64, inf in the model's float32
        del handle["CNN_proj/W_proj"]
        handle.create_dataset("CNN_proj/W_proj", data=big)
    with pytest.raises(
        ValueError,
        match=r"weights.hdf5: dataset 'CNN_proj/W_proj' has 1 value.* in float32 "
        r"\(stored as float64: 1e\+300\) \(the first at index \(0, 1\)\)",
    ):
        BiLM.from_allennlp(options, weights)


def test_a_float64_model_beyond_float32_is_refused_with_valid_checksums(tmp_path):
    model = random_tiny_bilm(0).double()
    with torch.no_grad():
        model.forward_lstm.layers[0].bias[3] = 1e300
    model.to_disk(tmp_path / "model")  # written as float64, checksums and all
    with pytest.raises(ValueError, match=r"weights.hdf5: dataset 'forward_lstm.layers.0.bias' has 1 value.*float32"):
        BiLM.from_disk(tmp_path / "model")


@pytest.mark.parametrize("key", ["cell_clip", "proj_clip"])
def test_a_nan_clip_in_options_is_refused(allennlp_files, key):
    options, weights = allennlp_files
    edit_json(options, lambda data: data["lstm"].update({key: float("nan")}))
    with pytest.raises(ValueError, match=f"options.json: .*{key} must be a finite number"):
        BiLM.from_allennlp(options, weights)


@pytest.mark.parametrize("key", ["cell_clip", "forget_bias"])
def test_a_nan_setting_in_config_json_is_refused(native_dir, key):
    edit_json(without_checksums(native_dir) / "config.json", lambda data: data["config"].update({key: float("nan")}))
    with pytest.raises(ValueError, match=f"config.json: invalid model config: .*{key} must be"):
        BiLM.from_disk(native_dir)


# ------------------------------------------------------------------ malformed configs
def test_a_float_size_in_config_json_names_the_file_and_key(native_dir):
    edit_json(without_checksums(native_dir) / "config.json", lambda data: data["config"].update(lstm_dim=32.0))
    with pytest.raises(ValueError, match=r"config.json: invalid model config: .*lstm_dim must be an integer, not 32.0"):
        BiLM.from_disk(native_dir)


@pytest.mark.parametrize("key", REQUIRED_SETTINGS)
def test_a_missing_setting_in_config_json_is_named(native_dir, key):
    edit_json(without_checksums(native_dir) / "config.json", lambda data: data["config"].pop(key))
    with pytest.raises(ValueError, match=f"config.json: invalid model config: missing setting\\(s\\) {key}"):
        BiLM.from_disk(native_dir)


DEEP = b"[" * 200_000 + b"]" * 200_000


@pytest.mark.parametrize("name", ["config.json", "vocab.json"])
def test_deeply_nested_json_in_a_model_dir_names_the_file(native_dir, name):
    without_checksums(native_dir)
    (native_dir / name).write_bytes(DEEP)
    with pytest.raises(ValueError, match=f"{name}: the .* nested more than 16 deep"):
        BiLM.from_disk(native_dir)


def test_deeply_nested_options_json_names_the_file(allennlp_files):
    options, weights = allennlp_files
    options.write_bytes(DEEP)
    with pytest.raises(ValueError, match="options.json: the options file is nested more than 16 deep"):
        BiLM.from_allennlp(options, weights)


def test_a_vocabulary_listing_a_word_twice_is_refused(native_dir):
    (without_checksums(native_dir) / "vocab.json").write_text(json.dumps(["<S>", "</S>", "a", "b", "a"]))
    with pytest.raises(ValueError, match=r"vocab.json: the vocabulary lists 'a' twice \(entries 3 and 5\)"):
        BiLM.from_disk(native_dir)


# ------------------------------------------------------------------ damaged files
def flipped(data: bytes, bit: int) -> bytes:
    damaged = bytearray(data)
    damaged[bit // 8] ^= 1 << (bit % 8)
    return bytes(damaged)


def flip_positions(size: int, n: int, seed: int) -> list[int]:
    """Bits to flip: half in the first 4 kB (HDF5's superblock and object headers), half anywhere."""
    rng = random.Random(seed)
    return [rng.randrange(min(size, 4096) * 8) for _ in range(n // 2)] + [
        rng.randrange(size * 8) for _ in range(n - n // 2)
    ]


def test_every_single_bit_flip_in_native_weights_is_refused(native_dir, tmp_path):
    weights = native_dir / "weights.hdf5"
    original = weights.read_bytes()
    for bit in flip_positions(len(original), 40, seed=1):
        weights.write_bytes(flipped(original, bit))
        with pytest.raises(ValueError, match=r"model/weights.hdf5 does not match the SHA-256 recorded in config.json"):
            BiLM.from_disk(native_dir)


def test_a_changed_setting_or_word_in_a_native_model_is_refused(native_dir):
    config = native_dir / "config.json"
    original = config.read_text()
    assert '"cell_clip": 3.0' in original
    config.write_text(original.replace('"cell_clip": 3.0', '"cell_clip": 7.0'))  # one flipped bit: 0x33 -> 0x37
    with pytest.raises(ValueError, match="config.json: its settings do not match their recorded checksum"):
        BiLM.from_disk(native_dir)
    config.write_text(original)
    (native_dir / "vocab.json").write_text(json.dumps(["<S>", "</S>", "<UNK>", "a", "c"]))
    with pytest.raises(ValueError, match="vocab.json does not match the SHA-256"):
        BiLM.from_disk(native_dir)


def test_a_single_bit_flip_in_allennlp_weights_loads_or_names_the_file(allennlp_files):
    """bilm-tf's format has no checksum: a flip in the data can only be caught when it makes a
    value non-finite, but a damaged structure is always one ValueError naming the file."""
    options, weights = allennlp_files
    original = weights.read_bytes()
    outcomes = {"loaded": 0, "refused": 0}
    for bit in flip_positions(len(original), 60, seed=2):
        weights.write_bytes(flipped(original, bit))
        try:
            BiLM.from_allennlp(options, weights)
            outcomes["loaded"] += 1
        except ValueError as err:
            assert str(weights) in str(err) and "\n" not in str(err), str(err)
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0, outcomes


# ------------------------------------------------------------------ items 2 and 3: writes
def test_an_export_that_fails_keeps_the_previous_export(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from spacy_elmo.cli import app

    model_dir, out = tmp_path / "model", tmp_path / "export"
    random_tiny_bilm(1).to_disk(model_dir)
    random_tiny_bilm(0).to_allennlp(out / "options.json", out / "weights.hdf5")
    before = {name: (out / name).read_bytes() for name in ("options.json", "weights.hdf5")}
    with full_disk_for(monkeypatch, "weights.hdf5.tmp"):
        result = CliRunner().invoke(app, ["export-allennlp", str(model_dir), str(out)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().splitlines() == [
        f"Error: [Errno 28] No space left on device: '{out / 'weights.hdf5'}'"
    ]
    assert {name: (out / name).read_bytes() for name in before} == before
    assert sorted(p.name for p in out.iterdir()) == ["options.json", "weights.hdf5"]


FULL_DISK_WRITES = """
import os, sys, torch
from pathlib import Path
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.nn import BiLM
mount = Path(sys.argv[1])
torch.manual_seed(0)
small, big = BiLM(TINY_CONFIG), BiLM(TINY_CONFIG.replace(lstm_dim=256, projection_dim=64))
small.to_allennlp(mount / "export" / "options.json", mount / "export" / "weights.hdf5")
small.to_disk(mount / "model-best")
before = {p: p.read_bytes() for p in sorted(mount.rglob("*")) if p.is_file()}
stat = os.statvfs(mount)
with open(mount / "filler", "wb") as filler:  # leave 100 kB: too little for the big model
    filler.write(b"x" * (stat.f_bavail * stat.f_frsize - 100_000))
for write in (lambda: big.to_allennlp(mount / "export" / "options.json", mount / "export" / "weights.hdf5"),
              lambda: big.to_disk(mount / "model-best")):
    try:
        write()
        print("WROTE")
    except OSError as err:
        print("ERROR", err)
after = {p: p.read_bytes() for p in sorted(mount.rglob("*")) if p.is_file() and p.name != "filler"}
print("UNCHANGED" if after == before else "CHANGED", sorted(p.name for p in after))
"""


def test_writers_on_a_real_full_disk_keep_the_previous_files(tmp_path):
    """A 2 MB tmpfs with 100 kB left (HDF5 writing there can crash the process)."""
    from ..conftest import run_on_small_tmpfs

    result = run_on_small_tmpfs(tmp_path, "2m", FULL_DISK_WRITES)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 3, result.stdout + result.stderr
    assert lines[0].startswith("ERROR [Errno 28] No space left on device") and "export/weights.hdf5'" in lines[0]
    assert lines[1].startswith("ERROR [Errno 28] No space left on device") and "model-best/weights.hdf5'" in lines[1]
    assert lines[2] == "UNCHANGED ['config.json', 'options.json', 'weights.hdf5', 'weights.hdf5']"


def test_in_memory_hdf5_files_can_be_built_side_by_side():
    """Two threads saving models at once: HDF5 refuses two open files of one name, even in memory."""
    from spacy_elmo.formats.hdf5_arrays import hdf5_image, open_hdf5

    inner = []

    def fill(handle):
        handle.create_dataset("outer", data=numpy.ones(2))
        inner.append(hdf5_image(lambda other: other.create_dataset("inner", data=numpy.zeros(3))))

    outer = hdf5_image(fill)
    with open_hdf5(outer, "outer") as first, open_hdf5(inner[0], "inner") as second:
        assert list(first) == ["outer"] and list(second) == ["inner"]
