"""Sentences in, every layer of the biLM out: the one way from word sequences to layers.

:class:`Embedder` is what every caller goes through (the ``elmo`` component's Thinc layer,
:func:`embed_layers`, :func:`embed` and ``spacy-elmo embed``), so a batching, windowing, caching
or precision change lands once:

- the plan (:mod:`.plan`): sentences batched by length under a budget of padded tokens, long
  ones read as windows (:mod:`.windows`), decided by the lengths and settings only;
- each batch through the biLM's insides (:mod:`.batch_forward`), on the model's device;
- layer 0 from the word cache the embedder owns (:mod:`.word_cache`), when it has one;
- the products' precision: the embedder's ``precision`` setting (:mod:`spacy_elmo.nn.precision`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy
import torch

from ..nn.bilm import BiLM
from ..nn.precision import DEFAULT_PRECISION, check_precision, running_precision
from .batch_forward import run_batch, to_host
from .mix import mix_layers
from .plan import Group, Window, plan_groups, stitch
from .word_cache import WordCacheStats, WordVectorCache

DEFAULT_MAX_TOKENS = 256  # the longest sequence the biLM reads at once (longer ones: windows)
# Padded tokens per batch: enough rows per step for efficient matmuls at the original size,
# while the activations stay small (the input-to-gate buffer is bounded separately).
DEFAULT_BATCH_TOKENS = 8192
DEFAULT_BATCH_SENTENCES = 512
DEFAULT_WORD_CACHE_WORDS = 50_000  # the component's and ``spacy-elmo embed``'s word cache

Sentences = Sequence[Sequence[str]]


class Embedder:
    """Turns sentences (lists of token strings) into ``(L+1, n_tokens, 2P)`` layers of ``bilm``.

    max_tokens: longer sentences are read as windows of this many tokens, then joined.
    batch_tokens: padded tokens per biLM batch (bounds memory; None: no bound).
    batch_sentences: sentences per biLM batch.
    word_cache_words: layer-0 vectors kept per word string (LRU; 0: no cache). Outputs agree
        with and without it within float32 rounding (docs/reliability.md); memory is at most ``word_cache_words * P`` floats.
    precision: ``"float32"`` (default), ``"bfloat16"``, ``"int8"`` or ``"float16"``: the precision
        of the biLM's products (:mod:`spacy_elmo.nn.precision`; cell state and outputs stay
        float32). Where the device cannot run it, float32 runs and one line is logged.

    Copies (``copy.deepcopy``) and pickles start with an empty word cache; a deep copy shares
    the biLM unless the biLM is copied in the same ``deepcopy`` call.
    """

    def __init__(
        self,
        bilm: BiLM,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        batch_tokens: Optional[int] = DEFAULT_BATCH_TOKENS,
        batch_sentences: int = DEFAULT_BATCH_SENTENCES,
        word_cache_words: int = 0,
        precision: str = DEFAULT_PRECISION,
    ) -> None:
        if max_tokens < 1 or batch_sentences < 1 or (batch_tokens is not None and batch_tokens < 1):
            raise ValueError(
                f"max_tokens ({max_tokens}), batch_tokens ({batch_tokens}) and batch_sentences "
                f"({batch_sentences}) must be at least 1"
            )
        if word_cache_words < 0:
            raise ValueError(f"word_cache_words must not be negative, not {word_cache_words}")
        self.precision = check_precision(precision)
        self.bilm = bilm
        self.max_tokens = int(max_tokens)
        self.batch_tokens = None if batch_tokens is None else int(batch_tokens)
        self.batch_sentences = int(batch_sentences)
        self.word_cache: Optional[WordVectorCache] = None
        if word_cache_words:
            self.word_cache = WordVectorCache(word_cache_words)
            bilm.register_derived_cache(self.word_cache)  # freed when the weights move or change

    @property
    def settings(self) -> dict[str, Any]:
        """The keyword arguments that build an embedder like this one."""
        return {
            "max_tokens": self.max_tokens,
            "batch_tokens": self.batch_tokens,
            "batch_sentences": self.batch_sentences,
            "word_cache_words": 0 if self.word_cache is None else self.word_cache.max_words,
            "precision": self.precision,
        }

    def running_precision(self) -> str:
        """The precision that runs on the model's device: :attr:`precision`, or float32 where the
        device lacks the instructions for it (logged once per process)."""
        return running_precision(self.precision, self.bilm.device)

    def plan(self, lengths: Sequence[int]) -> list[Group]:
        """The groups of sentences (and their batches of windows) for sentences of ``lengths``."""
        return plan_groups(lengths, self.max_tokens, self.batch_tokens, self.batch_sentences)

    def run(self, sentences: Sentences, batch: Sequence[Window]) -> torch.Tensor:
        """One planned batch: ``(L+1, n, 2P)`` on the model's device, the windows' tokens one
        after the other, in the model's dtype; no autograd."""
        with torch.inference_mode():
            return run_batch(
                self.bilm, [window.words(sentences) for window in batch], self.word_cache, self.running_precision()
            )

    def group_layers(self, sentences: Sentences, group: Group) -> list[numpy.ndarray]:
        """Float32 numpy layers of each of ``group.sentences``, in that order."""
        pieces: dict[int, list[numpy.ndarray]] = {index: [] for index in group.sentences}
        for batch in group.batches:
            host = to_host(self.run(sentences, batch))
            offset = 0
            for window in batch:
                # Copies, never views: from a GPU ``host`` is a reused staging buffer.
                pieces[window.sentence].append(host[:, offset : offset + len(window)].copy())
                offset += len(window)
        config = self.bilm.config
        empty = (config.n_output_layers, 0, config.output_dim)
        return [stitch(pieces[i]) if pieces[i] else numpy.zeros(empty, dtype=numpy.float32) for i in group.sentences]

    def layers(self, sentences: Sentences) -> list[numpy.ndarray]:
        """One float32 array ``(L+1, n_tokens, 2P)`` per sentence, in input order; a sentence
        with no tokens gets ``(L+1, 0, 2P)``."""
        results: list[Optional[numpy.ndarray]] = [None] * len(sentences)
        for group in self.plan([len(sentence) for sentence in sentences]):
            for index, array in zip(group.sentences, self.group_layers(sentences, group)):
                results[index] = array
        return results  # type: ignore[return-value]

    def word_cache_stats(self) -> Optional[WordCacheStats]:
        """Hit rate and counters of the word cache, or None without one."""
        return None if self.word_cache is None else self.word_cache.stats

    # A copy never copies the vectors (derived data) or the biLM (shared, unless being copied).
    def __deepcopy__(self, memo: dict) -> "Embedder":
        return Embedder(memo.get(id(self.bilm), self.bilm), **self.settings)

    def __getstate__(self) -> dict:
        return {"bilm": self.bilm, **self.settings}

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        self.__init__(state.pop("bilm"), **state)  # type: ignore[misc]


