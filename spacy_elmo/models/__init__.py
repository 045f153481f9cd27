"""Thinc glue: the biLM, the listener with its learned layer mix, its standalone replacement,
the task tok2vec, and the characters objective of ``spacy pretrain`` for any tok2vec."""
from .doc_layers import build_bilm_model, get_bilm, set_bilm
from .listener import ElmoLayersListener, build_elmo_listener
from .tok2vec_objectives import create_pretrain_characters, token_rows
from .scalar_mix import mix_softmax_weights, scalar_mix
from .standalone import elmo_layers_node, build_elmo_standalone
from .tok2vec import build_elmo_tok2vec

__all__ = [
    "ElmoLayers",
    "ElmoLayersListener",
    "build_bilm_model",
    "build_elmo_listener",
    "build_elmo_standalone",
    "build_elmo_tok2vec",
    "create_pretrain_characters",
    "get_bilm",
    "layer_weights",
    "scalar_mix",
    "set_bilm",
    "token_rows",
]
