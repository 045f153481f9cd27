"""Thinc glue between spaCy and the biLM: Docs in, layers or mixed features out.

- :mod:`.doc_layers`: ``spacy_elmo.BiLM.v1``, Docs to every biLM layer per token (sentences from
  :mod:`.doc_sentences`), holding the PyTorch module through :mod:`.pytorch_wrapper`;
- :mod:`.listener`: ``spacy_elmo.ElmoListener.v1``, a component's view of the ``elmo`` component's
  layers, mixed by :mod:`.scalar_mix` (``spacy_elmo.scalar_mix.v1``);
- :mod:`.standalone`: ``spacy_elmo.ElmoStandalone.v1``, a component's own biLM copy (what
  ``nlp.replace_listeners`` builds);
- :mod:`.tok2vec`: ``spacy_elmo.ElmoTok2Vec.v1``, ELMo features next to a task's own embedding;
- :mod:`.tok2vec_objectives`: the ``spacy pretrain`` objectives ``spacy_elmo.PretrainCharacters.v1``
  and ``spacy_elmo.PretrainElmo.v1`` (its targets: :mod:`.elmo_targets`; its losses:
  :mod:`.vector_losses`);
- :mod:`.feature_cache`: a frozen biLM's layers per Doc, kept for the next epoch.
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
