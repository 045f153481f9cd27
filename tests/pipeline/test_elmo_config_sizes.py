"""``nlp.config`` describes the biLM actually inside, not the random-init sizes of the config.

The shipped configs say 4096/512 with 7 filters (the original ELMo); the tiny weights used
here have lstm_dim 32, projection_dim 8 and 3 filters, so every stale value shows.
"""

import inspect
import shutil

import numpy
import pytest
import spacy
from spacy.training import Example
from spacy.util import load_config, load_model_from_config
from thinc.api import Config

from spacy_elmo import BiLM
from spacy_elmo.config import ARCHITECTURE_FIELDS, TINY_CONFIG, BiLMConfig
from spacy_elmo.models import build_bilm_model
from spacy_elmo.pipeline import DEFAULT_ELMO_MODEL

from .conftest import CONFIGS, toy_docs


def tiny_sizes() -> dict:
    data = TINY_CONFIG.to_dict()
    return {key: data[key] for key in ARCHITECTURE_FIELDS}


def sizes(model_cfg) -> dict:
    return {key: model_cfg[key] for key in ARCHITECTURE_FIELDS}


def test_the_default_sizes_are_bilm_configs_alone():
    """The original ELMo's sizes are written once, as BiLMConfig's defaults: the layer's
    defaults and the component's default model are those."""
    assert set(ARCHITECTURE_FIELDS) <= set(BiLMConfig().to_dict())
    layer = inspect.signature(build_bilm_model).parameters
    assert BiLMConfig(**{key: layer[key].default for key in ARCHITECTURE_FIELDS}) == BiLMConfig()
    assert BiLMConfig.from_dict(sizes(DEFAULT_ELMO_MODEL)) == BiLMConfig()
    assert [key for key in DEFAULT_ELMO_MODEL if key in layer] == list(layer)  # every setting, in order


def ner_elmo(overrides):
    config = Config().from_disk(CONFIGS / "ner_elmo.cfg", overrides=overrides)
    return load_model_from_config(config, auto_fill=True)


def test_initialize_with_weights_writes_their_sizes(tiny_weights, tmp_path):
    nlp = ner_elmo({"paths.elmo": str(tiny_weights)})
    assert sizes(nlp.config["components"]["elmo"]["model"]) != tiny_sizes()  # the config's own
    examples = [Example(nlp.make_doc(d.text), d) for d in toy_docs(nlp, 4, seed=2)]
    nlp.initialize(lambda: examples)
    assert sizes(nlp.config["components"]["elmo"]["model"]) == tiny_sizes()
    nlp.to_disk(tmp_path)
    saved = load_config(tmp_path / "config.cfg")
    assert sizes(saved["components"]["elmo"]["model"]) == tiny_sizes()
    assert saved["components"]["elmo"]["model"]["max_tokens"] == 256  # run settings untouched


def test_weights_read_on_first_use_update_the_config(nlp_tiny):
    nlp_tiny("The bank .")
    assert sizes(nlp_tiny.config["components"]["elmo"]["model"]) == tiny_sizes()


@pytest.mark.parametrize("layout", ["spacy-elmo", "allennlp"])
def test_a_pipeline_saved_right_after_add_pipe_has_the_weights_sizes(tiny_weights, tmp_path, layout):
    weights = tiny_weights
    if layout == "allennlp":
        weights = tmp_path / "allennlp"
        weights.mkdir()
        BiLM.from_disk(tiny_weights).to_allennlp(weights / "options.json", weights / "weights.hdf5")
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    assert nlp.get_pipe("elmo").bilm is None  # the weights are still read on first use, their sizes at once
    assert sizes(nlp.config["components"]["elmo"]["model"]) == tiny_sizes()
    nlp.to_disk(tmp_path / "pipeline")
    assert sizes(load_config(tmp_path / "pipeline" / "config.cfg")["components"]["elmo"]["model"]) == tiny_sizes()


def test_replace_listeners_bilm_block_has_the_real_sizes(trained_ner):
    nlp = spacy.load(trained_ner)
    nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])
    block = nlp.config["components"]["ner"]["model"]["tok2vec"]["elmo"]["bilm"]
    assert sizes(block) == tiny_sizes()


def test_replace_listeners_with_pending_weights(tiny_weights):
    nlp = ner_elmo({"components.elmo.weights": str(tiny_weights)})
    assert nlp.get_pipe("elmo").bilm is None  # not read yet
    nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])
    assert sizes(nlp.config["components"]["ner"]["model"]["tok2vec"]["elmo"]["bilm"]) == tiny_sizes()
    assert sizes(nlp.config["components"]["elmo"]["model"]) == tiny_sizes()


def test_a_config_with_other_sizes_than_its_weights_loads(trained_ner, tmp_path):
    """A config.cfg whose sizes are the config's, not the weights' (as a hand-edited one may be):
    the saved weights decide, and the config is made to describe them."""
    old = tmp_path / "old"
    shutil.copytree(trained_ner, old)
    config = load_config(old / "config.cfg", interpolate=False)
    config["components"]["elmo"]["model"].update(lstm_dim=4096, projection_dim=512, n_highway=2)
    config.to_disk(old / "config.cfg")
    text = "Alice works at Acme in Paris ."
    expected = spacy.load(trained_ner)(text)
    nlp = spacy.load(old)
    doc = nlp(text)
    numpy.testing.assert_array_equal(doc._.elmo_layers, expected._.elmo_layers)
    assert [(e.start, e.end, e.label_) for e in doc.ents] == [(e.start, e.end, e.label_) for e in expected.ents]
    assert sizes(nlp.config["components"]["elmo"]["model"]) == tiny_sizes()  # described on load
