"""From sentences to the biLM's layers: no spaCy or Thinc imports here.

Every caller (the ``elmo`` component, :func:`embed_layers`, :func:`embed`, ``spacy-elmo embed``)
goes through :class:`Embedder` (:mod:`.embedder`), so batching (:mod:`.plan`), windows, the word
cache (:mod:`.word_cache`) and precision are decided once; :mod:`.mix` is the one layer mix."""

from .embedder import Embedder, embed, embed_layers
from .mix import mix_layers

__all__ = ["Embedder", "embed", "embed_layers", "mix_layers"]
