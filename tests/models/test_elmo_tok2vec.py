"""``spacy_elmo.ElmoTok2Vec.v1`` with either encoder, inside a real pipeline, and without ELMo."""

import pytest
import spacy
import torch
from spacy.training import Example

from spacy_elmo import BiLM
from spacy_elmo.config import TINY_CONFIG
from spacy_elmo.models import build_elmo_tok2vec

WIDTH = 16
EMBED = {
    "@architectures": "spacy.MultiHashEmbed.v2",
    "width": WIDTH,
    "attrs": ["NORM", "SHAPE"],
    "rows": [500, 50],
    "include_static_vectors": False,
}
ENCODERS = {
    "maxout": {
        "@architectures": "spacy.MaxoutWindowEncoder.v2",
        "width": WIDTH,
        "depth": 1,
        "window_size": 1,
        "maxout_pieces": 2,
    },
    "bilstm": {"@architectures": "spacy.TorchBiLSTMEncoder.v1", "width": WIDTH, "depth": 1, "dropout": 0.0},
}
TRAIN = [
    ("The bank raised rates", {"tags": ["DET", "NOUN", "VERB", "NOUN"]}),
    ("They sat by the bank", {"tags": ["PRON", "VERB", "ADP", "DET", "NOUN"]}),
]


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("bilm")
    BiLM(TINY_CONFIG).to_disk(path)
    return path


def tagger_model(encoder: str, with_elmo: bool) -> dict:
    tok2vec = {"@architectures": "spacy_elmo.ElmoTok2Vec.v1", "embed": EMBED, "encode": ENCODERS[encoder]}
    tok2vec["elmo"] = {"@architectures": "spacy_elmo.ElmoListener.v1", "upstream": "elmo"} if with_elmo else None
    return {"@architectures": "spacy.Tagger.v2", "tok2vec": tok2vec}


@pytest.mark.parametrize("encoder", ["maxout", "bilstm"])
def test_trains_inside_a_pipeline(weights, encoder):
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    tagger = nlp.add_pipe("tagger", config={"model": tagger_model(encoder, with_elmo=True)})
    examples = [Example.from_dict(nlp.make_doc(text), annotations) for text, annotations in TRAIN]
    optimizer = nlp.initialize(lambda: examples)
    assert nlp.get_pipe("elmo").listening_components == ["tagger"]
    losses = []
    for _ in range(5):
        losses.append(nlp.update(examples, sgd=optimizer)["tagger"])
    assert losses[-1] < losses[0]
    doc = nlp("They sat by the bank")
    assert len(doc) == 5 and all(t.tag_ for t in doc)
    assert tagger.model.get_ref("tok2vec").get_dim("nO") == WIDTH


def test_without_elmo_is_a_plain_tok2vec():
    model = build_elmo_tok2vec(
        embed=spacy.registry.resolve({"x": EMBED})["x"],
        encode=spacy.registry.resolve({"x": ENCODERS["maxout"]})["x"],
        elmo=None,
    )
    nlp = spacy.blank("en")
    docs = [nlp.make_doc("a b c")]
    model.initialize(X=docs)
    assert model.predict(docs)[0].shape == (3, WIDTH)


def test_elmo_at_the_encoder_output_has_its_own_listener_and_mix(weights):
    """The paper's second place for ELMo: a second mix joins the encoder's output."""
    nlp = spacy.blank("en")
    nlp.add_pipe("elmo", config={"weights": str(weights)})
    model = tagger_model("maxout", with_elmo=True)
    model["tok2vec"]["elmo_output"] = {"@architectures": "spacy_elmo.ElmoListener.v1", "upstream": "elmo"}
    tagger = nlp.add_pipe("tagger", config={"model": model})
    examples = [Example.from_dict(nlp.make_doc(text), annotations) for text, annotations in TRAIN]
    optimizer = nlp.initialize(lambda: examples)
    assert len(nlp.get_pipe("elmo").listener_map["tagger"]) == 2
    tok2vec = tagger.model.get_ref("tok2vec")
    assert tok2vec.get_dim("nO") == WIDTH
    output_mix = tok2vec.get_ref("elmo_output").layers[1]
    before = output_mix.get_param("a").copy()
    for _ in range(3):
        nlp.update(examples, sgd=optimizer)
    # the output mix is trained (it gets a gradient), apart from the input mix
    assert not (output_mix.get_param("a") == before).all()
    assert tok2vec.get_ref("elmo").layers[1] is not output_mix
    # prediction: removing the output mix's contribution changes the vectors (it is used)
    docs = [nlp("They sat by the bank")]
    full = tok2vec.predict(docs)[0].copy()
    output_mix.set_param("gamma", output_mix.get_param("gamma") * 0)
    assert abs(tok2vec.predict(docs)[0] - full).max() > 1e-4
