"""The shipped training configs: valid, and each ELMo/baseline pair differs only in ELMo (and
in the baseline's block for spaCy's own pretraining, the alternative a user compares with)."""

import subprocess
import sys
from pathlib import Path

import pytest
import spacy
from spacy.util import load_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"

PAIRS = [("ner_elmo.cfg", "ner_baseline.cfg"), ("tagger_elmo.cfg", "tagger_baseline.cfg")]


def test_debug_config_passes_on_ner_elmo():
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "debug", "config", str(CONFIGS / "ner_elmo.cfg")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Config is valid" in result.stdout


@pytest.mark.parametrize("name", ["ner_baseline.cfg", "tagger_elmo.cfg", "tagger_baseline.cfg"])
def test_other_configs_are_valid(name):
    from spacy.cli.debug_config import debug_config

    debug_config(CONFIGS / name, overrides={})  # exits with an error message if invalid


def without_elmo(config: dict) -> dict:
    """The config with every ELMo-specific part taken out."""
    config = dict(config)
    config["nlp"] = {**config["nlp"], "pipeline": [p for p in config["nlp"]["pipeline"] if p != "elmo"]}
    config["components"] = {k: v for k, v in config["components"].items() if k != "elmo"}
    for component in config["components"].values():
        tok2vec = component.get("model", {}).get("tok2vec", {})
        if "elmo" in tok2vec:
            component["model"]["tok2vec"] = {**tok2vec, "elmo": None}
    init_components = config["initialize"]["components"]
    config["initialize"] = {
        **config["initialize"],
        "components": {k: v for k, v in init_components.items() if k != "elmo"},
    }
    return config


def without_spacy_pretraining(config: dict) -> dict:
    """The config without the block that only the baselines carry: spaCy's own pretraining
    (``[pretraining]``, its corpus and its text path), the alternative to ELMo."""
    config = dict(config)
    config["pretraining"] = {}
    config["corpora"] = {k: v for k, v in config["corpora"].items() if k != "pretrain"}
    config["paths"] = {k: v for k, v in config["paths"].items() if k != "raw_text"}
    return config


@pytest.mark.parametrize("elmo_name,baseline_name", PAIRS)
def test_pairs_differ_only_in_elmo(elmo_name, baseline_name):
    elmo = load_config(CONFIGS / elmo_name, interpolate=False)
    baseline = load_config(CONFIGS / baseline_name, interpolate=False)
    assert elmo["nlp"]["pipeline"][0] == "elmo"
    assert without_elmo(elmo) == without_spacy_pretraining(baseline)
    assert baseline["pretraining"]["objective"]["@architectures"] == "spacy_elmo.PretrainCharacters.v1"


def test_baseline_trains(tmp_path, train_pipeline):
    nlp = spacy.load(train_pipeline("ner_baseline.cfg", tmp_path, {}))
    assert nlp.pipe_names == ["ner"]


@pytest.mark.parametrize("name", ["ner_elmo.cfg", "ner_baseline.cfg", "tagger_elmo.cfg", "tagger_baseline.cfg"])
def test_fill_config_leaves_the_shipped_configs_unchanged(name, tmp_path):
    """``spacy init fill-config`` has nothing to add: every default is written out."""
    from spacy.cli.init_config import fill_config

    fill_config(tmp_path / name, CONFIGS / name, silent=True)
    filled = load_config(tmp_path / name, interpolate=False)
    assert filled == load_config(CONFIGS / name, interpolate=False)
