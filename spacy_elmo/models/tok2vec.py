"""``spacy_elmo.ElmoTok2Vec.v1``: ELMo's recipe for a task model. The mixed ELMo vector joins the
task's own embedding (any ``List[Doc] -> List[Floats2d]`` layer, e.g. ``spacy.MultiHashEmbed.v2``),
a Maxout layer projects the pair to the encoder's width, then the task's encoder runs. With
``elmo = null`` the same network runs without ELMo: the fair baseline. ``elmo_output`` (a second
listener, with its own mix) joins the encoder's output too, as the paper does for some tasks.
"""

from __future__ import annotations

from typing import List, Optional

from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Maxout, Model, chain, concatenate, with_array
from thinc.types import Floats2d


@registry.architectures("spacy_elmo.ElmoTok2Vec.v1")
def build_elmo_tok2vec(
    embed: Model[List[Doc], List[Floats2d]],
    encode: Model[List[Floats2d], List[Floats2d]],
    elmo: Optional[Model[List[Doc], List[Floats2d]]] = None,
    maxout_pieces: int = 3,
    elmo_output: Optional[Model[List[Doc], List[Floats2d]]] = None,
) -> Model[List[Doc], List[Floats2d]]:
    """Token vectors from ``elmo`` and ``embed``, encoded by ``encode`` (which must declare its
    width ``nO``, as spaCy's encoders do)."""
    if not encode.has_dim("nO"):
        raise ValueError("The encoder of spacy_elmo.ElmoTok2Vec.v1 must declare its width (nO)")
    width = encode.get_dim("nO")
    features = embed if elmo is None else concatenate(elmo, embed)

    def project() -> Model[List[Floats2d], List[Floats2d]]:
        return with_array(Maxout(width, nP=maxout_pieces, normalize=True))

    model = chain(features, project(), encode)
    if elmo_output is not None:
        model = chain(concatenate(model, elmo_output), project())
    model.set_dim("nO", width)
    for name, ref in (("embed", embed), ("encode", encode), ("elmo", elmo), ("elmo_output", elmo_output)):
        if ref is not None:
            model.set_ref(name, ref)
    model.name = "elmo_tok2vec" if elmo is not None or elmo_output is not None else "tok2vec"
    return model
