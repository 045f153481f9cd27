"""``nlp.resume_training()`` (spaCy's fine-tuning entry) deep-copies each component's model:
a listener must copy without its upstream component (whose locks cannot be copied), and the
pipeline must go on training afterwards."""

import copy

import numpy
import spacy
from spacy.training import Example

from ..conftest import TINY_TAGGER_MODEL

TEXT = "the river bank"


def tagger_pipeline(weights):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    nlp.add_pipe("tagger", config={"model": copy.deepcopy(TINY_TAGGER_MODEL)})
    examples = [Example.from_dict(nlp.make_doc(TEXT), {"tags": ["D", "N", "N"]})]
    optimizer = nlp.initialize(lambda: examples)
    nlp.update(examples, sgd=optimizer)
    return nlp, examples


def tag_scores(nlp, model=None):
    doc = nlp(TEXT)
    return (model or nlp.get_pipe("tagger").model).predict([doc])[0]


def test_resume_training_then_update(tiny_weights):
    nlp, examples = tagger_pipeline(tiny_weights)
    before = tag_scores(nlp)
    optimizer = nlp.resume_training()
    rehearsal = nlp.get_pipe("tagger")._rehearsal_model
    numpy.testing.assert_array_equal(tag_scores(nlp, rehearsal), before)
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    assert not numpy.allclose(tag_scores(nlp), before)
    # the copy is detached: training the pipeline does not change it
    numpy.testing.assert_array_equal(tag_scores(nlp, rehearsal), before)


def test_deepcopy_of_a_listening_and_of_a_standalone_model(tiny_weights):
    nlp, _ = tagger_pipeline(tiny_weights)
    expected = tag_scores(nlp)
    numpy.testing.assert_array_equal(tag_scores(nlp, copy.deepcopy(nlp.get_pipe("tagger").model)), expected)
    nlp.replace_listeners("elmo", "tagger", ["model.tok2vec.elmo"])
    numpy.testing.assert_array_equal(tag_scores(nlp, copy.deepcopy(nlp.get_pipe("tagger").model)), expected)
    nlp.resume_training()
