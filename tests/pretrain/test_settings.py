"""Config files: the shipped ones load, overrides apply, mistakes are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from spacy_elmo.cli.pretrain import parse_overrides
from spacy_elmo.pretrain.settings import load_config, settings_from_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


@pytest.mark.parametrize("name", ["bilm_tiny.cfg", "bilm_small.cfg", "bilm_original.cfg"])
def test_shipped_configs_load(name):
    settings = settings_from_config(load_config(CONFIGS / name))
    assert settings.training.max_steps > 0 and settings.vocab.size > 3


def test_original_config_has_the_published_sizes():
    settings = settings_from_config(load_config(CONFIGS / "bilm_original.cfg"))
    model = settings.model
    assert (model.lstm_dim, model.projection_dim, model.n_layers, model.n_highway) == (4096, 512, 2, 2)
    assert model.filters == ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))
    assert settings.softmax.n_negatives == 8192
    assert (settings.training.optimizer, settings.training.learning_rate) == ("adagrad", 0.2)


def test_command_line_overrides():
    overrides = parse_overrides(
        ["--training.max_steps", "10", "--paths.train=corpus/x.txt", "--corpus.pretokenized", "--system.device", "cuda"]
    )
    assert overrides == {
        "training.max_steps": 10,
        "paths.train": "corpus/x.txt",
        "corpus.pretokenized": True,
        "system.device": "cuda",
    }
    settings = settings_from_config(load_config(CONFIGS / "bilm_tiny.cfg", overrides))
    assert settings.training.max_steps == 10 and settings.paths.train == "corpus/x.txt" and settings.corpus.pretokenized


def test_mistakes_are_named(tmp_path):
    with pytest.raises(ValueError, match="max_stepz"):
        settings_from_config({**load_config(CONFIGS / "bilm_tiny.cfg"), "training": {"max_stepz": 3}})
    with pytest.raises(ValueError, match="training.max_steps must be int"):
        settings_from_config(load_config(CONFIGS / "bilm_tiny.cfg", {"training.max_steps": "many"}))
    with pytest.raises(ValueError, match=r"\[vocab\] size"):
        settings_from_config({**load_config(CONFIGS / "bilm_tiny.cfg"), "model": {"vocab_size": 10}})
    with pytest.raises(ValueError, match=r"^\[model\]: Invalid biLM config: lstm_dim must be an integer, not 64.0"):
        settings_from_config(load_config(CONFIGS / "bilm_tiny.cfg", {"model.lstm_dim": 64.0}))
    with pytest.raises(ValueError, match="overrides need a section"):
        parse_overrides(["--max_steps", "3"])
    with pytest.raises(FileNotFoundError):
        load_config(tmp_path / "missing.cfg")
