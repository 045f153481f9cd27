"""``nlp.replace_listeners("elmo", "ner", ["model.tok2vec.elmo"])``: ner gets its own biLM copy.

It must predict exactly what it predicted as a listener, need no ``elmo`` component any more,
save, load and source like any component, and a frozen copy must stay frozen in training.
"""

import numpy
import pytest
import spacy
import torch
from spacy.training import Example
from spacy.util import load_config, load_model_from_config
from thinc.api import Config

from spacy_elmo import BiLM
from spacy_elmo.models import ElmoLayersListener, get_bilm
from spacy_elmo.models.listener import STANDALONE_ARCHITECTURE

from .conftest import CONFIGS, toy_docs

TEXTS = ["Alice works at Acme in Paris .", "Yesterday Bob flew to Lima for Globex .", "", "Eve met Farid in Osaka ."]
LISTENER_PATH = "model.tok2vec.elmo"


def entities(nlp):
    return [[(e.start, e.end, e.label_) for e in nlp(text).ents] for text in TEXTS]


def ner_features(nlp):
    """The ner's tok2vec output on the TEXTS: compared exactly, it shows more than entities."""
    docs = list(nlp.pipe(TEXTS))
    return nlp.get_pipe("ner").model.get_ref("tok2vec").predict(docs)


