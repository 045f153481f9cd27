"""``load_bilm`` finds the weights in each supported layout and explains what it cannot use."""

import pytest
import torch

from spacy_elmo.loading import load_bilm
from spacy_elmo.nn import TINY_CONFIG, BiLM


@pytest.fixture(scope="module")
def model() -> BiLM:
    torch.manual_seed(0)
    return BiLM(TINY_CONFIG).eval()


def same_weights(a: BiLM, b: BiLM) -> bool:
    state = b.state_dict()
    return all(torch.equal(t, state[name]) for name, t in a.state_dict().items())


def test_model_directory(tmp_path, model):
    model.to_disk(tmp_path / "bilm")
    assert same_weights(load_bilm(tmp_path / "bilm"), model)


def test_allennlp_directory_and_weight_file(tmp_path, model):
    model.to_allennlp(tmp_path / "options.json", tmp_path / "elmo_weights.hdf5")
    assert same_weights(load_bilm(tmp_path), model)
    assert same_weights(load_bilm(tmp_path / "elmo_weights.hdf5"), model)


def test_allennlp_download_names(tmp_path, model):
    model.to_allennlp(tmp_path / "elmo_small_options.json", tmp_path / "elmo_small_weights.hdf5")
    assert same_weights(load_bilm(tmp_path / "elmo_small_weights.hdf5"), model)


def test_reference_fixture_files(allennlp_fixtures):
    loaded = load_bilm(allennlp_fixtures / "lm_weights.hdf5")
    assert loaded.config.projection_dim == 16


def test_errors_name_the_problem(tmp_path, model):
    with pytest.raises(FileNotFoundError, match="No biLM weights"):
        load_bilm(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="options.json"):
        load_bilm(tmp_path / "empty")
    two = tmp_path / "two"
    model.to_allennlp(two / "options.json", two / "a.hdf5")
    model.to_allennlp(two / "options.json", two / "b.hdf5")
    with pytest.raises(ValueError, match="exactly one"):
        load_bilm(two)
    lonely = tmp_path / "lonely"
    model.to_allennlp(tmp_path / "elsewhere" / "options.json", lonely / "w.hdf5")
    with pytest.raises(FileNotFoundError, match="No options file"):
        load_bilm(lonely / "w.hdf5")
    text = tmp_path / "weights.txt"
    text.write_text("x")
    with pytest.raises(ValueError, match="neither"):
        load_bilm(text)


def test_a_stray_config_does_not_hide_allennlp_files(tmp_path, model):
    model.to_allennlp(tmp_path / "options.json", tmp_path / "elmo_weights.hdf5")
    (tmp_path / "config.json").write_text("{}")
    assert same_weights(load_bilm(tmp_path), model)


def test_callers_can_word_every_problem_their_own_way(tmp_path):
    from spacy_elmo.formats.resolve import MESSAGES
    from spacy_elmo.pipeline.weights import COMPONENT_MESSAGES

    assert set(COMPONENT_MESSAGES) == set(MESSAGES)
    fields = dict(path="P", parent="D", found="F", missing="M", options="O", config="C", weights="W")
    for table in (MESSAGES, COMPONENT_MESSAGES):
        for kind, template in table.values():
            assert issubclass(kind, (FileNotFoundError, ValueError))
            assert "P" in template.format(**fields)
    custom = {problem: (KeyError, "custom {path}") for problem in MESSAGES}
    with pytest.raises(KeyError, match="custom"):
        load_bilm(tmp_path / "missing", messages=custom)


def test_an_options_file_with_its_weights_beside_it(tmp_path, model):
    model.to_allennlp(tmp_path / "elmo_options.json", tmp_path / "elmo_weights.hdf5")
    assert same_weights(load_bilm(tmp_path / "elmo_options.json"), model)
    (tmp_path / "elmo_weights.hdf5").unlink()
    with pytest.raises(FileNotFoundError, match="No weights for"):
        load_bilm(tmp_path / "elmo_options.json")


def test_weights_hdf5_is_preferred_among_several(tmp_path, model):
    model.to_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5")
    torch.manual_seed(1)
    BiLM(model.config).to_allennlp(tmp_path / "other_options.json", tmp_path / "other.hdf5")
    assert same_weights(load_bilm(tmp_path), model)
    assert same_weights(load_bilm(tmp_path / "options.json"), model)


def test_a_home_relative_path(tmp_path, model, monkeypatch):
    model.to_disk(tmp_path / "bilm")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert same_weights(load_bilm("~/bilm"), model)


def test_each_caller_names_its_own_setting(tmp_path):
    from spacy_elmo.pipeline.weights import load_bilm_weights
    from spacy_elmo.pretrain.initialization import load_existing_model

    with pytest.raises(FileNotFoundError, match="^--init-from: No biLM weights at"):
        load_existing_model(tmp_path / "missing")
    with pytest.raises(FileNotFoundError, match="^elmo weights: No biLM weights at"):
        load_bilm_weights(tmp_path / "missing")
