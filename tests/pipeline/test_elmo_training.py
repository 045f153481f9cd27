"""``spacy train`` with ELMo features: the mix learns, a frozen biLM stays bit-identical."""

import numpy
import spacy
import torch

from spacy_elmo import BiLM
from spacy_elmo.pipeline.mixes import learned_mixes


def assert_bilm_equal(pipeline_bilm: BiLM, reference: BiLM) -> None:
    got, want = pipeline_bilm.state_dict(), reference.state_dict()
    assert set(got) == set(want)
    for name in want:
        assert torch.equal(got[name], want[name]), name


def test_frozen_bilm_is_bit_identical_and_mix_is_learned(trained_ner, tiny_weights):
    nlp = spacy.load(trained_ner)
    assert_bilm_equal(nlp.get_pipe("elmo").bilm, BiLM.from_disk(tiny_weights))
    (mix,) = learned_mixes(nlp)
    assert mix.component == "ner" and mix.grad_factor == 0.0
    assert not numpy.allclose(mix.weights, 1.0 / len(mix.weights), atol=1e-6)
    assert mix.gamma != 1.0
    assert nlp.get_pipe("ner").labels == ("GPE", "ORG", "PERSON")


def test_positive_grad_factor_fine_tunes_the_bilm(tmp_path, train_pipeline, tiny_weights):
    overrides = {"paths.elmo": str(tiny_weights), "components.ner.model.tok2vec.elmo.grad_factor": 1.0}
    nlp = spacy.load(train_pipeline("ner_elmo.cfg", tmp_path, overrides))
    tuned, original = nlp.get_pipe("elmo").bilm.state_dict(), BiLM.from_disk(tiny_weights).state_dict()
    changed = [name for name in original if not torch.equal(tuned[name], original[name])]
    assert changed
    assert any(name.startswith("forward_lstm") for name in changed)


def test_frozen_and_annotating_elmo(tmp_path, train_pipeline, tiny_weights):
    # A frozen component is not initialized by spacy train, so its weights come from the factory.
    overrides = {
        "components.elmo.weights": str(tiny_weights),
        "training.frozen_components": ["elmo"],
        "training.annotating_components": ["elmo"],
    }
    nlp = spacy.load(train_pipeline("ner_elmo.cfg", tmp_path, overrides))
    assert_bilm_equal(nlp.get_pipe("elmo").bilm, BiLM.from_disk(tiny_weights))
    (mix,) = learned_mixes(nlp)
    assert mix.gamma != 1.0


def test_tagger_config_trains(tmp_path, train_pipeline, tiny_weights):
    nlp = spacy.load(train_pipeline("tagger_elmo.cfg", tmp_path, {"paths.elmo": str(tiny_weights)}))
    assert set(nlp.get_pipe("tagger").labels) == {"OTHER", "PROPN", "PUNCT"}
    (mix,) = learned_mixes(nlp)
    assert mix.component == "tagger"


def test_fixed_layer_weights_are_reported_as_given(tmp_path, train_pipeline, tiny_weights):
    overrides = {
        "paths.elmo": str(tiny_weights),
        "components.ner.model.tok2vec.elmo.fixed_layer_weights": [0.0, 0.0, 1.0],
    }
    nlp = spacy.load(train_pipeline("ner_elmo.cfg", tmp_path, overrides))
    (mix,) = learned_mixes(nlp)
    assert mix.fixed and mix.weights == (0.0, 0.0, 1.0)
    assert mix.gamma != 1.0
