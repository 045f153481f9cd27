"""Thinc glue between spaCy and the biLM, one registered layer or architecture per module:
``spacy_elmo.BiLM.v1`` (:mod:`.doc_layers`), ``ElmoListener.v1`` (:mod:`.listener`) and its
``scalar_mix.v1``, ``ElmoStandalone.v1`` (:mod:`.standalone`), ``ElmoTok2Vec.v1``
(:mod:`.tok2vec`), and the ``spacy pretrain`` objectives (:mod:`.tok2vec_objectives`).
"""

from .doc_layers import build_bilm_model, get_bilm, set_bilm
from .listener import ElmoLayersListener, build_elmo_listener
from .scalar_mix import mix_softmax_weights, scalar_mix
from .standalone import build_elmo_standalone, elmo_layers_node
from .tok2vec import build_elmo_tok2vec
from .tok2vec_objectives import create_pretrain_characters, create_pretrain_elmo, token_rows

__all__ = [
    "ElmoLayersListener",
    "build_bilm_model",
    "build_elmo_listener",
    "build_elmo_standalone",
    "build_elmo_tok2vec",
    "create_pretrain_characters",
    "create_pretrain_elmo",
    "elmo_layers_node",
    "get_bilm",
    "mix_softmax_weights",
    "scalar_mix",
    "set_bilm",
    "token_rows",
]
