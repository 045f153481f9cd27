"""Every accepted form of the ``weights`` path, and errors that name what is missing."""

import shutil

import numpy
import pytest
import spacy
import torch

from spacy_elmo import BiLM, embed_layers
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.pipeline.weights import load_bilm_weights

WORDS = ["The", "river", "bank", "."]


@pytest.fixture(scope="module")
def reference(tiny_weights):
    return embed_layers(BiLM.from_disk(tiny_weights), [WORDS])[0]


@pytest.fixture
def allennlp_dir(tmp_path, tiny_weights):
    path = tmp_path / "allennlp"
    BiLM.from_disk(tiny_weights).to_allennlp(path / "options.json", path / "elmo_weights.hdf5")
    return path


def embed_with(weights) -> numpy.ndarray:
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    return nlp(" ".join(WORDS))._.elmo_layers


def test_native_model_directory(tiny_weights, reference):
    numpy.testing.assert_array_equal(embed_with(tiny_weights), reference)


def test_allennlp_directory(allennlp_dir, reference):
    numpy.testing.assert_array_equal(embed_with(allennlp_dir), reference)


def test_hdf5_file_with_options_beside_it(allennlp_dir, reference):
    numpy.testing.assert_array_equal(embed_with(allennlp_dir / "elmo_weights.hdf5"), reference)


def test_hdf5_file_with_download_style_options_name(tmp_path, tiny_weights, reference):
    BiLM.from_disk(tiny_weights).to_allennlp(tmp_path / "elmo_small_options.json", tmp_path / "elmo_small_weights.hdf5")
    numpy.testing.assert_array_equal(embed_with(tmp_path / "elmo_small_weights.hdf5"), reference)


def test_output_softmax_is_dropped(tmp_path):
    torch.manual_seed(0)
    bilm = BiLM(TINY_CONFIG, vocab=["<S>", "</S>", "<UNK>", "bank"])
    bilm.to_disk(tmp_path / "pretrained")
    loaded = load_bilm_weights(tmp_path / "pretrained")
    assert loaded.softmax is None and loaded.vocab is None
    words = [["a", "bank"]]
    numpy.testing.assert_array_equal(embed_layers(loaded, words)[0], embed_layers(bilm, words)[0])


def test_missing_path_is_named(tmp_path):
    missing = tmp_path / "no_such_model"
    with pytest.raises(FileNotFoundError, match="no_such_model"):
        embed_with(missing)


def test_empty_directory_names_the_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing options.json and a weights .hdf5 file"):
        load_bilm_weights(tmp_path)


def test_directory_with_only_options(allennlp_dir):
    (allennlp_dir / "elmo_weights.hdf5").unlink()
    with pytest.raises(FileNotFoundError, match="missing a weights .hdf5 file"):
        load_bilm_weights(allennlp_dir)


def test_directory_with_only_weights(allennlp_dir):
    (allennlp_dir / "options.json").unlink()
    with pytest.raises(FileNotFoundError, match="missing options.json"):
        load_bilm_weights(allennlp_dir)


def test_hdf5_file_without_options(allennlp_dir):
    (allennlp_dir / "options.json").unlink()
    with pytest.raises(FileNotFoundError, match="missing options.json"):
        load_bilm_weights(allennlp_dir / "elmo_weights.hdf5")


def test_several_hdf5_files_are_ambiguous(allennlp_dir):
    shutil.copy(allennlp_dir / "elmo_weights.hdf5", allennlp_dir / "other.hdf5")
    with pytest.raises(ValueError, match="several .hdf5 files"):
        load_bilm_weights(allennlp_dir)


def test_model_directory_without_weights(tmp_path, tiny_weights):
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(tiny_weights / "config.json", partial / "config.json")
    with pytest.raises(FileNotFoundError, match="missing weights.hdf5"):
        load_bilm_weights(partial)


def test_wrong_file_type(tmp_path):
    text = tmp_path / "weights.txt"
    text.write_text("not weights")
    with pytest.raises(ValueError, match="not an .hdf5 weights file"):
        load_bilm_weights(text)
