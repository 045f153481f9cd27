"""``spacy_elmo.PretrainElmo.v1`` on a small tok2vec built here: the loss falls for every target
and loss, the gradient reaches the tok2vec and never the biLM, the heads follow the target, the
biLM is read at ``initialize`` only, and bad settings fail when the config is resolved, naming
the setting. (spaCy's ``pretrain`` with the shipped configs: tests/pipeline/test_elmo_distillation.py.)"""

from __future__ import annotations

import numpy
import pytest
import spacy
import torch
from spacy.ml.models import MaxoutWindowEncoder, MultiHashEmbed, build_Tok2Vec_model
from spacy.training.pretrain import make_update
from spacy.util import registry
from thinc.api import Adam, fix_random_seed

import spacy_elmo.models.tok2vec_objectives as objectives_module
from spacy_elmo.models import create_pretrain_elmo

from ..conftest import random_tiny_bilm

TEXTS = [
    "The jury said the city bank raised its rates again .",
    "Mary saw an old boat near the river  bank in Atlanta today .",
    "A new letter from the court reached the house by noon .\n\nIt rained .",
]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("distil_bilm") / "bilm"
    random_tiny_bilm().to_disk(path)
    return path


@pytest.fixture(scope="module")
def nlp():
    return spacy.blank("en")


def small_tok2vec():
    embed = MultiHashEmbed(
        width=16, attrs=["NORM", "PREFIX", "SUFFIX", "SHAPE"], rows=[200] * 4, include_static_vectors=False
    )
    return build_Tok2Vec_model(embed, MaxoutWindowEncoder(width=16, depth=1, window_size=1, maxout_pieces=2))


def objective(nlp, weights, **settings):
    fix_random_seed(0)
    model = create_pretrain_elmo(weights=str(weights), hidden_size=16, **settings)(nlp.vocab, small_tok2vec())
    model.initialize(X=[nlp.make_doc("Give it a doc to infer shapes")])
    return model


def losses(model, docs, steps: int) -> list[float]:
    optimizer = Adam(0.01)
    return [make_update(model, docs, optimizer, model.attrs["loss"]) for _ in range(steps)]


@pytest.mark.parametrize("loss", ["cosine", "l2", "cosine+l2"])
@pytest.mark.parametrize("target", ["average", "layers", "mix"])
def test_loss_falls_for_every_target_and_loss(nlp, weights, target, loss):
    layer_weights = [0.0, 0.25, 0.75] if target == "mix" else None
    model = objective(nlp, weights, target=target, loss=loss, layer_weights=layer_weights)
    history = losses(model, [nlp.make_doc(text) for text in TEXTS], 12)
    assert all(numpy.isfinite(history)) and history[-1] < 0.7 * history[0]


@pytest.mark.parametrize("target, heads, width", [("average", 1, 16), ("mix", 1, 16), ("layers", 3, 48)])
def test_one_head_per_part_of_the_target(nlp, weights, target, heads, width):
    layer_weights = [1.0, 0.0, 0.0] if target == "mix" else None
    model = objective(nlp, weights, target=target, layer_weights=layer_weights)
    output = model.get_ref("output_layer")
    linear = [node for node in output.walk() if node.name == "linear"]
    assert len(linear) == heads and all(node.get_dim("nO") == 16 for node in linear)  # tiny biLM: D = 16
    assert output.get_dim("nO") == width
    docs = [nlp.make_doc(text) for text in TEXTS]
    assert model.predict(docs).shape == (sum(len(doc) for doc in docs), width)


def test_gradient_reaches_the_tok2vec_and_never_the_biLM(nlp, weights):
    model = objective(nlp, weights, target="layers", loss="cosine+l2")
    targets = model.attrs["loss"].keywords["targets"]
    bilm = targets.bilm
    before = {name: tensor.clone() for name, tensor in bilm.state_dict().items()}
    tok2vec = model.get_ref("tok2vec")
    tok2vec_before = tok2vec.to_bytes()
    losses(model, [nlp.make_doc(text) for text in TEXTS], 3)
    assert tok2vec.to_bytes() != tok2vec_before
    assert all(torch.equal(before[name], tensor) for name, tensor in bilm.state_dict().items())
    assert all(not p.requires_grad and p.grad is None for p in bilm.parameters())
    # the biLM is no node of the pretraining model: no optimizer sees it, no to_bytes writes it
    assert not any(node.name == "elmo_bilm" or node.shims for node in model.walk())


def test_the_biLM_is_read_at_initialize_not_before(nlp, weights, monkeypatch):
    reads = []
    real_load = objectives_module.load_bilm
    monkeypatch.setattr(objectives_module, "load_bilm", lambda *a, **k: reads.append(a) or real_load(*a, **k))
    create = registry.resolve({"objective": {"@architectures": "spacy_elmo.PretrainElmo.v1", "weights": "nowhere"}})
    model = create["objective"](nlp.vocab, small_tok2vec())  # nothing read: "nowhere" is never checked
    assert reads == []
    with pytest.raises(FileNotFoundError, match="PretrainElmo.v1 weights: .*nowhere"):
        model.initialize(X=[nlp.make_doc("a doc")])
    assert len(reads) == 1


def test_weights_unset_fails_when_the_objective_is_built(nlp):
    create = registry.resolve({"objective": {"@architectures": "spacy_elmo.PretrainElmo.v1", "weights": None}})
    with pytest.raises(ValueError, match="weights is not set"):
        create["objective"](nlp.vocab, small_tok2vec())


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"target": "top"}, "target must be one of"),
        ({"loss": "L2"}, "loss must be one of 'cosine', 'l2', 'cosine\\+l2', not 'L2'"),
        ({"target": "mix"}, 'target = "mix" needs layer_weights'),
        ({"hidden_size": 0}, "hidden_size \\(0\\) and maxout_pieces \\(3\\) must be at least 1"),
        ({"cache_mb": -5}, "cache_mb must be 0 or more"),
    ],
)
def test_a_bad_setting_is_one_error_naming_it(settings, message):
    block = {"@architectures": "spacy_elmo.PretrainElmo.v1", "weights": "unused", **settings}
    with pytest.raises(ValueError, match=f"spacy_elmo.PretrainElmo.v1: {message}"):
        registry.resolve({"objective": block})
