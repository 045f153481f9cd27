"""``spacy_elmo.BiLM.v1``: Docs in, every biLM layer of every token out.

Output: one ``(L+1, n_tokens, D)`` float32 array per Doc, in the backend's array type. The
Docs are cut into sentences (:mod:`.doc_sentences`); the model's :class:`Embedder` plans the
batches (by length under a padded-token budget, long sentences as windows), so memory per step
is bounded whatever the Docs' lengths. One engine each way: prediction runs the batches through
the embedder (no autograd, layer 0 from its word cache) and writes them into the per-Doc arrays
on the device (CuPy arrays share the torch memory, no copy through the host); training runs the
same batches through the PyTorch wrapper (:mod:`.pytorch_wrapper`), whose backward pass reaches the
torch parameters.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, cast

import numpy
import torch
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, torch2xp
from thinc.types import Floats3d

from ..config import BiLMConfig
from ..embedding.batch_forward import to_host
from ..embedding.embedder import DEFAULT_MAX_TOKENS, DEFAULT_WORD_CACHE_WORDS, Embedder
from ..embedding.plan import Window
from ..nn.bilm import BiLM
from ..nn.precision import DEFAULT_PRECISION
from .doc_sentences import DocSentence, contiguous_index, doc_sentences
from .pytorch_wrapper import TorchBiLM, get_torch_bilm, set_torch_bilm


@registry.architectures("spacy_elmo.BiLM.v1")
def build_bilm_model(
    char_embed_dim: int = BiLMConfig.char_embed_dim,
    filters: Sequence[Sequence[int]] = BiLMConfig.filters,
    n_highway: int = BiLMConfig.n_highway,
    activation: str = BiLMConfig.activation,
    lstm_dim: int = BiLMConfig.lstm_dim,
    projection_dim: int = BiLMConfig.projection_dim,
    n_layers: int = BiLMConfig.n_layers,
    cell_clip: Optional[float] = BiLMConfig.cell_clip,
    proj_clip: Optional[float] = BiLMConfig.proj_clip,
    use_skip_connections: bool = BiLMConfig.use_skip_connections,
    max_tokens: int = DEFAULT_MAX_TOKENS,
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
        training; outputs are identical with and without it (0: off). Fine-tuning (a listener
        with grad_factor > 0) runs without it: its gradients flow through the char-CNN.
    """
    config = BiLMConfig(
        char_embed_dim=char_embed_dim,
        # pairs, unless the config is wrong: BiLMConfig names what is not a (width, n_filters) pair
        filters=cast(Tuple[Tuple[int, int], ...], tuple(tuple(f) for f in filters)),
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
    """Build a randomly initialised biLM of the configured size, unless one is already loaded.

    The ``elmo`` component only gets here with weights, or with ``weights = "random"``.
    """
    if get_bilm(model) is None:
        set_bilm(model, random_bilm(model))


def random_bilm(model: Model) -> BiLM:
    """A randomly initialised biLM of the sizes in ``model``'s config, in eval mode."""
    return BiLM(BiLMConfig.from_dict(model.attrs["bilm_config"])).eval()


def get_bilm(model: Model) -> Optional[BiLM]:
    """The torch biLM inside a ``spacy_elmo.BiLM.v1`` model (``None`` before initialization)."""
    return get_torch_bilm(model.layers[0])


def set_bilm(model: Model, bilm: BiLM) -> None:
    """Swap in ``bilm`` (e.g. loaded weights); the model's dims and config follow its sizes."""
    set_torch_bilm(model.layers[0], bilm)
    model.attrs.pop("embedder", None)  # bound to the old biLM: rebuilt on the next call
    model.attrs["bilm_config"] = bilm.config.to_dict()
    model.set_dim("nL", bilm.config.n_output_layers, force=True)
    model.set_dim("nO", bilm.config.output_dim, force=True)


def set_precision(model: Model, precision: str) -> None:
    """Have prediction run the LSTMs' products in ``precision`` (see :class:`Embedder`); the
    ``elmo`` component sets it from its config, training with gradients stays float32."""
    model.attrs["precision"] = precision


def get_embedder(model: Model) -> Embedder:
    """The :class:`Embedder` of the model's biLM with the model's settings, built on first use
    and again when the biLM or a setting changes. It lives in ``model.attrs``: copies of the
    model (``Model.copy``, ``copy.deepcopy``) get one with an empty word cache, and
    ``to_bytes`` leaves it out (it is no data, and msgpack cannot hold it)."""
    bilm = get_bilm(model)
    if bilm is None:
        raise ValueError("The biLM has no weights yet: load weights or initialize the model first")
    budget = model.attrs["batch_max_tokens"]
    settings = {
        "max_tokens": model.attrs["max_tokens"],
        "batch_tokens": budget,
        "batch_sentences": budget,  # the budget alone bounds a batch
        "word_cache_words": model.attrs.get("word_cache_words", 0),
        "precision": model.attrs.get("precision", DEFAULT_PRECISION),
    }
    embedder = model.attrs.get("embedder")
    if not isinstance(embedder, Embedder) or embedder.bilm is not bilm or embedder.settings != settings:
        embedder = Embedder(bilm, **settings)
        model.attrs["embedder"] = embedder
    return embedder


def forward(model: Model, docs: List[Doc], is_train: bool) -> tuple[List[Floats3d], Callable]:
    embedder = get_embedder(model)
    ops = model.ops
    n_layers, width = model.get_dim("nL"), model.get_dim("nO")
    outputs = [ops.alloc3f(n_layers, len(doc), width) for doc in docs]
    sentences = list(doc_sentences(docs))
    words = [sentence.words for sentence in sentences]
    batches = [batch for group in embedder.plan([len(w) for w in words]) for batch in group.batches]
    if not is_train:
        for batch in batches:
            layers = _as_ops_array(ops, embedder.run(words, batch))
            offset = 0
            for window in batch:
                target = _index(ops, sentences[window.sentence], window)
                outputs[sentences[window.sentence].doc_index][:, target] = layers[:, offset : offset + len(window)]
                offset += len(window)
        return outputs, _no_backprop
    torch_bilm = model.layers[0]
    pending: list[tuple[Sequence[Window], tuple[int, ...], Callable]] = []
    for batch in batches:
        layers, backprop_batch = torch_bilm([window.words(words) for window in batch], is_train)
        for row, window in enumerate(batch):
            sentence = sentences[window.sentence]
            outputs[sentence.doc_index][:, _index(ops, sentence, window)] = layers[:, row, : len(window)]
        pending.append((batch, layers.shape, backprop_batch))

    def backprop(d_outputs: List[Floats3d]) -> List[Doc]:
        for batch, shape, backprop_batch in pending:
            d_layers = ops.alloc(shape, dtype="float32")
            for row, window in enumerate(batch):
                sentence = sentences[window.sentence]
                d_layers[:, row, : len(window)] = d_outputs[sentence.doc_index][:, _index(ops, sentence, window)]
            backprop_batch(d_layers)
        return []

    return outputs, backprop


def _as_ops_array(ops: Any, layers: torch.Tensor) -> Any:
    """A batch's layers as float32 in the backend's array type: a numpy view (from a GPU, of a
    reused pinned buffer), or a CuPy array on the same GPU memory."""
    if ops.xp is numpy:
        return to_host(layers)
    return torch2xp(layers.to(torch.float32), ops=ops)


def _no_backprop(d_outputs: Any) -> Any:
    raise ValueError("spacy_elmo.BiLM.v1 ran without is_train: there is no gradient to pass back")


def _index(ops: Any, sentence: DocSentence, window: Window) -> Any:
    """The Doc positions of ``window``'s tokens, as a slice when contiguous."""
    index = contiguous_index(sentence.positions[window.start : window.end])
    return index if isinstance(index, slice) else ops.asarray_i(index)
