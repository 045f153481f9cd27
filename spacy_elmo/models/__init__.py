"""Thinc glue between spaCy and the biLM: Docs in, layers or mixed features out.

- :mod:`.doc_layers`: ``spacy_elmo.BiLM.v1``, the Thinc layer from Docs to every biLM layer per
  token (sentences, windows and batching as :mod:`spacy_elmo.embedding` does them), holding the
  PyTorch module through :mod:`.pytorch_wrapper`;
- :mod:`.doc_sentences`: which spans of a Doc are run as sentences;
- :mod:`.listener`: ``spacy_elmo.ElmoListener.v1``, a downstream component's view of the ``elmo``
  component's layers, followed by the learned layer mix of :mod:`.scalar_mix`
  (``spacy_elmo.scalar_mix.v1``);
- :mod:`.standalone`: ``spacy_elmo.ElmoStandalone.v1``, a component's own biLM copy in place of
  a listener (what ``nlp.replace_listeners`` builds);
- :mod:`.tok2vec`: ``spacy_elmo.ElmoTok2Vec.v1``, ELMo features next to a task's own embedding;
- :mod:`.tok2vec_objectives`: ``spacy_elmo.PretrainCharacters.v1``, the characters objective of
  ``spacy pretrain`` for any tok2vec, and ``spacy_elmo.PretrainElmo.v1``, which distils the
  biLM into a tok2vec (its targets: :mod:`.elmo_targets`; its losses: :mod:`.vector_losses`).
"""

from .doc_layers import build_bilm_model, get_bilm, set_bilm
from .listener import ElmoLayersListener, build_elmo_listener
from .scalar_mix import mix_softmax_weights, scalar_mix
from .standalone import build_elmo_standalone, elmo_layers_node
from .tok2vec import build_elmo_tok2vec
from .tok2vec_objectives import create_pretrain_characters, create_pretrain_elmo, token_rows

# The names these had before (issue 29), for code that imported them from here.
ElmoLayers = elmo_layers_node
layer_weights = mix_softmax_weights

__all__ = [
    "ElmoLayers",
    "ElmoLayersListener",
    "build_bilm_model",
    "build_elmo_listener",
    "build_elmo_standalone",
    "build_elmo_tok2vec",
    "create_pretrain_characters",
    "create_pretrain_elmo",
    "elmo_layers_node",
    "get_bilm",
    "layer_weights",
    "mix_softmax_weights",
    "scalar_mix",
    "set_bilm",
    "token_rows",
]
