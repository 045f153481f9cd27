"""Fixtures for the pretraining tests: a generated corpus and a short tiny-config run."""

from __future__ import annotations

from pathlib import Path

import pytest

from spacy_elmo.pretrain import load_config, pretrain, settings_from_config

from .synthetic import write_corpus

REPO_ROOT = Path(__file__).resolve().parents[2]
TINY_CONFIG = REPO_ROOT / "configs" / "bilm_tiny.cfg"


@pytest.fixture(scope="session")
def corpus_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("corpus")
    write_corpus(folder / "train.txt", 1500, seed=1)
    write_corpus(folder / "dev.txt", 150, seed=2)
    return folder


def tiny_settings(corpus: Path, **overrides):
    """The tiny config on the generated corpus, with dotted overrides (``training__max_steps``)."""
    values = {"paths.train": str(corpus / "train.txt"), "paths.dev": str(corpus / "dev.txt")}
    values.update({key.replace("__", "."): value for key, value in overrides.items()})
    config = load_config(TINY_CONFIG, values)
    return settings_from_config(config), config


@pytest.fixture(scope="session")
def trained_run(corpus_dir, tmp_path_factory) -> Path:
    """One short run shared by the tests that only read its outputs."""
    out = tmp_path_factory.mktemp("run") / "out"
    settings, config = tiny_settings(
        corpus_dir, training__max_steps=150, training__eval_every=50, training__checkpoint_every=50
    )
    pretrain(settings, out, config_text=config.to_str(), progress=False)
    return out
