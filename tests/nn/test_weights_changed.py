"""In-place weight edits: through the parameters they are seen at once; through ``.data`` or a
numpy view torch cannot see them, and ``BiLM.weights_changed()`` drops every derived state
(the derived weight tables, the word cache and, through the weights' version, the feature cache)."""

import copy

import numpy
import pytest
import torch

from spacy_elmo import Embedder, embed_layers
from spacy_elmo.nn import TINY_CONFIG, BiLM

SENTENCES = [["the", "bank", "raised", "rates"], ["they", "sat", "by", "the", "river", "bank"], ["a"]]


def random_bilm() -> BiLM:
    torch.manual_seed(3)
    model = BiLM(TINY_CONFIG)
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.5)
    return model.eval()


def fresh_outputs(model: BiLM) -> list:
    """What a model that never ran would give for ``model``'s current weights."""
    clone = BiLM(model.config)
    clone.load_state_dict({k: v.clone() for k, v in model.state_dict().items()})
    return embed_layers(clone.eval(), SENTENCES)


def edit_through_data(model: BiLM) -> None:
    for param in model.parameters():
        param.data.mul_(0.5)


def edit_through_numpy(model: BiLM) -> None:
    model.char_encoder.projection.weight.detach().numpy()[...] *= -1.0
    model.forward_lstm.layers[0].recurrent_weight.detach().numpy()[...] *= 0.5


@pytest.mark.parametrize("edit", [edit_through_data, edit_through_numpy])
@pytest.mark.parametrize("word_cache", [True, False])
def test_weights_changed_after_an_invisible_edit_gives_the_new_weights_outputs(edit, word_cache):
    model = random_bilm()
    embedder = Embedder(model, word_cache_words=1000 if word_cache else 0)
    before = embedder.layers(SENTENCES)  # fills every derived cache
    version = model.weights_version()
    edit(model)
    want = fresh_outputs(model)
    assert not all(numpy.allclose(b, w) for b, w in zip(before, want))  # the edit matters
    model.weights_changed()
    assert model.weights_version() != version
    for got, expected in zip(embedder.layers(SENTENCES), want):
        numpy.testing.assert_array_equal(got, expected)


def test_visible_in_place_edits_need_no_call():
    model = random_bilm()
    embedder = Embedder(model, word_cache_words=1000)
    embedder.layers(SENTENCES)
    with torch.no_grad():
        for param in model.parameters():
            param.mul_(0.5)
    for got, expected in zip(embedder.layers(SENTENCES), fresh_outputs(model)):
        numpy.testing.assert_array_equal(got, expected)


def test_weights_changed_empties_the_components_feature_cache(tiny_weights_dir):
    import spacy

    nlp = spacy.blank("en")
    elmo = nlp.add_pipe("elmo", config={"weights": str(tiny_weights_dir)})
    doc = nlp.make_doc("the bank raised rates")
    first = elmo.compute_layers([doc], use_cache=True)[0].copy()
    assert len(elmo.feature_cache) == 1
    edit_through_data(elmo.bilm)
    elmo.bilm.weights_changed()
    again = elmo.compute_layers([doc], use_cache=True)[0]
    assert not numpy.allclose(first, again)
    numpy.testing.assert_array_equal(again, elmo.compute_layers([doc], use_cache=False)[0])


@pytest.fixture
def tiny_weights_dir(tmp_path):
    path = tmp_path / "bilm"
    random_bilm().to_disk(path)
    return path


def test_copies_keep_working_after_weights_changed():
    model = random_bilm()
    model.weights_changed()
    clone = copy.deepcopy(model)
    for got, expected in zip(embed_layers(clone, SENTENCES), embed_layers(model, SENTENCES)):
        numpy.testing.assert_array_equal(got, expected)