def embed_layers(bilm: BiLM, sentences: Sentences, **options: Any) -> list[numpy.ndarray]:
    """One float32 array ``(L+1, n_tokens, 2P)`` per sentence, in input order.

    ``options``: :class:`Embedder`'s (``max_tokens``, ``batch_tokens``, ``batch_sentences``,
    ``word_cache_words``, ``precision``). To embed many times, keep an :class:`Embedder` (and its cache).
    """
    return Embedder(bilm, **options).layers(sentences)


def embed(
    sentences: Sentences,
    bilm: BiLM,
    layer_weights: Optional[Sequence[float]] = None,
    gamma: float = 1.0,
    **options: Any,
) -> numpy.ndarray:
    """Mixed ELMo vectors ``(batch, max_len, dim)``, zero-padded, like TF-Hub's ELMo signature.

    ``layer_weights``/``gamma``: the mix (:func:`.mix.mix_layers`; None averages the layers);
    ``options``: :class:`Embedder`'s.
    """
    per_sentence = embed_layers(bilm, sentences, **options)
    max_len = max((len(s) for s in sentences), default=0)
    out = numpy.zeros((len(sentences), max_len, bilm.config.output_dim), dtype=numpy.float32)
    for row, layers in enumerate(per_sentence):
        out[row, : layers.shape[1]] = mix_layers(layers, layer_weights, gamma)
    return out
