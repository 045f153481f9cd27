"""Plain PyTorch modules of the biLM: no spaCy or Thinc imports here.

Where each step of :meth:`BiLM.forward` (via ``BiLM.contextualize``) lives:

1. words -> id rows ``(batch, time, ids_per_token)`` framed by BOS/EOS in the model's encoding
   (``BiLM.encoding``: UTF-8 bytes, :mod:`.words.char_ids`, or code points, :mod:`.words.code_points`),
   each distinct word once (:mod:`.words.word_batch`); callers do this step;
2. layer 0, char ids -> one vector per token: the char-CNN, highway and projection of
   :mod:`.words.char_cnn` (:mod:`.words.char_cnn_tables` without autograd,
   :mod:`.words.char_cnn_training` with autograd on a CPU, :mod:`.words.highway`);
3. the backward direction's rows reversed and both directions stacked: :mod:`.bilm`;
4. the forward and backward LSTM stacks in one time loop: :mod:`.lstm` (its ``dispatch`` module
   picks the loop: in place, CUDA graphs, autograd-safe fused, the reference, or, for the
   inference ``precision`` setting of :mod:`.precision`, the bfloat16/int8 products of
   :mod:`.reduced_products`);
5. rows put back in input order, BOS/EOS dropped, layer 0 doubled: :mod:`.bilm`.

Parameters and forward only: :mod:`spacy_elmo.embedding` runs the same steps per batch of
sentences without autograd (batching by length, windows, a word cache of layer 0). Tensors
derived from the weights (stacked LSTM weights, char-CNN tables, CUDA graphs) are rebuilt only
when a weight changes (:mod:`.derived_cache`).
:mod:`spacy_elmo.config` holds the sizes; reading and writing weight files is
:mod:`spacy_elmo.formats`' job (plain configs and arrays), which ``BiLM``'s file methods call.
"""

from ..config import TINY_CONFIG, BiLMConfig
from .bilm import BiLM, BiLMStates

__all__ = ["BiLM", "BiLMStates", "BiLMConfig", "TINY_CONFIG"]
