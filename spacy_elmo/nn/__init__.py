"""Plain PyTorch modules of the biLM: no spaCy or Thinc imports here.

:meth:`BiLM.contextualize` is the one way from char ids to layers; its steps live in:

1. :mod:`.words`: words to id rows (UTF-8 bytes or code points), and the char-CNN, highway and
   projection that make layer 0, once per distinct id row of a batch;
2. :mod:`.lstm`: the forward and backward stacks in one time loop (inference, training or the
   reference loop);
3. :mod:`.precision` and :mod:`.reduced_products`: the products' precision.

Tensors derived from the weights (converted LSTM weights, char-CNN tables) are rebuilt only
when a weight changes (:mod:`.derived_cache`). Reading and writing weight files is
:mod:`spacy_elmo.formats`' job; batching sentences is :mod:`spacy_elmo.embedding`'s.
"""

from ..config import TINY_CONFIG, BiLMConfig
from .bilm import BiLM, BiLMStates

__all__ = ["BiLM", "BiLMStates", "BiLMConfig", "TINY_CONFIG"]
