"""Thinc glue between spaCy and the biLM: Docs to layers, the features a component reads, the
``spacy pretrain`` objectives."""

from .doc_layers import build_bilm_model, get_bilm, set_bilm
from .listener import (
    ElmoLayersListener,
    build_elmo_listener,
    build_elmo_standalone,
    build_elmo_tok2vec,
    elmo_layers_node,
)
from .scalar_mix import mix_softmax_weights, scalar_mix
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
