"""``spacy_elmo.BiLM.v1``: Docs in, every biLM layer of every token out.

Output: one ``(L+1, n_tokens, D)`` float32 array per Doc, in the backend's array type.
The Docs are cut into sentences or windows (:mod:`.segments`), the segments are batched by
length under a padded-token budget, so memory per step is bounded whatever the Docs' lengths,
and each batch's output is written straight into the per-Doc arrays on the device.
"""
from __future__ import annotations

from typing import Callable, List, Optional, Sequence

import numpy
import torch
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model
from thinc.types import Floats3d

from ..nn.batching import length_sorted_batches
from ..nn.bilm import DEFAULT_WORD_CACHE_WORDS, BiLM
from ..nn.inference import embed_batch
from ..config import BiLMConfig
from ..nn.words.word_batch import encode_padded
from ..nn.words.word_cache import WordVectorCache
from .segments import Segment, iter_segments
from .torch_bilm import TorchBiLM, get_torch_bilm, set_torch_bilm


@registry.architectures("spacy_elmo.BiLM.v1")
def build_bilm_model(
    char_embed_dim: int = 16,
    filters: Sequence[Sequence[int]] = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)),
    n_highway: int = 2,
    activation: str = "relu",
    lstm_dim: int = 4096,
    projection_dim: int = 512,
    n_layers: int = 2,
    cell_clip: Optional[float] = 3.0,
    proj_clip: Optional[float] = 3.0,
    use_skip_connections: bool = True,
    max_tokens: int = 256,
    batch_max_tokens: int = 2048,
    word_cache_words: int = DEFAULT_WORD_CACHE_WORDS,
) -> Model[List[Doc], List[Floats3d]]:
    """The biLM as a Thinc model. The sizes (defaults: the original ELMo) only matter when no
    weights are loaded: loaded weights bring their own. The torch module is built lazily, at
    ``initialize``, so a pipeline whose weights come from disk never allocates a random one.

    max_tokens: the longest sequence the biLM reads; longer sentences (or Docs without sentence
        boundaries) are cut into windows of this many tokens.
    batch_max_tokens: the budget of padded tokens per biLM call, which bounds memory.
    word_cache_words: layer-0 vectors kept per word string (LRU) for prediction and frozen
        training on the CPU; outputs are identical with and without it (0: off). Fine-tuning
        (a listener with grad_factor > 0) and GPU ops run without it.
    """
    config = BiLMConfig(
        char_embed_dim=char_embed_dim,
        filters=tuple(tuple(f) for f in filters),
        n_highway=n_highway,
        activation=activation,
        lstm_dim=lstm_dim,
        projection_dim=projection_dim,
        n_layers=n_layers,
        cell_clip=cell_clip,
        proj_clip=proj_clip,
        use_skip_connections=use_skip_connections,
    )
    if max_tokens < 1 or batch_max_tokens < 1:
        raise ValueError(f"max_tokens ({max_tokens}) and batch_max_tokens ({batch_max_tokens}) must be > 0")
    if word_cache_words < 0:
        raise ValueError(f"word_cache_words must not be negative, not {word_cache_words}")
    return Model(
        "elmo_bilm",
        forward,
        init=init,
        layers=[TorchBiLM()],
        dims={"nL": None, "nO": None},
        attrs={
            "bilm_config": config.to_dict(),
            "max_tokens": max_tokens,
            "batch_max_tokens": batch_max_tokens,
            "word_cache_words": word_cache_words,
        },
    )


def init(model: Model, X: Optional[List[Doc]] = None, Y: Optional[object] = None) -> None:
    """Build a randomly initialised biLM of the configured size, unless one is already loaded."""
    if get_bilm(model) is None:
        set_bilm(model, BiLM(BiLMConfig.from_dict(model.attrs["bilm_config"])).eval())


def get_bilm(model: Model) -> Optional[BiLM]:
    """The torch biLM inside a ``spacy_elmo.BiLM.v1`` model (``None`` before initialization)."""
    return get_torch_bilm(model.layers[0])


def set_bilm(model: Model, bilm: BiLM) -> None:
    """Swap in ``bilm`` (e.g. loaded weights); the model's dims and config follow its sizes."""
    set_torch_bilm(model.layers[0], bilm)
    model.attrs["bilm_config"] = bilm.config.to_dict()
    model.set_dim("nL", bilm.config.n_output_layers, force=True)
    model.set_dim("nO", bilm.config.output_dim, force=True)


def forward(model: Model, docs: List[Doc], is_train: bool) -> tuple[List[Floats3d], Callable]:
    bilm = get_bilm(model)
    if bilm is None:
        raise ValueError("The biLM has no weights yet: load weights or initialize the model first")
    ops = model.ops
    torch_bilm = model.layers[0]
    n_layers, width = model.get_dim("nL"), model.get_dim("nO")
    outputs = [ops.alloc3f(n_layers, len(doc), width) for doc in docs]
    segments = list(iter_segments(docs, model.attrs["max_tokens"]))
    budget = model.attrs["batch_max_tokens"]
    lengths = [len(segment) for segment in segments]
    by_word = not is_train and ops.xp is numpy and _word_cache(model, bilm) is not None
    pending: list[tuple[list[Segment], tuple[int, ...], Callable]] = []
    for batch_indices in length_sorted_batches(lengths, max_sentences=budget, max_tokens=budget):
        batch = [segments[i] for i in batch_indices]
        if by_word:  # the word-indexed path: layer 0 from the word cache
            with torch.inference_mode():
                arrays = embed_batch(bilm, [segment.words for segment in batch])
            for segment, layers in zip(batch, arrays):
                outputs[segment.doc_index][:, _index(ops, segment)] = layers
            continue
        char_ids, seq_lengths = encode_padded([segment.words for segment in batch])
        layers, backprop_batch = torch_bilm((char_ids, seq_lengths), is_train)
        for row, segment in enumerate(batch):
            outputs[segment.doc_index][:, _index(ops, segment)] = layers[:, row, : len(segment)]
        if is_train:
            pending.append((batch, layers.shape, backprop_batch))

    def backprop(d_outputs: List[Floats3d]) -> List[Doc]:
        for batch, shape, backprop_batch in pending:
            d_layers = ops.alloc(shape, dtype="float32")
            for row, segment in enumerate(batch):
                d_layers[:, row, : len(segment)] = d_outputs[segment.doc_index][:, _index(ops, segment)]
            backprop_batch(d_layers)
        return []

    return outputs, backprop


def _word_cache(model: Model, bilm: BiLM) -> Optional[WordVectorCache]:
    """The biLM's word cache, created at the configured size on first use (None when off)."""
    size = model.attrs.get("word_cache_words", 0)
    if not size:
        return None
    if bilm.word_cache is None or bilm.word_cache.max_words != size:
        bilm.enable_word_cache(size)
    return bilm.word_cache


def _index(ops, segment: Segment):
    index = segment.index
    return index if isinstance(index, slice) else ops.asarray_i(index)
