"""The textcat workflow's configs: valid, complete, differing only in the ELMo parts, and the
ELMo one trains with the sentencizer annotating the training Docs."""

import pytest
import spacy
from spacy.util import load_config

from .conftest import CONFIGS, train_with_config
from .test_elmo_configs import without_elmo


def test_the_pair_differs_only_in_elmo():
    elmo = load_config(CONFIGS / "textcat_elmo.cfg", interpolate=False)
    baseline = load_config(CONFIGS / "textcat_baseline.cfg", interpolate=False)
    assert elmo["nlp"]["pipeline"] == ["sentencizer", "elmo", "textcat"]
    assert without_elmo(elmo) == baseline


@pytest.mark.parametrize("name", ["textcat_elmo.cfg", "textcat_baseline.cfg"])
def test_fill_config_leaves_them_unchanged(name, tmp_path):
    from spacy.cli.init_config import fill_config

    fill_config(tmp_path / name, CONFIGS / name, silent=True)
    assert load_config(tmp_path / name, interpolate=False) == load_config(CONFIGS / name, interpolate=False)


def test_elmo_config_trains(tmp_path, annotated_corpus, tiny_weights):
    overrides = {"paths.elmo": str(tiny_weights), "training.max_steps": 3, "training.eval_frequency": 3}
    nlp = spacy.load(train_with_config(CONFIGS / "textcat_elmo.cfg", tmp_path, annotated_corpus, overrides))
    doc = nlp("Yesterday Bob flew to Lima . He was late .")
    assert len(list(doc.sents)) == 2 and set(doc.cats) == {"WORK", "TRAVEL", "HIRE"}
