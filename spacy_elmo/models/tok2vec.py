"""``spacy_elmo.ElmoTok2Vec.v1``: ELMo features next to spaCy's own embeddings, then an encoder.

ELMo's recipe for a task model: concatenate the mixed ELMo vector with the task's usual
context-independent embedding, then run the task's contextual encoder. Here the embedding is
any ``List[Doc] -> List[Floats2d]`` layer (``spacy.MultiHashEmbed.v2``, with or without static
vectors), the encoder any ``List[Floats2d] -> List[Floats2d]`` one (``spacy.MaxoutWindowEncoder.v2``,
``spacy.TorchBiLSTMEncoder.v1``). A Maxout layer projects the concatenation to the encoder's
width. With ``elmo = null`` the same network runs without ELMo: the fair baseline.

The paper also adds ELMo at the output of the task's encoder for some tasks: ``elmo_output``
(a second listener with its own mix) is concatenated with the encoder's output and a second
Maxout layer projects the pair back to the encoder's width.
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
    """Token vectors from ``elmo`` (e.g. ``spacy_elmo.ElmoListener.v1``) and ``embed``, encoded;
    with ``elmo_output``, that mix joins the encoder's output too.

    The encoder must know its width (``nO``), as spaCy's encoders do.
    """
    if not encode.has_dim("nO"):
        raise ValueError("The encoder of spacy_elmo.ElmoTok2Vec.v1 must declare its width (nO)")
    width = encode.get_dim("nO")
    features = embed if elmo is None else concatenate(elmo, embed)
    project: Model[List[Floats2d], List[Floats2d]] = with_array(Maxout(width, nP=maxout_pieces, normalize=True))
    model = chain(features, project, encode)
    if elmo_output is not None:
        project_output: Model[List[Floats2d], List[Floats2d]] = with_array(
            Maxout(width, nP=maxout_pieces, normalize=True)
        )
        model = chain(concatenate(model, elmo_output), project_output)
    model.set_dim("nO", width)
    model.set_ref("embed", embed)
    model.set_ref("encode", encode)
    if elmo is not None:
        model.set_ref("elmo", elmo)
    if elmo_output is not None:
        model.set_ref("elmo_output", elmo_output)
    model.name = "elmo_tok2vec" if elmo is not None or elmo_output is not None else "tok2vec"
    return model
