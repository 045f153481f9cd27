"""Every trainable spaCy component reads ELMo: trained from ``spacy-elmo init-config`` output,
seen by ``inspect``, served to ``mix_from`` and given its own biLM copy by ``replace_listeners``.
"""

import numpy
import pytest
import spacy
from typer.testing import CliRunner

from spacy_elmo.cli import app
from spacy_elmo.cli.init_config import TASK_MODELS
from spacy_elmo.pipeline.mixes import elmo_mix_nodes

from .conftest import train_with_config

COMPONENTS = [
    "parser",
    "textcat",
    "textcat_multilabel",
    "spancat",
    "morphologizer",
    "senter",
    "trainable_lemmatizer",
    "ner",
    "tagger",
]
TEXTS = ["Alice works at Acme in Paris .", "Yesterday Bob flew to Lima for Globex ."]
STEPS = {"training.max_steps": 3, "training.eval_frequency": 3}


def test_the_list_is_complete():
    assert sorted(TASK_MODELS) == sorted(COMPONENTS)


def train_from_init_config(pipeline: str, tmp_path, weights, corpus):
    config = tmp_path / "config.cfg"
    result = CliRunner().invoke(app, ["init-config", str(config), "--pipeline", pipeline, "--weights", str(weights)])
    assert result.exit_code == 0, result.output
    return train_with_config(config, tmp_path / "training", corpus, STEPS)


def annotations(nlp):
    """Everything the pipeline predicts for TEXTS, ELMo extension data aside."""
    found = []
    for doc in nlp.pipe(TEXTS):
        data = doc.to_json()
        data.pop("_", None)
        found.append(data)
    return found


def assert_same_annotations(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        cats_x, cats_y = x.get("cats", {}), y.get("cats", {})
        assert {k: v for k, v in x.items() if k != "cats"} == {k: v for k, v in y.items() if k != "cats"}
        assert cats_x.keys() == cats_y.keys()
        numpy.testing.assert_allclose(list(cats_x.values()), list(cats_y.values()), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("component", COMPONENTS)
def test_trains_from_init_config_and_copies_its_listener(component, tmp_path, tiny_weights, annotated_corpus):
    trained = train_from_init_config(component, tmp_path, tiny_weights, annotated_corpus)
    nlp = spacy.load(trained)
    assert nlp.pipe_names == ["elmo", component]
    assert nlp.get_pipe("elmo").listening_components == [component]
    before = annotations(nlp)

    shown = CliRunner().invoke(app, ["inspect", str(trained)])
    assert shown.exit_code == 0, shown.output
    assert f"{component} (listens to 'elmo', grad_factor 0)" in shown.output

    nlp.replace_listeners("elmo", component, ["model.tok2vec.elmo"])
    assert_same_annotations(annotations(nlp), before)
    nlp.remove_pipe("elmo")
    assert_same_annotations(annotations(nlp), before)


@pytest.fixture(scope="module")
def all_nine(tmp_path_factory, tiny_weights, annotated_corpus):
    """One pipeline with every component at once, trained from init-config output."""
    path = tmp_path_factory.mktemp("all_nine")
    return train_from_init_config(",".join(COMPONENTS), path, tiny_weights, annotated_corpus)


def test_any_mix_trains_together(all_nine):
    nlp = spacy.load(all_nine)
    assert nlp.pipe_names == ["elmo", *COMPONENTS]
    assert nlp.get_pipe("elmo").listening_components == COMPONENTS
    doc = nlp(TEXTS[0])
    assert set(doc.cats) == {"WORK", "TRAVEL", "HIRE"}
    assert all(token.tag_ and token.pos_ and token.lemma_ and token.dep_ for token in doc)


@pytest.mark.parametrize("component", COMPONENTS)
def test_mix_from_each_component(all_nine, component):
    nlp = spacy.load(all_nine, config={"components": {"elmo": {"mix_from": component}}})
    doc = nlp(TEXTS[0])
    ((_, mix),) = elmo_mix_nodes(nlp.get_pipe(component).model)
    (expected,) = mix.predict([doc._.elmo_layers])
    numpy.testing.assert_array_equal(doc._.elmo_vectors, expected)
