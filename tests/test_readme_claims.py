"""Statements in the README that were not true, checked against the code and configs."""
import re
from pathlib import Path

import pytest
import torch
from thinc.api import Config

from spacy_elmo import BiLM
from spacy_elmo.config import TINY_CONFIG

REPO_ROOT = Path(__file__).resolve().parents[1]
README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def shipped_listener(config: str = "ner_elmo.cfg") -> dict:
    config = Config().from_disk(REPO_ROOT / "configs" / config, interpolate=False)
    return dict(config["components"]["ner"]["model"]["tok2vec"]["elmo"])


def test_the_listener_block_is_the_shipped_ner_listener():
    block = re.search(r"```ini\n(\[components\.ner\.model\.tok2vec\.elmo\]\n.*?)```", README, re.S).group(1)
    block = re.sub(r"\s+#.*", "", block)  # the README explains each line in a comment
    parents = "".join(f"[{name}]\n" for name in ("components", "components.ner", "components.ner.model", "components.ner.model.tok2vec"))
    shown = dict(Config().from_str(parents + block, interpolate=False)["components"]["ner"]["model"]["tok2vec"]["elmo"])
    assert shown == shipped_listener()


def test_the_inspect_sample_shows_the_shipped_layer_norm():
    sample = re.search(r"```\nner \(listens to 'elmo'.*?```", README, re.S).group(0)
    assert f"layer_norm  {str(shipped_listener()['layer_norm']).lower()}" in sample


def test_vocab_json_only_with_a_softmax(tmp_path):
    torch.manual_seed(0)
    BiLM(TINY_CONFIG).to_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5")
    BiLM.from_allennlp(tmp_path / "options.json", tmp_path / "weights.hdf5").to_disk(tmp_path / "native")
    assert sorted(p.name for p in (tmp_path / "native").iterdir()) == ["config.json", "weights.hdf5"]
    assert "config.json, weights.hdf5, vocab.json" not in README
    assert "only a biLM pretrained by `spacy-elmo\npretrain` has one" in README


def test_init_config_equality_is_claimed_for_parsed_configs_only():
    assert "the output equals the shipped config (a test" not in README
    assert "equals the shipped config once both are\nparsed" in README


@pytest.mark.parametrize("claim", [
    "its tokens are its whitespace-separated\nwords",  # embed's text lines
    "PyTorch's own index of CPU-only wheels when that index answers",  # make install
])
def test_claims_are_made(claim):
    assert claim in README
