"""From sentences to the biLM's layers: no spaCy or Thinc imports here.

Every caller (the ``elmo`` component's Thinc layer, :func:`embed_layers`, :func:`embed`,
``spacy-elmo embed``) goes through :class:`Embedder`, so batching, windows, the word cache and
precision are decided once:

- :mod:`.embedder`: :class:`Embedder` (sentences -> layers), :func:`embed_layers`, :func:`embed`;
- :mod:`.plan`: which windows go into which batch (:mod:`.batching` sorts by length,
  :mod:`.windows` cuts long sentences and joins their layers);
- :mod:`.batch_forward`: one batch through the biLM's insides, a tensor on the model's device;
- :mod:`.word_cache`: layer-0 vectors kept per word string, owned by an embedder;
- :mod:`.mix`: the one layer mix ``gamma * sum_j w_j h_j`` (numpy or cupy).

Writing a whole corpus into an HDF5 file (``spacy-elmo embed``) is :mod:`spacy_elmo.vector_file`'s job.
"""

from .embedder import Embedder, embed, embed_layers
from .mix import mix_layers

__all__ = ["Embedder", "embed", "embed_layers", "mix_layers"]