def assert_same_features(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        numpy.testing.assert_array_equal(x, y)


def bilm_copy(nlp):
    """The ner's own biLM (the BiLM.v1 model inside its elmo_layers_node)."""
    nodes = [node for node in nlp.get_pipe("ner").model.walk() if node.name == "elmo_layers"]
    assert len(nodes) == 1
    return nodes[0].layers[0]


def state(bilm):
    return {name: tensor.detach().clone() for name, tensor in bilm.state_dict().items()}


def assert_same_state(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert torch.equal(a[name], b[name]), name


@pytest.fixture
def replaced(trained_ner):
    """The trained pipeline with its ner's listener replaced, and what it predicted before."""
    nlp = spacy.load(trained_ner)
    before = (entities(nlp), ner_features(nlp))
    nlp.replace_listeners("elmo", "ner", [LISTENER_PATH])
    return nlp, before


def test_predictions_unchanged_and_listener_gone(replaced):
    nlp, (ents, features) = replaced
    assert any(ents), "the trained ner should find some entities for this test to mean much"
    assert entities(nlp) == ents
    assert_same_features(ner_features(nlp), features)
    elmo = nlp.get_pipe("elmo")
    assert "ner" not in elmo.listener_map
    model = nlp.get_pipe("ner").model
    assert not any(isinstance(node, ElmoLayersListener) for node in model.walk())
    assert [node.name for node in model.walk()].count("elmo_layers") == 1


def test_copy_is_a_separate_module_with_the_same_weights(replaced):
    nlp, _ = replaced
    elmo = nlp.get_pipe("elmo")
    copy = bilm_copy(nlp)
    original, own = elmo.bilm, get_bilm(copy)
    assert own is not original
    assert_same_state(state(own), state(original))
    for a, b in zip(own.parameters(), original.parameters()):
        assert a.data_ptr() != b.data_ptr()
    assert copy.layers[0].shims[0].id != elmo.model.layers[0].shims[0].id  # own optimizer state
    assert "replace_listener" not in copy.attrs and "replace_listener" in elmo.model.attrs


def test_config_has_the_standalone_block(replaced):
    nlp, _ = replaced
    block = nlp.config["components"]["ner"]["model"]["tok2vec"]["elmo"]
    assert block["@architectures"] == STANDALONE_ARCHITECTURE
    assert block["bilm"] == nlp.config["components"]["elmo"]["model"]
    assert "upstream" not in block
    listener = Config().from_disk(CONFIGS / "ner_elmo.cfg")["components"]["ner"]["model"]["tok2vec"]["elmo"]
    assert (block["layer_norm"], block["layer_dropout"], block["grad_factor"]) == (
        listener["layer_norm"],
        listener["layer_dropout"],
        listener["grad_factor"],
    )
    assert (block["mix_dropout"], block["weights_l2"]) == (listener["mix_dropout"], listener["weights_l2"])


def test_ner_works_without_the_elmo_component(replaced):
    nlp, (ents, features) = replaced
    nlp.remove_pipe("elmo")
    assert nlp.pipe_names == ["ner"]
    assert entities(nlp) == ents
    assert_same_features(ner_features(nlp), features)


@pytest.mark.parametrize("keep_elmo", [True, False])
def test_save_and_load(replaced, tmp_path, no_pickle, keep_elmo):
    nlp, (ents, features) = replaced
    if not keep_elmo:
        nlp.remove_pipe("elmo")
    nlp.to_disk(tmp_path)
    saved = load_config(tmp_path / "config.cfg")
    assert saved["components"]["ner"]["model"]["tok2vec"]["elmo"]["@architectures"] == STANDALONE_ARCHITECTURE
    loaded = spacy.load(tmp_path)
    assert loaded.pipe_names == (["elmo", "ner"] if keep_elmo else ["ner"])
    assert entities(loaded) == ents
    assert_same_features(ner_features(loaded), features)
    assert_same_state(state(get_bilm(bilm_copy(loaded))), state(get_bilm(bilm_copy(nlp))))


def test_source_into_a_blank_pipeline(replaced, tmp_path):
    nlp, (ents, _) = replaced
    nlp.to_disk(tmp_path / "source")
    config = Config().from_str(
        f"""
        [nlp]
        lang = "en"
        pipeline = ["ner"]

        [components]

        [components.ner]
        source = "{tmp_path / "source"}"
        """
    )
    sourced = load_model_from_config(config, auto_fill=True)
    assert sourced.pipe_names == ["ner"]
    assert entities(sourced) == ents
    block = sourced.config["components"]["ner"]["model"]["tok2vec"]["elmo"]
    assert block["@architectures"] == STANDALONE_ARCHITECTURE


def examples_for(nlp, n=8):
    return [Example(nlp.make_doc(doc.text), doc) for doc in toy_docs(nlp, n, seed=3)]


def mix_params(nlp):
    mix = next(node for node in nlp.get_pipe("ner").model.walk() if node.name == "elmo_scalar_mix")
    return {name: mix.get_param(name).copy() for name in mix.param_names}


def test_training_leaves_a_frozen_copy_unchanged(replaced):
    nlp, _ = replaced
    nlp.remove_pipe("elmo")
    frozen = state(get_bilm(bilm_copy(nlp)))
    mix_before = mix_params(nlp)
    embed = next(node for node in nlp.get_pipe("ner").model.walk() if node.has_ref("embed")).get_ref("embed")
    embed_before = [node.get_param(name).copy() for node in embed.walk() for name in node.param_names]
    optimizer = nlp.create_optimizer()
    examples = examples_for(nlp)
    for _ in range(2):
        nlp.update(examples, sgd=optimizer, drop=0.0)
    assert_same_state(state(get_bilm(bilm_copy(nlp))), frozen)
    mix_after = mix_params(nlp)
    assert any(not numpy.array_equal(mix_before[name], mix_after[name]) for name in mix_before)
    embed_after = [node.get_param(name) for node in embed.walk() for name in node.param_names]
    assert any(not numpy.array_equal(a, b) for a, b in zip(embed_before, embed_after))


def ner_elmo_pipeline(overrides):
    config = Config().from_disk(CONFIGS / "ner_elmo.cfg", overrides=overrides)
    return load_model_from_config(config, auto_fill=True)


def test_fine_tuned_copy_trains_alone(tiny_weights):
    """grad_factor > 0: the ner's copy learns, the elmo component's biLM does not."""
    nlp = ner_elmo_pipeline({"paths.elmo": str(tiny_weights), "components.ner.model.tok2vec.elmo.grad_factor": 0.5})
    nlp.initialize(lambda: examples_for(nlp))
    nlp.replace_listeners("elmo", "ner", [LISTENER_PATH])
    assert nlp.config["components"]["ner"]["model"]["tok2vec"]["elmo"]["grad_factor"] == 0.5
    upstream = state(nlp.get_pipe("elmo").bilm)
    copy_before = state(get_bilm(bilm_copy(nlp)))
    optimizer = nlp.create_optimizer()
    for _ in range(2):
        nlp.update(examples_for(nlp), sgd=optimizer, drop=0.0)
    assert_same_state(state(nlp.get_pipe("elmo").bilm), upstream)
    copy_after = state(get_bilm(bilm_copy(nlp)))
    assert any(not torch.equal(copy_before[name], copy_after[name]) for name in copy_before)


def test_pending_weights_are_loaded_before_copying(tiny_weights):
    nlp = ner_elmo_pipeline({"components.elmo.weights": str(tiny_weights)})
    elmo = nlp.get_pipe("elmo")
    assert elmo.bilm is None  # weights not read yet
    nlp.replace_listeners("elmo", "ner", [LISTENER_PATH])
    expected = state(BiLM.from_disk(tiny_weights))
    assert_same_state(state(elmo.bilm), expected)
    assert_same_state(state(get_bilm(bilm_copy(nlp))), expected)
    assert get_bilm(bilm_copy(nlp)) is not elmo.bilm


def test_without_weights_the_error_says_how_to_get_them():
    nlp = ner_elmo_pipeline({})
    with pytest.raises(ValueError, match="has no biLM weights"):
        nlp.replace_listeners("elmo", "ner", [LISTENER_PATH])


@pytest.mark.parametrize(
    "paths,code",
    [(["model.tok2vec.nope"], "E886"), ([LISTENER_PATH, "model.tok2vec.embed"], "E887")],
)
def test_wrong_listener_paths_give_spacys_errors(trained_ner, paths, code):
    nlp = spacy.load(trained_ner)
    with pytest.raises(ValueError, match=code):
        nlp.replace_listeners("elmo", "ner", paths)


def test_learned_mix_is_still_reported(replaced, trained_ner):
    from spacy_elmo.pipeline.mixes import learned_mixes

    nlp, _ = replaced
    (before,) = learned_mixes(spacy.load(trained_ner))
    (after,) = learned_mixes(nlp)
    assert after.upstream is None and before.upstream == "elmo"
    assert after.weights == before.weights and after.gamma == before.gamma


def test_tok2vec_path_replaces_only_the_listener_block(trained_ner, tmp_path, no_pickle):
    """The spacy-transformers habit ``["model.tok2vec"]``: only the listener's block changes, so
    the saved config still builds the model (a whole ElmoStandalone tok2vec block would not load)."""
    nlp = spacy.load(trained_ner)
    ents, features = entities(nlp), ner_features(nlp)
    tok2vec_before = nlp.config["components"]["ner"]["model"]["tok2vec"]
    nlp.replace_listeners("elmo", "ner", ["model.tok2vec"])
    tok2vec_cfg = nlp.config["components"]["ner"]["model"]["tok2vec"]
    assert tok2vec_cfg["@architectures"] == "spacy_elmo.ElmoTok2Vec.v1"
    assert tok2vec_cfg["elmo"]["@architectures"] == STANDALONE_ARCHITECTURE
    assert {k: v for k, v in tok2vec_cfg.items() if k != "elmo"} == {
        k: v for k, v in tok2vec_before.items() if k != "elmo"
    }
    nlp.to_disk(tmp_path)
    loaded = spacy.load(tmp_path)
    assert entities(loaded) == ents
    assert_same_features(ner_features(loaded), features)


@pytest.mark.parametrize("path", ["model", "model.tok2vec.embed"])
def test_other_paths_are_refused_at_once_naming_the_listener_path(trained_ner, path):
    nlp = spacy.load(trained_ner)
    config_before = nlp.config.to_str()
    with pytest.raises(ValueError, match=r"listener of 'ner' is at 'model\.tok2vec\.elmo'"):
        nlp.replace_listeners("elmo", "ner", [path])
    assert nlp.config.to_str() == config_before  # nothing changed
    assert "ner" in nlp.get_pipe("elmo").listener_map


def test_a_copy_keeps_the_precision_it_was_made_with(trained_ner, tmp_path, monkeypatch):
    from spacy_elmo.nn import precision

    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx512_bf16", "avx512_vnni"}))
    nlp = spacy.load(trained_ner, config={"components": {"elmo": {"precision": "int8"}}})
    features = ner_features(nlp)
    nlp.replace_listeners("elmo", "ner", [LISTENER_PATH])
    assert bilm_copy(nlp).attrs["precision"] == "int8"
    assert_same_features(ner_features(nlp), features)
    nlp.to_disk(tmp_path / "replaced")
    loaded = spacy.load(tmp_path / "replaced", config={"components": {"elmo": {"precision": "float32"}}})
    assert loaded.get_pipe("elmo").precision == "float32"
    assert bilm_copy(loaded).attrs["precision"] == "int8"
    assert_same_features(ner_features(loaded), features)
