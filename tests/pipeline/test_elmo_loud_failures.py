"""Mistakes a new user makes fail at once, with one message that names the mistake and the
fix: no weights, a path that holds no biLM (or holds one elsewhere), a listener that no elmo
component feeds, mix weights that do not fit the biLM."""

import copy
import shutil
import warnings

import pytest
import spacy
from spacy.training import Example

from ..conftest import TINY_TAGGER_MODEL
from .conftest import CONFIGS, train_with_config


def test_a_wrong_path_fails_when_the_component_is_created(tmp_path):
    nlp = spacy.blank("en")
    with pytest.raises(FileNotFoundError, match=f"elmo weights: No biLM weights at {tmp_path / 'nope'}"):
        nlp.add_pipe("elmo", config={"weights": str(tmp_path / "nope")})


def test_a_wrong_path_fails_at_initialize(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo")
    nlp.config["initialize"]["components"]["elmo"] = {"weights": str(tmp_path / "nope")}
    with pytest.raises(FileNotFoundError, match="No biLM weights"):
        nlp.initialize()


def test_a_trained_pipeline_or_its_training_folder_gets_a_hint(trained_ner):
    for path, hint in [
        (trained_ner, r"is a trained spaCy pipeline.*\[components.elmo\] source = .*spacy-elmo export-allennlp"),
        (trained_ner.parent, r"is a spacy train output folder: its pipelines are .*model-best"),
    ]:
        with pytest.raises(ValueError, match=hint):
            spacy.blank("en").add_pipe("elmo", config={"weights": str(path)})


def test_a_pretraining_folder_points_to_its_model(tmp_path, tiny_weights):
    shutil.copytree(tiny_weights, tmp_path / "run" / "model-best")
    with pytest.raises(
        ValueError, match=f"is a pretraining output folder: pass the biLM it wrote, {tmp_path / 'run'}/model-best"
    ):
        spacy.blank("en").add_pipe("elmo", config={"weights": str(tmp_path / "run")})


def test_training_without_weights_stops_before_the_first_step(tmp_path, toy_corpus):
    # before: one log line, then a random 4096/512 biLM trained for minutes
    with pytest.raises(ValueError, match=r"no biLM weights: .*--paths.elmo PATH"):
        train_with_config(CONFIGS / "ner_elmo.cfg", tmp_path, toy_corpus, {"paths.elmo": None})


def tagger_after(nlp, upstream="elmo"):
    model = copy.deepcopy(TINY_TAGGER_MODEL)
    model["tok2vec"]["elmo"]["upstream"] = upstream
    nlp.add_pipe("tagger", config={"model": model})
    return nlp


def initialize(nlp):
    examples = [Example.from_dict(nlp.make_doc("the river bank"), {"tags": ["D", "N", "N"]})]
    nlp.initialize(lambda: examples)


def test_a_misspelt_upstream_names_component_upstream_and_order(tiny_weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights)})
    tagger_after(nlp, upstream="elmoo")
    with pytest.raises(
        ValueError, match=r"listener of 'tagger' has upstream = 'elmoo', but the pipeline \(elmo, tagger\)"
    ):
        initialize(nlp)


def test_elmo_after_its_listener_names_both_and_the_order(tiny_weights):
    nlp = spacy.blank("en")
    tagger_after(nlp)
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights)})
    with pytest.raises(
        ValueError, match=r"'tagger' comes before 'elmo' in the pipeline \(tagger, elmo\): add 'elmo' before"
    ):
        initialize(nlp)


def test_no_elmo_component_at_all():
    nlp = spacy.blank("en")
    tagger_after(nlp)
    with pytest.raises(ValueError, match=r"upstream = 'elmo'\) is linked to no elmo component"):
        initialize(nlp)


def test_layer_weights_are_checked_before_training(tiny_weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(tiny_weights), "layer_weights": [0.5, 0.5]})
    tagger_after(nlp)
    with pytest.raises(ValueError, match=r"'elmo' component's layer_weights has 2 values but the biLM has 3 layers"):
        initialize(nlp)
    with pytest.raises(ValueError, match="one finite number per biLM layer"):
        spacy.blank("en").add_pipe("elmo", config={"weights": str(tiny_weights), "layer_weights": []})


def test_spacy_init_config_with_elmo_warns_that_nothing_listens(tiny_weights, tmp_path):
    """``spacy init config --pipeline elmo,ner`` gives the ner spaCy's own tok2vec: warned once,
    at initialize, naming what trains without ELMo; a wired pipeline and elmo alone stay silent."""
    from spacy.cli.init_config import init_config

    config = init_config(lang="en", pipeline=["elmo", "ner"])
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    nlp.config["initialize"]["components"]["elmo"] = {"weights": str(tiny_weights)}
    examples = [Example.from_dict(nlp.make_doc("Alice works"), {"entities": ["U-PERSON", "O"]})]
    with pytest.warns(UserWarning, match="feeds no ELMo listener") as caught:
        nlp.initialize(lambda: examples)
    (warned,) = [w for w in caught if "ELMo listener" in str(w.message)]
    assert "tok2vec, ner will train without ELMo" in str(warned.message)
    assert "spacy-elmo init-config --pipeline tok2vec,ner" in str(warned.message)
    for wired in (tagger_after(elmo_pipeline(tiny_weights)), elmo_pipeline(tiny_weights)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            initialize(wired)


def elmo_pipeline(weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    return nlp
