"""Writing and reading weights: exact round trips, and clear errors for bad files."""

import json
import shutil

import h5py
import numpy
import pytest
import torch

from spacy_elmo import BiLM, BiLMConfig, embed_layers
from spacy_elmo.config import TINY_CONFIG

from ..conftest import without_checksums


def random_bilm(config: BiLMConfig = TINY_CONFIG, vocab=None) -> BiLM:
    torch.manual_seed(0)
    model = BiLM(config, vocab=vocab)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_()
        model.char_encoder.char_embedding.weight[0].zero_()
    return model.eval()


def assert_same_weights(a: BiLM, b: BiLM) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for name in sa:
        assert torch.equal(sa[name], sb[name]), name


def test_allennlp_round_trip_is_bit_identical(tmp_path):
    model = random_bilm()
    model.to_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5")
    loaded = BiLM.from_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5")
    assert loaded.config == model.config
    assert_same_weights(model, loaded)


def test_allennlp_round_trip_keeps_the_softmax(tmp_path):
    model = random_bilm(TINY_CONFIG.replace(vocab_size=7))
    model.to_allennlp(tmp_path / "o.json", tmp_path / "w.hdf5")
    loaded = BiLM.from_allennlp(tmp_path / "o.json", tmp_path / "w.hdf5")
    assert loaded.softmax is not None
    assert_same_weights(model, loaded)


def test_reference_file_round_trip(allennlp_fixtures, tmp_path):
    original = BiLM.from_allennlp(allennlp_fixtures / "options.json", allennlp_fixtures / "lm_weights.hdf5")
    original.to_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5")
    with (
        h5py.File(allennlp_fixtures / "lm_weights.hdf5", "r") as theirs,
        h5py.File(tmp_path / "weights.hdf5", "r") as ours,
    ):
        names = []
        theirs.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
        for name in names:
            numpy.testing.assert_array_equal(theirs[name][...], ours[name][...], err_msg=name)


def test_native_round_trip_with_vocab(tmp_path):
    vocab = ["<S>", "</S>", "<UNK>", "the", "bank", "\n odd token"]
    model = random_bilm(vocab=vocab)
    model.to_disk(tmp_path / "model")
    loaded = BiLM.from_disk(tmp_path / "model")
    assert loaded.config == model.config and loaded.vocab == vocab
    assert_same_weights(model, loaded)
    sentence = [["the", "bank", "🙂"]]
    numpy.testing.assert_array_equal(embed_layers(model, sentence)[0], embed_layers(loaded, sentence)[0])


def test_only_a_model_with_a_softmax_writes_vocab_json(tmp_path):
    """A biLM read from AllenNLP files has no output vocabulary: its directory has no vocab.json."""
    random_bilm().to_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5")
    BiLM.from_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5").to_disk(tmp_path / "native")
    assert sorted(path.name for path in (tmp_path / "native").iterdir()) == ["config.json", "weights.hdf5"]


def test_default_config_is_the_original_elmo():
    config = BiLMConfig()
    assert (config.lstm_dim, config.projection_dim, config.n_highway, config.n_filters) == (4096, 512, 2, 2048)
    assert BiLMConfig.from_options(config.to_options()) == config


@pytest.fixture
def weight_files(tmp_path):
    model = random_bilm()
    options, weights = tmp_path / "options.json", tmp_path / "weights.hdf5"
    model.to_allennlp(options, weights)
    return options, weights


def test_missing_dataset_is_named(weight_files):
    options, weights = weight_files
    with h5py.File(weights, "a") as handle:
        del handle["CNN_proj/W_proj"]
    with pytest.raises(ValueError, match=r"CNN_proj/W_proj.*missing.*\(28, 8\)"):
        BiLM.from_allennlp(options, weights)


def test_wrong_shape_names_dataset_and_both_shapes(weight_files):
    options, weights = weight_files
    with h5py.File(weights, "a") as handle:
        del handle["CNN/b_cnn_1"]
        handle.create_dataset("CNN/b_cnn_1", data=numpy.zeros(5, dtype=numpy.float32))
    with pytest.raises(ValueError, match=r"CNN/b_cnn_1.*\(5,\).*\(8,\)"):
        BiLM.from_allennlp(options, weights)


def test_options_that_do_not_match_the_weights(weight_files):
    options, weights = weight_files
    data = json.loads(options.read_text())
    data["lstm"]["dim"] = 48
    options.write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"LSTMCell/W_0.*\(16, 128\).*\(16, 192\)"):
        BiLM.from_allennlp(options, weights)


def test_not_an_hdf5_file(weight_files, tmp_path):
    options, _ = weight_files
    bogus = tmp_path / "bogus.hdf5"
    bogus.write_bytes(b"definitely not hdf5" * 10)
    with pytest.raises(ValueError, match="not an HDF5 file"):
        BiLM.from_allennlp(options, bogus)


def test_missing_files_and_bad_options(weight_files, tmp_path):
    options, weights = weight_files
    with pytest.raises(FileNotFoundError, match="nowhere.hdf5"):
        BiLM.from_allennlp(options, tmp_path / "nowhere.hdf5")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json: the options file is not valid JSON"):
        BiLM.from_allennlp(broken, weights)
    broken.write_text(json.dumps({"lstm": {}}))
    with pytest.raises(ValueError, match="required field"):
        BiLM.from_allennlp(broken, weights)


def test_native_dir_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        BiLM.from_disk(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="config.json, weights.hdf5"):
        BiLM.from_disk(tmp_path / "empty")
    model = random_bilm()
    model.to_disk(tmp_path / "model")
    shutil.copy(tmp_path / "model" / "config.json", tmp_path / "config.json")
    data = json.loads((without_checksums(tmp_path / "model") / "config.json").read_text())
    data["config"]["lstm_dim"] = 33
    (tmp_path / "model" / "config.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match=r"input_weight.*\(128, 8\).*\(132, 8\)"):
        BiLM.from_disk(tmp_path / "model")


def test_invalid_configs_are_rejected():
    with pytest.raises(ValueError, match="activation"):
        BiLMConfig(activation="gelu")
    with pytest.raises(ValueError, match="lstm_dim"):
        BiLMConfig(lstm_dim=0)
